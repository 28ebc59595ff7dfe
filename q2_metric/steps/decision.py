"""A hallucination decision from a Q² score, by the released code's rule (`precision_recall.py`,
which made the paper's Table 3): a response is *inconsistent* iff its score <= the threshold,
*consistent* iff its score is above it.

The one rule of the whole project: `q2 score --threshold`, `compute(threshold=)`, meta-eval's
Table 3 and the benchmark's `--calibrate` all decide here."""

from __future__ import annotations

import math
from collections.abc import Sequence

from q2_metric.errors import Q2OptionError

CONSISTENT, INCONSISTENT = "consistent", "inconsistent"


def check_threshold(threshold: float) -> float:
    """The threshold as a float in [0, 1] (Q²'s range; -0 is 0), else `Q2OptionError` (also a
    `ValueError`) in one sentence.

    >>> check_threshold(-0.0), check_threshold(1)
    (0.0, 1.0)
    """
    if isinstance(threshold, bool):  # True would pass as 1
        raise Q2OptionError(f"the threshold must be a number in [0, 1], not the bool {threshold}")
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise Q2OptionError(f"the threshold must be a number in [0, 1], got {threshold!r}") from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise Q2OptionError(f"the threshold must lie in [0, 1] (Q²'s range), got {threshold}")
    return value + 0.0  # -0.0 + 0.0 is 0.0: the signature says thr:0, never thr:-0


def decide(score: float | None, threshold: float) -> str | None:
    """`inconsistent` iff score <= threshold, else `consistent`; None for an unscored response.

    >>> decide(0.51, 0.5), decide(0.5, 0.5), decide(float("nan"), 0.5)
    ('consistent', 'inconsistent', None)
    """
    if score is None or math.isnan(score):
        return None
    return CONSISTENT if score > threshold else INCONSISTENT


def decision_counts(decisions: Sequence[str | None], threshold: float) -> dict:
    """The threshold and how many responses each decision got (unscored ones in neither)."""
    return {
        "threshold": threshold,
        "num_consistent": sum(d == CONSISTENT for d in decisions),
        "num_inconsistent": sum(d == INCONSISTENT for d in decisions),
    }
