"""LLM-AggreFact's protocol (Tang et al., 2024, the MiniCheck paper) on a file in its released
layout (columns `dataset`, `doc`, `claim`, `label`, label 1 = supported; a `split` column of `dev`
and `test` where the user joined both parts): for each source dataset, a threshold tuned on its dev
rows (on its test rows where it has no dev rows, as for a file without a `split` column), the
balanced accuracy that threshold gives on its test rows, and the unweighted mean over the datasets.

The threshold is `calibrate.best_threshold`'s: the lowest of 0 and the tuning rows' distinct
scores with the highest balanced accuracy, deciding supported iff score > threshold (the project's
one rule, `display.decide`). Scores are oriented and on the benchmark's 0-1 scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from q2_metric.meta.calibrate import best_threshold, decision_report


def per_dataset(
    scores: Sequence[float], consistent: Sequence[int], groups: Sequence[str], splits: Sequence[str]
) -> dict[str, Any]:
    """One metric: per source dataset its threshold, where it was tuned, its test balanced accuracy
    and counts; and the unweighted mean of the balanced accuracies."""
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    g, sp = np.asarray(groups, object), np.asarray(splits, object)
    out: dict[str, Any] = {}
    for name in dict.fromkeys(groups):
        dev = np.flatnonzero((g == name) & (sp == "dev"))
        test = np.flatnonzero((g == name) & (sp == "test"))
        tune, tuned_on = (dev, "dev") if len(dev) else (test, "test")
        if not len(test):  # dev rows only: nothing to report on
            out[name] = {
                "threshold": None,
                "tuned_on": tuned_on,
                "dev": len(dev),
                "test": 0,
                "balanced_accuracy": None,
            }
            continue
        threshold, _ = best_threshold(s[tune].tolist(), y[tune].tolist())
        report = decision_report(s[test].tolist(), y[test].tolist(), threshold)
        out[name] = {
            "threshold": threshold,
            "tuned_on": tuned_on,
            "dev": len(dev),
            "test": len(test),
            "balanced_accuracy": report["balanced_accuracy"],
        }
    values = [r["balanced_accuracy"] for r in out.values() if r["balanced_accuracy"] is not None]
    return {"datasets": out, "mean_balanced_accuracy": sum(values) / len(values) if values else None}


def aggrefact_figures(
    scores: Mapping[str, Sequence[float]],
    consistent: Sequence[int],
    groups: Sequence[str],
    splits: Sequence[str],
) -> dict[str, Any]:
    """`per_dataset` for every metric."""
    return {m: per_dataset(v, consistent, groups, splits) for m, v in scores.items()}
