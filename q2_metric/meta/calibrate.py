"""Calibrated decisions, as pure functions, by the project's one rule (`display.decide`: a score
<= the threshold is *inconsistent*). `best_threshold` picks, among 0 and a dev set's distinct
scores, the one that maximizes the dev set's balanced accuracy (the lowest among ties), as
LLM-AggreFact tunes its thresholds;
`decision_report` gives the balanced accuracy, precision and recall that a threshold gives on
another set. `consistent[i]` is 1 for a consistent response (the positive class)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from q2_metric.display import is_consistent
from q2_metric.errors import Q2InputError


def decide_all(scores: Sequence[float], threshold: float) -> np.ndarray:
    """1 (consistent) where `display.decide` says so (score > threshold), else 0.

    >>> decide_all([0.2, 0.5, 0.7], 0.5).tolist()
    [0, 0, 1]
    """
    return np.array([int(is_consistent(s, threshold)) for s in scores], int)


def balanced_accuracies(
    scores: Sequence[float], consistent: Sequence[int], thresholds: Sequence[float]
) -> np.ndarray:
    """Balanced accuracy (mean of the consistent and inconsistent recalls) at each threshold."""
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    pos, neg = np.sort(s[y == 1]), np.sort(s[y == 0])
    t = np.asarray(thresholds, float)
    tpr = (len(pos) - np.searchsorted(pos, t, side="right")) / max(len(pos), 1)  # share of pos > t
    tnr = np.searchsorted(neg, t, side="right") / max(len(neg), 1)  # share of neg <= t
    return (tpr + tnr) / 2


def best_threshold(scores: Sequence[float], consistent: Sequence[int]) -> tuple[float, float]:
    """(threshold, its balanced accuracy): the lowest of 0 and the distinct scores with the highest
    balanced accuracy (0: everything above 0 is consistent).

    >>> best_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    (0.1, 0.75)
    """
    candidates = (
        np.unique(np.append(np.asarray(scores, float), 0.0)) if len(scores) else np.array([])
    )  # ascending
    if not len(candidates):
        raise Q2InputError("There are no scores to calibrate the threshold on.")
    ba = balanced_accuracies(scores, consistent, candidates)
    best = int(np.flatnonzero(ba == ba.max())[0])
    return float(candidates[best]), float(ba[best])


def decision_report(scores: Sequence[float], consistent: Sequence[int], threshold: float) -> dict:
    """Balanced accuracy, and precision/recall of the consistent class (and of the inconsistent
    one), with the confusion counts, at `threshold`."""
    pred, y = decide_all(scores, threshold), np.asarray(consistent, int)
    tp, fp = int(((pred == 1) & (y == 1)).sum()), int(((pred == 1) & (y == 0)).sum())
    fn, tn = int(((pred == 0) & (y == 1)).sum()), int(((pred == 0) & (y == 0)).sum())

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    recall, specificity = ratio(tp, tp + fn), ratio(tn, tn + fp)
    parts = [r for r in (recall, specificity) if r is not None]
    return {
        "threshold": threshold,
        "n": len(y),
        "balanced_accuracy": sum(parts) / len(parts) if parts else None,
        "precision": ratio(tp, tp + fp),
        "recall": recall,
        "inconsistent_precision": ratio(tn, tn + fn),
        "inconsistent_recall": specificity,
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
    }


def calibrate(
    dev_scores: Sequence[float],
    dev_consistent: Sequence[int],
    test_scores: Sequence[float],
    test_consistent: Sequence[int],
) -> dict:
    """The dev-tuned threshold and what it gives on dev and on test."""
    threshold, _ = best_threshold(dev_scores, dev_consistent)
    return {
        "threshold": threshold,
        "dev": decision_report(dev_scores, dev_consistent, threshold),
        "test": decision_report(test_scores, test_consistent, threshold),
    }
