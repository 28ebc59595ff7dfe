"""LLM-AggreFact's protocol (Tang et al., 2024, the MiniCheck paper) on a file in its released
layout (columns `dataset`, `doc`, `claim`, `label`, label 1 = supported; a `split` column of `dev`
and `test` where the user joined both parts): for each source dataset, a threshold tuned on its dev
rows (on its test rows where it has no dev rows, as for a file without a `split` column), the
balanced accuracy that threshold gives on its test rows, and the unweighted mean over the datasets.
A source dataset without both classes (in its test rows, or in the rows its threshold is tuned on)
has no balanced accuracy: it is reported as such and left out of the mean, which names it.

Beside it, each source dataset's balanced accuracy at the fixed threshold 0.5 (`FIXED_THRESHOLD`,
nothing tuned: the rule the benchmark's official numbers use) and their unweighted mean, in fields
of their own (`fixed_balanced_accuracy`, `mean_fixed_balanced_accuracy`): the two are never one
column. A source dataset whose test rows hold one class has neither.

The threshold is `calibrate.best_threshold`'s: the lowest of 0 and the tuning rows' distinct
scores with the highest balanced accuracy, deciding supported iff score > threshold (the project's
one rule, `display.decide`). Scores are oriented and on the benchmark's 0-1 scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from q2_metric.meta.calibrate import best_threshold, decision_report

FIXED_THRESHOLD = 0.5  # LLM-AggreFact's official rule: supported iff score > 0.5


def per_dataset(
    scores: Sequence[float], consistent: Sequence[int], groups: Sequence[str], splits: Sequence[str]
) -> dict[str, Any]:
    """One metric: per source dataset its threshold, where it was tuned, its test balanced accuracy
    and counts, and its test balanced accuracy at the fixed 0.5; and the unweighted mean of each.

    A source dataset whose test rows, or whose tuning rows, do not hold both classes has no balanced
    accuracy (a threshold of 0 would score one class, or one row, as perfect): its
    `balanced_accuracy` is None, `undefined` says why, and it is left out of the mean and named in
    `left_out`."""
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    g, sp = np.asarray(groups, object), np.asarray(splits, object)
    out: dict[str, Any] = {}
    for name in dict.fromkeys(groups):
        dev = np.flatnonzero((g == name) & (sp == "dev"))
        test = np.flatnonzero((g == name) & (sp == "test"))
        tune, tuned_on = (dev, "dev") if len(dev) else (test, "test")
        row: dict[str, Any] = {
            "threshold": None,
            "tuned_on": tuned_on,
            "dev": len(dev),
            "test": len(test),
            "balanced_accuracy": None,
            "undefined": None,
            "fixed_threshold": FIXED_THRESHOLD,
            "fixed_balanced_accuracy": None,
        }
        out[name] = row
        if not len(test):  # dev rows only: nothing to report on
            row["undefined"] = "no test rows"
            continue
        if _one_class(y[test], "test") is None:  # nothing tuned: defined whenever test holds both classes
            fixed = decision_report(s[test].tolist(), y[test].tolist(), FIXED_THRESHOLD)
            row["fixed_balanced_accuracy"] = fixed["balanced_accuracy"]
        why = _one_class(y[test], "test") or _one_class(y[tune], tuned_on)
        if why is not None:
            row["undefined"] = why
            continue
        threshold, _ = best_threshold(s[tune].tolist(), y[tune].tolist())
        report = decision_report(s[test].tolist(), y[test].tolist(), threshold)
        row.update(threshold=threshold, balanced_accuracy=report["balanced_accuracy"])
    values = [r["balanced_accuracy"] for r in out.values() if r["balanced_accuracy"] is not None]
    fixed_values = [
        r["fixed_balanced_accuracy"] for r in out.values() if r["fixed_balanced_accuracy"] is not None
    ]
    return {
        "datasets": out,
        "mean_balanced_accuracy": sum(values) / len(values) if values else None,
        "left_out": [name for name, r in out.items() if r["balanced_accuracy"] is None],
        "fixed_threshold": FIXED_THRESHOLD,
        "mean_fixed_balanced_accuracy": sum(fixed_values) / len(fixed_values) if fixed_values else None,
        "left_out_fixed": [name for name, r in out.items() if r["fixed_balanced_accuracy"] is None],
    }


def _one_class(labels: np.ndarray, split: str) -> str | None:
    """Why rows without both classes give no balanced accuracy, else None.

    >>> _one_class(np.array([1]), "test"), _one_class(np.array([0, 1]), "dev")
    ('its 1 test row(s) are all supported', None)
    """
    if len(set(labels.tolist())) > 1:
        return None
    kind = "supported" if labels[0] else "unsupported"
    return f"its {len(labels)} {split} row(s) are all {kind}"


def aggrefact_figures(
    scores: Mapping[str, Sequence[float]],
    consistent: Sequence[int],
    groups: Sequence[str],
    splits: Sequence[str],
) -> dict[str, Any]:
    """`per_dataset` for every metric."""
    return {m: per_dataset(v, consistent, groups, splits) for m, v in scores.items()}
