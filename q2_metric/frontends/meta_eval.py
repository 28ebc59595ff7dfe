"""`q2 meta-eval`: the paper's validation of Q² against human consistency labels.

Table 2: mean score per split. Table 3: accuracy and per-class precision/recall/F1 at a threshold
(a score >= threshold means "consistent"), ROC AUC. Table 4: system-level bootstrap over contexts
where exactly one system is inconsistent.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence


def _finite(scores: Sequence[float], labels: Sequence[int]) -> tuple[list[float], list[int]]:
    kept = [(s, y) for s, y in zip(scores, labels) if s is not None and not math.isnan(s)]
    return [s for s, _ in kept], [y for _, y in kept]


def classification_report(scores: Sequence[float], consistent: Sequence[int], threshold: float = 0.5) -> dict:
    """Accuracy and precision/recall/F1 of both classes; `consistent[i]` is 1 for consistent.

    >>> classification_report([0.9, 0.2, 0.6, 0.1], [1, 0, 0, 0])["accuracy"]
    0.75
    """
    scores, consistent = _finite(scores, consistent)
    pred = [int(s >= threshold) for s in scores]
    out = {"threshold": threshold, "n": len(scores),
           "accuracy": sum(p == y for p, y in zip(pred, consistent)) / len(scores) if scores else float("nan")}
    for name, cls in (("consistent", 1), ("inconsistent", 0)):
        tp = sum(p == cls and y == cls for p, y in zip(pred, consistent))
        fp = sum(p == cls and y != cls for p, y in zip(pred, consistent))
        fn = sum(p != cls and y == cls for p, y in zip(pred, consistent))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[name] = {"precision": precision, "recall": recall, "f1": f1}
    return out


def roc_auc(scores: Sequence[float], consistent: Sequence[int]) -> float:
    """Probability that a consistent response outscores an inconsistent one (ties count half).

    >>> roc_auc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0])
    0.875
    """
    scores, consistent = _finite(scores, consistent)
    pos = [s for s, y in zip(scores, consistent) if y == 1]
    neg = [s for s, y in zip(scores, consistent) if y == 0]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: NaN, handled by the caller
        return float(spearmanr(x, y).statistic)


@dataclass(frozen=True)
class BootstrapResult:
    mean: float
    low: float
    high: float
    repetitions: int
    shares: tuple[float, ...]
    sample_size: int


def system_bootstrap(consistent_scores: Sequence[float], inconsistent_scores: Sequence[float],
                     shares: Sequence[float] = (0.05, 0.10, 0.15, 0.20, 0.25), sample_size: int = 350,
                     repetitions: int = 1000, seed: int = 0) -> BootstrapResult:
    """Simulated systems from contexts where exactly one system is inconsistent.

    `consistent_scores[i]` and `inconsistent_scores[i]` are the metric scores of context i's
    consistent and inconsistent response. For each share p, a system samples `sample_size`
    contexts with replacement and answers round(p * size) of them with the inconsistent response;
    its metric score is the mean, its human score 1 - p. Returns the mean Spearman correlation over
    `repetitions` and its 95% percentile interval.
    """
    if len(consistent_scores) != len(inconsistent_scores) or not consistent_scores:
        raise ValueError("need one consistent and one inconsistent score per context")
    rng = random.Random(seed)
    n = len(consistent_scores)
    human = [1 - p for p in shares]
    rhos = []
    for _ in range(repetitions):
        system = []
        for p in shares:
            contexts = [rng.randrange(n) for _ in range(sample_size)]
            k = round(p * sample_size)
            picked = [inconsistent_scores[c] for c in contexts[:k]] + [consistent_scores[c] for c in contexts[k:]]
            system.append(sum(picked) / len(picked))
        rho = spearman(system, human)
        rhos.append(0.0 if math.isnan(rho) else rho)
    rhos.sort()
    return BootstrapResult(mean=sum(rhos) / len(rhos), low=rhos[int(0.025 * len(rhos))],
                           high=rhos[min(len(rhos) - 1, int(math.ceil(0.975 * len(rhos))) - 1)],
                           repetitions=repetitions, shares=tuple(shares), sample_size=sample_size)


def pr_curve_png(scores: Sequence[float], consistent: Sequence[int], path: str, label: str = "Q²") -> str:
    """Precision-recall curve of the inconsistent class (low score = inconsistent), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import precision_recall_curve

    scores, consistent = _finite(scores, consistent)
    precision, recall, _ = precision_recall_curve([1 - y for y in consistent], [-s for s in scores])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(recall, precision, label=label)
    ax.set_xlabel("recall (inconsistent)")
    ax.set_ylabel("precision (inconsistent)")
    ax.set_title("Q² precision-recall, annotated WoW responses")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def token_f1_baseline(responses: Sequence[str], knowledge: Sequence[str]) -> list[float]:
    from q2_metric.normalize import f1_score

    return [f1_score(k, r) for r, k in zip(responses, knowledge)]


def bleu_baseline(responses: Sequence[str], knowledge: Sequence[str]) -> list[float]:
    import sacrebleu

    return [sacrebleu.sentence_bleu(r, [k]).score / 100 for r, k in zip(responses, knowledge)]


SPLITS = (("dodeca", "inconsistent"), ("dodeca", "consistent"), ("memnet", "inconsistent"),
          ("memnet", "consistent"))


def _col(rows: Sequence[dict], name: str) -> list[float]:
    out = []
    for r in rows:
        v = r.get(name)
        out.append(float("nan") if v in (None, "") else float(v))
    return out


def bertscore_baseline(responses: Sequence[str], knowledge: Sequence[str]) -> list[float] | None:
    """BERTScore F1 of each response against its knowledge; None when bert-score or its model is
    unavailable (it is optional)."""
    try:
        import bert_score

        _, _, f1 = bert_score.score(list(responses), list(knowledge), lang="en", verbose=False)
    except Exception:  # noqa: BLE001 - not installed, or its model cannot be loaded offline
        return None
    return [float(x) for x in f1]


def _baselines(rows: Sequence[dict], response_col: str, nli=None, notes: list[str] | None = None
               ) -> dict[str, list[float]]:
    responses = [r[response_col] for r in rows]
    knowledge = [r["knowledge"] for r in rows]
    out = {"token_f1": token_f1_baseline(responses, knowledge), "bleu": bleu_baseline(responses, knowledge)}
    if nli is not None:
        from q2_metric.response_scores import fallback_score
        out["e2e_nli"] = [fallback_score(label) for label in nli.classify(knowledge, responses)]
    bert = bertscore_baseline(responses, knowledge)
    if bert is not None:
        out["bertscore"] = bert
    elif notes is not None and not any(n.startswith("BERTScore") for n in notes):
        notes.append("BERTScore baseline skipped: bert-score is not installed or its model is unavailable.")
    return out


def run_meta_eval(splits: dict[tuple[str, str], list[dict]], cross: list[dict] | None, *,
                  prefix: str = "", threshold: float = 0.5, seed: int = 0, repetitions: int = 1000,
                  sample_size: int = 350, nli=None, notes: list[str] | None = None,
                  pr_png: str | None = None) -> dict:
    """All tables as one JSON-ready dict. `splits` maps (system, label) to scored rows."""
    metrics = {"q2": f"{prefix}q2", "q2_no_nli": f"{prefix}q2_no_nli"}
    notes = list(notes or [])
    per_split: dict[str, dict[str, float]] = {}
    pooled: dict[str, list[float]] = {}
    labels: list[int] = []
    for (system, label), rows in splits.items():
        scores = {name: _col(rows, col) for name, col in metrics.items()}
        scores.update(_baselines(rows, "response", nli, notes))
        per_split[f"{system}/{label}"] = {m: _mean(v) for m, v in scores.items()}
        per_split[f"{system}/{label}"]["n"] = len(rows)
        for m, v in scores.items():
            pooled.setdefault(m, []).extend(v)
        labels.extend([int(label == "consistent")] * len(rows))
    table3 = {m: {**classification_report(v, labels, threshold), "roc_auc": roc_auc(v, labels)}
              for m, v in pooled.items()}
    report = {"threshold": threshold, "seed": seed, "table2_mean_per_split": per_split,
              "table3_classification": table3, "notes": notes}
    if pr_png and "q2" in pooled:
        report["pr_curve_png"] = pr_curve_png(pooled["q2"], labels, pr_png)
    if cross:
        one = [r for r in cross if int(r["dodeca_label"]) != int(r["memnet_label"])]
        per_system = {s: {**{m: _col(one, f"{s}_{col}") for m, col in metrics.items()},
                          **_baselines(one, f"{s}_response", nli, notes)} for s in ("dodeca", "memnet")}
        table4 = {}
        for m in per_system["dodeca"]:
            good, bad = [], []
            for i, r in enumerate(one):
                inc = "dodeca" if int(r["dodeca_label"]) == 1 else "memnet"
                con = "memnet" if inc == "dodeca" else "dodeca"
                g, b = per_system[con][m][i], per_system[inc][m][i]
                if not (math.isnan(g) or math.isnan(b)):
                    good.append(g)
                    bad.append(b)
            if good:
                res = system_bootstrap(good, bad, sample_size=sample_size, repetitions=repetitions, seed=seed)
                table4[m] = {"spearman_mean": res.mean, "ci95_low": res.low, "ci95_high": res.high,
                             "contexts": len(good)}
        report["table4_system_bootstrap"] = {"contexts_one_inconsistent": len(one), "sample_size": sample_size,
                                             "repetitions": repetitions,
                                             "shares": [0.05, 0.10, 0.15, 0.20, 0.25], "metrics": table4}
    return report


def _mean(values: Sequence[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else float("nan")


def render_markdown(report: dict) -> str:
    """The report as Markdown tables (paper values beside the Q² rows)."""
    from q2_metric.card_text import PAPER_ACCURACY, PAPER_SPEARMAN

    lines = ["# Q² meta-evaluation", "", "## Table 2: mean score per split", ""]
    splits = report["table2_mean_per_split"]
    metrics = [m for m in next(iter(splits.values())) if m != "n"]
    lines += ["| metric | " + " | ".join(splits) + " |", "|---" * (len(splits) + 1) + "|"]
    for m in metrics:
        lines.append(f"| {m} | " + " | ".join(f"{splits[s][m]:.3f}" for s in splits) + " |")
    lines.append("| n | " + " | ".join(str(splits[s]["n"]) for s in splits) + " |")
    lines.append("\nPaper (Q², Table 2): dodeca inconsistent 0.238, consistent 0.696; MemNet inconsistent 0.135, "
                 "consistent 0.756.")
    t = report["threshold"]
    lines += ["", f"## Table 3: classification at threshold {t}", "",
              "| metric | accuracy | ROC AUC | incons. P | incons. R | incons. F1 | cons. P | cons. R | cons. F1 |",
              "|---|---|---|---|---|---|---|---|---|"]
    for m, r in report["table3_classification"].items():
        i, c = r["inconsistent"], r["consistent"]
        lines.append(f"| {m} | {r['accuracy']:.3f} | {r['roc_auc']:.3f} | {i['precision']:.3f} | {i['recall']:.3f} | "
                     f"{i['f1']:.3f} | {c['precision']:.3f} | {c['recall']:.3f} | {c['f1']:.3f} |")
    lines.append(f"\nPaper: Q² accuracy {PAPER_ACCURACY:.1%}.")
    if "table4_system_bootstrap" in report:
        b = report["table4_system_bootstrap"]
        lines += ["", "## Table 4: system-level bootstrap", "",
                  f"{b['contexts_one_inconsistent']} contexts with exactly one inconsistent system; "
                  f"{b['sample_size']} samples with replacement; inconsistent shares {b['shares']}; "
                  f"{b['repetitions']} repetitions; seed {report['seed']}.", "",
                  "| metric | mean Spearman | 95% interval |", "|---|---|---|"]
        for m, r in b["metrics"].items():
            lines.append(f"| {m} | {r['spearman_mean']:.4f} | [{r['ci95_low']:.4f}, {r['ci95_high']:.4f}] |")
        lines.append(f"\nPaper: Q² {PAPER_SPEARMAN}.")
    if report.get("pr_curve_png"):
        lines += ["", f"![precision-recall]({report['pr_curve_png']})"]
    if report["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"
