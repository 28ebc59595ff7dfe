"""The meta-evaluation's figures say what they show: each panel's x axis names its own metric,
count axes tick at whole numbers, and a curve lying on another stays seen (its own line style and
marker, both in the legend). The figures are caught before they become PNG bytes."""

import numpy as np
import pytest

from q2_metric.meta import plots as meta_plots


@pytest.fixture
def figures(monkeypatch):
    caught = []

    def keep(fig):
        fig.canvas.draw()  # ticks are placed at drawing
        caught.append(fig)
        return b"\x89PNG"

    monkeypatch.setattr(meta_plots, "_png", keep)
    yield caught
    for fig in caught:
        meta_plots._pyplot().close(fig)


def test_benchmark_histogram_panels_name_their_metric(figures):
    """The benchmark's score figure has one panel per metric on one dataset: every panel's x axis
    said "mine score" (the dataset's name)."""
    from types import SimpleNamespace

    from q2_metric.meta.benchmark import benchmark_figures

    ds = SimpleNamespace(name="mine", consistent=[1, 0, 1, 0, 1])  # what the figures read of a dataset
    scores = {
        "q2": {"mine": np.array([0.9, 0.1, 0.8, 0.3, 0.7])},
        "bleu": {"mine": np.array([0.5, 0.2, 0.4, 0.1, 0.3])},
    }
    benchmark_figures([ds], scores)
    hist = figures[1]
    assert [ax.get_xlabel() for ax in hist.axes] == ["Q² score", "BLEU score"]


def test_count_axes_tick_at_whole_numbers(figures):
    per_set = {"a": (np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1]))}
    meta_plots.histogram_png("q2", per_set, {"a": "A"})
    [ax] = figures[0].axes
    ticks = ax.get_yticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks  # before: 0.2 apart
    assert ax.get_xlabel() == "Q² score" and ax.get_ylabel() == "responses"


def test_a_curve_on_another_stays_seen(figures):
    """Two metrics with the same scores draw the same curve: each has its own line style and
    marker, and the legend names both."""
    scores, labels = np.array([0.1, 0.4, 0.35, 0.8, 0.9, 0.2]), np.array([0, 0, 1, 1, 1, 0])
    curves = {"q2": {"a": (scores, labels)}, "q2_no_nli": {"a": (scores.copy(), labels)}}
    meta_plots.roc_curves_png(curves, {"a": "A"})
    meta_plots.pr_curves_png(curves, {"a": "A"})
    for fig in figures:
        [ax] = fig.axes
        lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("Q²")]
        assert len(lines) == 2
        assert lines[0].get_linestyle() != lines[1].get_linestyle()
        assert lines[0].get_marker() != lines[1].get_marker()
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("Q² (") for t in legend) and any(t.startswith("Q² w/o NLI") for t in legend)
