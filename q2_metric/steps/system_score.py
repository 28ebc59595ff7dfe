"""After the stages, response scores -> system score, with coverage and the no-answer share."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class SystemScore:
    """Corpus-level figures. Responses with a NaN score (empty input) are left out and counted."""

    q2: float
    q2_no_nli: float
    coverage: float  # share of scored responses with at least one valid question
    no_answer_share: float  # share of valid questions the knowledge could not answer
    num_responses: int
    num_scored: int
    num_skipped: int
    num_valid_questions: int

    def to_dict(self) -> dict:
        return asdict(self)


def _nanmean(values: Sequence[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(np.mean(kept)) if kept else float("nan")


def system_score(
    q2: Sequence[float],
    q2_no_nli: Sequence[float],
    covered: Sequence[bool],
    valid_questions: int,
    unanswered_questions: int,
) -> SystemScore:
    """Aggregate per-response scores. `covered[i]` is False for fallback or skipped responses.

    Examples:
        >>> system_score([1.0, 0.0, float("nan")], [0.5, 0.0, float("nan")], [True, False, False], 2, 1).q2
        0.5
    """
    scored = [i for i, v in enumerate(q2) if not math.isnan(v)]
    return SystemScore(
        q2=_nanmean(q2),
        q2_no_nli=_nanmean(q2_no_nli),
        coverage=sum(covered[i] for i in scored) / len(scored) if scored else float("nan"),
        no_answer_share=unanswered_questions / valid_questions if valid_questions else float("nan"),
        num_responses=len(q2),
        num_scored=len(scored),
        num_skipped=len(q2) - len(scored),
        num_valid_questions=valid_questions,
    )


def system_of(responses: Sequence) -> SystemScore:
    """The system figures of scored responses (`ResponseScore`s, from one engine call or several):
    coverage counts responses with a valid question, the no-answer share their questions."""
    valid = [t for r in responses for t in r.valid_questions]
    return system_score(
        [r.q2 for r in responses],
        [r.q2_no_nli for r in responses],
        [bool(r.valid_questions) for r in responses],
        valid_questions=len(valid),
        unanswered_questions=sum(t.unanswered for t in valid),
    )
