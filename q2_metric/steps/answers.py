"""Stage "knowledge answers", filtered questions -> answers: each valid question answered from
the knowledge."""

from __future__ import annotations

from collections.abc import Sequence

from q2_metric.components import Answer, QuestionAnswerer
from q2_metric.results import DISCARDED, Pair
from q2_metric.steps.normalize import f1_score
from q2_metric.steps.unique import unique_call


def keep_answerable(answerable: Sequence[bool]) -> list[bool]:
    """DNLI rule: when any question is answerable from the knowledge, keep only those.

    >>> keep_answerable([True, False])
    [True, False]
    >>> keep_answerable([False, False])
    [True, True]
    """
    return list(answerable) if any(answerable) else [True] * len(answerable)


def answer_from_knowledge(
    pairs: Sequence[Pair], qa: QuestionAnswerer, *, discard_unanswerable: bool = False
) -> None:
    """Stage "knowledge answers": one QA call over the distinct (valid question, knowledge) pairs;
    sets each valid trace's knowledge answer and token F1 (0 for "no answer").

    Args:
        pairs: the batch, with the question filter's statuses set.
        qa: the extractive QA backend.
        discard_unanswerable: the DNLI rule (`keep_answerable`).
    """
    valid = [(p, t) for p in pairs for t in p.result.valid_questions]
    answers: dict[tuple[str, str], Answer] = unique_call(
        [(t.question, p.knowledge) for p, t in valid],
        lambda ks: qa.answer([q for q, _ in ks], [k for _, k in ks]),
    )
    for p, t in valid:
        ans = answers[(t.question, p.knowledge)]
        t.knowledge_answer, t.knowledge_has_answer = ans.text, ans.has_answer
        t.f1 = f1_score(t.candidate, ans.text) if ans.has_answer else 0.0
    if discard_unanswerable:
        for p in pairs:
            vq = p.result.valid_questions
            for t, keep in zip(vq, keep_answerable([not t.unanswered for t in vq])):
                if not keep:
                    t.status = DISCARDED
