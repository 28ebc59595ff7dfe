"""The meta-evaluation's figures (matplotlib, Agg backend): precision-recall curves for detecting
inconsistent responses (the paper's figure), ROC curves, and score histograms split by label, each
with one panel per annotated set."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

# metric -> set -> (oriented scores, consistent labels); set titles in panel order
Curves = Mapping[str, Mapping[str, tuple[np.ndarray, np.ndarray]]]
# Each metric's curve gets its own line style and marker, so that one lying on another stays seen.
STYLES = (("-", "o"), ("--", "s"), ("-.", "^"), (":", "D"), ((0, (5, 1, 1, 1)), "v"), ((0, (1, 1)), "P"))


def _style(index: int, points: int) -> dict[str, Any]:
    """The line style, marker (about 8 per curve, shifted by curve so they do not coincide) and
    drawing order of the `index`-th curve: the later drawn thinner, above the earlier."""
    line, marker = STYLES[index % len(STYLES)]
    every = max(points // 8, 1)
    return dict(
        linestyle=line,
        marker=marker,
        markevery=(min(index * max(every // len(STYLES), 1), points - 1) if points else 0, every),
        markersize=5,
        markerfacecolor="none",
        linewidth=max(2.2 - 0.35 * index, 1.0),
        zorder=2 + index,
    )


def _pyplot() -> Any:  # matplotlib.pyplot
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label(metric: str) -> str:
    return {
        "q2": "Q²",
        "q2_no_nli": "Q² w/o NLI",
        "overlap": "Overlap",
        "bleu": "BLEU",
        "bertscore": "BERTScore",
        "e2e_nli": "E2E NLI",
    }.get(metric, metric)


def pr_curves_png(curves: Curves, titles: Mapping[str, str]) -> bytes:
    """Precision/recall of the *inconsistent* class (a low oriented score flags a response), one
    line per metric with its average precision, and the share of inconsistent responses as the
    chance level."""
    from sklearn.metrics import average_precision_score, precision_recall_curve

    fig, panels = _panels(titles, 4.5)
    for ax, (key, title) in panels:
        for n, (metric, scores, consistent) in enumerate(_lines(ax, curves, key)):
            flagged, target = -np.asarray(scores), 1 - np.asarray(consistent)
            precision, recall, _ = precision_recall_curve(target, flagged)
            ap = average_precision_score(target, flagged)
            ax.plot(
                recall,
                precision,
                label=f"{label(metric)} (AP {ap:.2f})",
                drawstyle="steps-post",
                **_style(n, len(recall)),
            )
        share = 1 - np.mean(next(iter(curves.values()))[key][1]) if curves else 0.5
        ax.axhline(share, color="grey", linestyle=":", label=f"chance ({share:.2f})")
        ax.set(
            xlabel="recall (inconsistent)",
            ylabel="precision (inconsistent)",
            title=title,
            xlim=(0, 1),
            ylim=(0, 1.02),
        )
        ax.legend(fontsize="small", loc="lower left")
    fig.suptitle("Detecting inconsistent responses")
    return _png(fig)


def roc_curves_png(curves: Curves, titles: Mapping[str, str]) -> bytes:
    """ROC curves with consistent as the positive class (the TRUE convention), AUC in the legend."""
    from sklearn.metrics import roc_auc_score, roc_curve

    fig, panels = _panels(titles, 4.5)
    for ax, (key, title) in panels:
        for n, (metric, scores, consistent) in enumerate(_lines(ax, curves, key)):
            fpr, tpr, _ = roc_curve(consistent, scores)
            auc = roc_auc_score(consistent, scores)
            ax.plot(fpr, tpr, label=f"{label(metric)} (AUC {auc:.3f})", **_style(n, len(fpr)))
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="chance (0.5)")
        ax.set(
            xlabel="false positive rate",
            ylabel="true positive rate (consistent)",
            title=title,
            xlim=(0, 1),
            ylim=(0, 1.02),
        )
        ax.legend(fontsize="small", loc="lower right")
    fig.suptitle("ROC, consistent = positive")
    return _png(fig)


def histogram_png(
    metric: str,
    per_set: Mapping[str, tuple[Sequence[float], Sequence[int]]],
    titles: Mapping[str, str],
    bins: int = 20,
    xlabels: Mapping[str, str] | None = None,
) -> bytes:
    """The metric's scores (its own scale) of consistent and inconsistent responses, overlaid: the
    consistent ones filled, the inconsistent ones as an outline over them (both stay seen). Each
    panel's x axis names its metric: `metric`'s by default, or `xlabels[key]` (panels that are
    metrics, one dataset). The count axis ticks at whole numbers."""
    from matplotlib.ticker import MaxNLocator

    fig, panels = _panels(titles, 3.6)
    for ax, (key, title) in panels:
        scores, consistent = (np.asarray(a) for a in per_set[key])
        edges = np.histogram_bin_edges(scores, bins=bins)
        consistent_part, inconsistent_part = scores[consistent == 1], scores[consistent == 0]
        ax.hist(
            consistent_part,
            bins=edges,
            alpha=0.45,
            color="tab:green",
            label=f"consistent (n={len(consistent_part)})",
        )
        ax.hist(
            inconsistent_part,
            bins=edges,
            histtype="step",
            linewidth=2,
            color="tab:red",
            hatch="//",
            label=f"inconsistent (n={len(inconsistent_part)})",
        )
        xlabel = (xlabels or {}).get(key) or f"{label(metric)} score"
        ax.set(xlabel=xlabel, ylabel="responses", title=title)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: whole numbers
        ax.legend(fontsize="small")
    fig.suptitle(f"{label(metric)}: scores by human label")
    return _png(fig)


def _panels(titles: Mapping[str, str], height: float) -> tuple[Any, list[tuple[Any, tuple[str, str]]]]:
    """A figure with one panel per annotated set: (figure, [(axes, (set key, title)), ...])."""
    fig, axes = _pyplot().subplots(1, len(titles), figsize=(5.5 * len(titles), height), squeeze=False)
    return fig, list(zip(axes[0], titles.items()))


def _lines(ax: Any, curves: Curves, key: str) -> Iterator[tuple[str, Any, Any]]:
    """(metric, oriented scores, consistent labels) of each metric on set `key`; none when the
    set has one label only (the panel says so)."""
    for metric, per_set in curves.items():
        scores, consistent = per_set[key]
        if _one_class(ax, consistent):
            return
        yield metric, scores, consistent


def _one_class(ax: Any, consistent: Any) -> bool:
    """A set with one label only has no curve: say so in the panel."""
    if len(set(np.asarray(consistent).tolist())) > 1:
        return False
    ax.text(0.5, 0.5, "one label only: no curve", ha="center", va="center", transform=ax.transAxes)
    return True


def histogram_name(metric: str) -> str:
    return "hist_" + re.sub(r"[^A-Za-z0-9_-]", "_", metric) + ".png"


def _png(fig: Any) -> bytes:
    """The figure as PNG bytes (written with the tables, all-or-nothing, by the caller)."""
    import io

    plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()
