"""Stage "span scores", answers -> span scores: token F1 first, NLI when the answers differ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from q2_metric.components import CONTRADICTION, ENTAILMENT, NLIClassifier
from q2_metric.steps.answers import KnowledgeAnswer
from q2_metric.steps.unique import unique_call


class SpanScore(NamedTuple):
    """Both span scores of one valid question (the engine records them on the trace)."""

    answer: KnowledgeAnswer
    nli_label: str | None  # None: not compared by NLI
    score: float  # with NLI
    score_no_nli: float  # token F1 only


def nli_pair(question: str, candidate: str, knowledge_answer: str) -> tuple[str, str]:
    """(premise, hypothesis) comparing the knowledge answer (as decoded) with the candidate.

    >>> nli_pair("Who hosted the show?", "Bob Ross", "ross")
    ('Who hosted the show? ross.', 'Who hosted the show? Bob Ross.')
    """
    return f"{question} {knowledge_answer}.", f"{question} {candidate}."


def needs_nli(knowledge_answer: str, has_answer: bool, f1: float, cls_text: str = "[CLS]") -> bool:
    """The released rule: NLI only when 0 <= F1 < 1 and the knowledge answer is non-empty and
    does not contain the CLS token's text.

    >>> needs_nli("[CLS] who hosted", True, 0.5), needs_nli("ross", True, 0.5), needs_nli("", True, 0.0)
    (False, True, False)
    """
    return has_answer and 0.0 <= f1 < 1.0 and knowledge_answer != "" and cls_text not in knowledge_answer


def span_score(has_answer: bool, f1: float, nli_label: str | None) -> float:
    """No answer -> 0; otherwise entailment -> 1, contradiction -> 0, neutral or no NLI -> F1.

    >>> span_score(True, 0.5, "neutral"), span_score(True, 0.5, "entailment"), span_score(False, 0.0, None)
    (0.5, 1.0, 0.0)
    """
    if not has_answer:
        return 0.0
    if nli_label == ENTAILMENT:
        return 1.0
    if nli_label == CONTRADICTION:
        return 0.0
    return f1


def _pair_of(a: KnowledgeAnswer) -> tuple[str, str]:
    return nli_pair(a.trace.question, a.trace.candidate, a.text)


def score_spans(
    answers: Sequence[KnowledgeAnswer], nli: NLIClassifier | None, *, cls_text: str = "[CLS]"
) -> list[SpanScore]:
    """Stage "span scores": span NLI (one call over the distinct pairs; none when `nli` is None)
    and both span scores of every kept answer.

    Args:
        answers: the knowledge answers stage's output (those not kept get no span score).
        nli: the NLI backend, or None for token F1 only.
        cls_text: the QA tokenizer's CLS text (an answer holding it gets no NLI, as released).

    Returns:
        One `SpanScore` per kept answer, in their order.
    """
    kept = [a for a in answers if a.kept]
    compare = [nli is not None and needs_nli(a.text, a.has_answer, a.f1, cls_text) for a in kept]
    labels: dict[tuple[str, str], str] = {}
    if nli is not None:
        classify = nli.classify
        labels = unique_call(
            [_pair_of(a) for a, c in zip(kept, compare) if c],
            lambda ps: classify([p for p, _ in ps], [h for _, h in ps]),
        )
    out = []
    for a, c in zip(kept, compare):
        label = labels[_pair_of(a)] if c else None
        out.append(
            SpanScore(a, label, span_score(a.has_answer, a.f1, label), span_score(a.has_answer, a.f1, None))
        )
    return out
