"""Stage "knowledge answers", filtered questions -> answers: each valid question answered from
the knowledge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from q2_metric.components import Answer, QuestionAnswerer
from q2_metric.results import Pair, QuestionTrace
from q2_metric.steps.normalize import TokenRules, f1_score
from q2_metric.steps.unique import unique_call


class KnowledgeAnswer(NamedTuple):
    """What the stage found for one valid question (the engine records it on the trace)."""

    pair: Pair
    trace: QuestionTrace
    text: str  # the knowledge answer as decoded; "" with no answer
    has_answer: bool
    f1: float  # token F1 of the candidate and the answer; 0 for "no answer"
    kept: bool  # False: discarded by the DNLI rule (`keep_answerable`)

    @property
    def unanswered(self) -> bool:
        """The knowledge gave "no answer" or the empty answer (neither is compared)."""
        return not self.has_answer or not self.text


def keep_answerable(answerable: Sequence[bool]) -> list[bool]:
    """DNLI rule: when any question is answerable from the knowledge, keep only those.

    >>> keep_answerable([True, False])
    [True, False]
    >>> keep_answerable([False, False])
    [True, True]
    """
    return list(answerable) if any(answerable) else [True] * len(answerable)


def answer_from_knowledge(
    pairs: Sequence[Pair],
    qa: QuestionAnswerer,
    *,
    discard_unanswerable: bool = False,
    rules: TokenRules | None = None,
) -> list[KnowledgeAnswer]:
    """Stage "knowledge answers": one QA call over the distinct (valid question, knowledge) pairs.

    Args:
        pairs: the batch, with the question filter's statuses set.
        qa: the extractive QA backend.
        discard_unanswerable: the DNLI rule (`keep_answerable`).
        rules: the language's token rules for token F1 (None: the released English rule).

    Returns:
        One `KnowledgeAnswer` per valid question, in the order of `pairs` and of their traces.
    """
    valid = [(p, t) for p in pairs for t in p.result.valid_questions]
    answers: dict[tuple[str, str], Answer] = unique_call(
        [(t.question, p.knowledge) for p, t in valid],
        lambda ks: qa.answer([q for q, _ in ks], [k for _, k in ks]),
    )
    out: list[KnowledgeAnswer] = []
    for p, t in valid:
        ans = answers[(t.question, p.knowledge)]
        f1 = f1_score(t.candidate, ans.text, rules) if ans.has_answer else 0.0
        out.append(KnowledgeAnswer(p, t, ans.text, ans.has_answer, f1, kept=True))
    if discard_unanswerable:
        by_pair: dict[int, list[int]] = {}
        for i, a in enumerate(out):
            by_pair.setdefault(id(a.pair), []).append(i)
        for rows in by_pair.values():
            for i, keep in zip(rows, keep_answerable([not out[i].unanswered for i in rows])):
                out[i] = out[i]._replace(kept=keep)
    return out
