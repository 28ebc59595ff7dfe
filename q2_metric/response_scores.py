"""Step 7, span scores -> response score, with the end-to-end NLI fallback."""

from __future__ import annotations

from typing import Sequence

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def fallback_score(label: str, scores: tuple[float, float, float] = (1.0, 0.5, 0.0)) -> float:
    """End-to-end NLI (premise = knowledge, hypothesis = response) -> a response score.

    >>> fallback_score("neutral")
    0.5
    """
    entail, neutral, contradict = scores
    return {ENTAILMENT: entail, NEUTRAL: neutral, CONTRADICTION: contradict}[label]


def keep_answerable(has_answer: Sequence[bool]) -> list[bool]:
    """DNLI rule: when any question is answerable from the knowledge, keep only those.

    >>> keep_answerable([True, False])
    [True, False]
    >>> keep_answerable([False, False])
    [True, True]
    """
    return list(has_answer) if any(has_answer) else [True] * len(has_answer)
