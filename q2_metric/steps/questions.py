"""Stage "questions", answer candidates -> questions: ranked questions for every candidate occurrence."""

from __future__ import annotations

from collections.abc import Sequence

from q2_metric.components import QuestionGenerator
from q2_metric.results import UNUSED, Pair, QuestionTrace
from q2_metric.steps.unique import unique_call


def generate_questions(pairs: Sequence[Pair], qg: QuestionGenerator) -> None:
    """Stage "questions": one generation per distinct (candidate, response); every occurrence of a
    candidate gets its own traces (status `unused` until the question filter examines them).

    Args:
        pairs: the batch, with `candidates` set.
        qg: the question generator (one call over the distinct inputs).
    """
    keys = [(cand, p.response) for p in pairs for cand in p.result.candidates]
    generated = unique_call(keys, lambda ks: qg.generate([a for a, _ in ks], [c for _, c in ks]))
    for p in pairs:
        p.result.questions = [
            QuestionTrace(cand, q, rank, UNUSED, occurrence=j)
            for j, cand in enumerate(p.result.candidates)
            for rank, q in enumerate(generated[(cand, p.response)])
        ]
