"""Calibrated decisions, as pure functions, by the project's one rule (`display.decide`: a score
<= the threshold is *inconsistent*). `best_threshold` picks, among 0 and a dev set's distinct
scores, the one that maximizes the dev set's balanced accuracy (the lowest among ties), as
LLM-AggreFact tunes its thresholds;
`decision_report` gives the balanced accuracy, precision and recall that a threshold gives on
another set. `consistent[i]` is 1 for a consistent response (the positive class)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


# -- choosing a threshold by a stated rule (`q2 calibrate`) ----------------------------------------
RULE_NAMES = ("balanced_accuracy", "precision", "recall")


def candidate_thresholds(scores: Sequence[float]) -> np.ndarray:
    """0 and the distinct scores, ascending: every threshold that decides the scores differently."""
    if not len(scores):
        raise Q2InputError("There are no scores to calibrate the threshold on.")
    return np.unique(np.append(np.asarray(scores, float), 0.0))


def threshold_by_rule(
    scores: Sequence[float], consistent: Sequence[int], rule: str, target: float | None = None
) -> float:
    """The threshold that `rule` chooses among `candidate_thresholds` (consistent iff score > it):

    - `balanced_accuracy`: `best_threshold`'s (the highest balanced accuracy, the lowest of ties);
    - `precision`: the lowest threshold whose precision of the consistent class is at least
      `target` (the most consistent responses passed at that precision);
    - `recall`: the highest threshold whose recall of the consistent class is at least `target`
      (the fewest inconsistent responses passed at that recall).

    >>> s, y = [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]
    >>> threshold_by_rule(s, y, "precision", 1.0), threshold_by_rule(s, y, "recall", 1.0)
    (0.4, 0.1)

    Raises:
        Q2InputError: an unknown rule, a target outside (0, 1], or a target no threshold reaches
            (one sentence saying the best reachable).
    """
    if rule == "balanced_accuracy":
        return best_threshold(scores, consistent)[0]
    if rule not in RULE_NAMES:
        raise Q2InputError(f"Unknown threshold rule '{rule}': use one of {', '.join(RULE_NAMES)}.")
    if target is None or not 0 < target <= 1:
        raise Q2InputError(f"The {rule} rule needs a target in (0, 1], got {target!r}.")
    candidates = candidate_thresholds(scores)
    values = [decision_report(scores, consistent, float(t))[rule] for t in candidates]
    fits = [float(t) for t, v in zip(candidates, values) if v is not None and v >= target]
    if not fits:
        best = max((v for v in values if v is not None), default=None)
        reach = "no threshold passes a response" if best is None else f"the highest reachable is {best:.4g}"
        raise Q2InputError(f"No threshold gives a {rule} of at least {target:g} on these scores; {reach}.")
    return fits[0] if rule == "precision" else fits[-1]


# -- reliability: is a score a probability of being consistent? -------------------------------------
def reliability_table(scores: Sequence[float], consistent: Sequence[int], bins: int = 10) -> list[dict]:
    """The scores in `bins` equal-width bins of [0, 1] (the last one closed: a score of 1 is in
    it), each with its number of responses, mean score and share of consistent responses (None
    for an empty bin).

    >>> [(b["n"], b["mean_score"], b["consistent_share"]) for b in reliability_table([0.1, 0.3, 0.9], [0, 1, 1], 2)]
    [(2, 0.2, 0.5), (1, 0.9, 1.0)]
    """
    if bins < 1:
        raise Q2InputError(f"The reliability table needs at least 1 bin, got {bins}.")
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    if len(s) and (s.min() < 0 or s.max() > 1):
        raise Q2InputError("Reliability figures read scores in [0, 1].")
    which = np.minimum((s * bins).astype(int), bins - 1)
    table = []
    for b in range(bins):
        inside = which == b
        n = int(inside.sum())
        table.append(
            {
                "low": b / bins,
                "high": (b + 1) / bins,
                "n": n,
                "mean_score": float(s[inside].mean()) if n else None,
                "consistent_share": float(y[inside].mean()) if n else None,
            }
        )
    return table


def expected_calibration_error(scores: Sequence[float], consistent: Sequence[int], bins: int = 10) -> float:
    """ECE: over `reliability_table`'s bins, the share of responses in the bin times the gap
    between its mean score and its share of consistent responses.

    >>> round(expected_calibration_error([0.1, 0.3, 0.9], [0, 1, 1], 2), 6)  # 2/3*|0.2-0.5| + 1/3*|0.9-1|
    0.233333
    """
    n = len(scores)
    if not n:
        raise Q2InputError("There are no scores to measure calibration on.")
    return float(
        sum(
            b["n"] / n * abs(b["mean_score"] - b["consistent_share"])
            for b in reliability_table(scores, consistent, bins)
            if b["n"]
        )
    )


# -- figures with bootstrap intervals -------------------------------------------------------------
FIGURES = ("balanced_accuracy", "precision", "recall", "inconsistent_precision", "inconsistent_recall")


def figures_with_intervals(
    scores: Sequence[float],
    consistent: Sequence[int],
    threshold: float,
    draws: int = 1000,
    seed: int = 0,
) -> dict[str, dict[str, float | None]]:
    """Each of `FIGURES` at `threshold`, with the 2.5/97.5 percentiles (linear interpolation) of
    the figure over `draws` resamples of the responses with replacement (seeded: the same seed, the
    same interval); a resample where a figure is undefined (no response of a class) is left out
    of that figure's interval. The threshold is held fixed: the interval is the figures' spread
    on data like these, not the choice's."""
    from q2_metric.meta.stats import resample_indices

    if draws < 1:
        raise Q2InputError(f"The bootstrap needs at least 1 resample, got {draws}.")
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    whole = decision_report(s.tolist(), y.tolist(), threshold)
    pred = decide_all(s.tolist(), threshold)
    idx = resample_indices(len(s), draws, seed)
    p, t = pred[idx], y[idx]
    tp, fp = ((p == 1) & (t == 1)).sum(1), ((p == 1) & (t == 0)).sum(1)
    fn, tn = ((p == 0) & (t == 1)).sum(1), ((p == 0) & (t == 0)).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = {
            "precision": tp / (tp + fp),
            "recall": tp / (tp + fn),
            "inconsistent_precision": tn / (tn + fn),
            "inconsistent_recall": tn / (tn + fp),
        }
        boot["balanced_accuracy"] = (boot["recall"] + boot["inconsistent_recall"]) / 2
    out: dict[str, dict[str, float | None]] = {}
    for name in FIGURES:
        values = boot[name][~np.isnan(boot[name])]
        out[name] = {
            "value": whole[name],
            "low": float(np.percentile(values, 2.5)) if values.size else None,
            "high": float(np.percentile(values, 97.5)) if values.size else None,
        }
    return out


# -- the operating-point file ---------------------------------------------------------------------
def operating_point_record(
    scores: Sequence[float],
    consistent: Sequence[int],
    *,
    rule: str,
    target: float | None,
    dataset: dict[str, Any],
    scores_source: dict[str, Any],
    draws: int = 1000,
    seed: int = 0,
    bins: int = 10,
    created: str,
) -> dict[str, Any]:
    """The operating-point file's content (`q2_metric.options.operating_point` reads it): the
    threshold `rule` chooses on these labelled scores, the figures there with bootstrap intervals,
    the reliability figures, where the data and the scores came from, and the date."""
    from q2_metric.options.operating_point import FORMAT, VERSION

    threshold = threshold_by_rule(scores, consistent, rule, target)
    y = np.asarray(consistent, int)
    return {
        "format": FORMAT,
        "version": VERSION,
        "threshold": threshold,
        "decision": "consistent iff score > threshold",
        "rule": {"name": rule, **({"target": target} if rule != "balanced_accuracy" else {})},
        "dataset": {**dataset, "responses": len(y), "consistent": int(y.sum())},
        "scores": scores_source,
        "figures": figures_with_intervals(scores, consistent, threshold, draws, seed),
        "bootstrap": {"draws": draws, "seed": seed, "interval": "percentile, 95%", "threshold": "fixed"},
        "calibration": {
            "ece": expected_calibration_error(scores, consistent, bins),
            "bins": bins,
            "table": reliability_table(scores, consistent, bins),
        },
        "created": created,
    }
