"""Stage "span scores", answers -> span scores: token F1 first, NLI when the answers differ."""

from __future__ import annotations

from collections.abc import Sequence

from q2_metric.components import CONTRADICTION, ENTAILMENT, NLIClassifier
from q2_metric.results import Pair
from q2_metric.steps.unique import unique_call


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


def score_spans(pairs: Sequence[Pair], nli: NLIClassifier | None, *, cls_text: str = "[CLS]") -> None:
    """Stage "span scores": span NLI (one call over the distinct pairs; none when `nli` is None)
    and both span scores of every valid question.

    Args:
        pairs: the batch, with knowledge answers set.
        nli: the NLI backend, or None for token F1 only.
        cls_text: the QA tokenizer's CLS text (an answer holding it gets no NLI, as released).
    """
    valid = [t for p in pairs for t in p.result.valid_questions]
    compare = [
        t
        for t in valid
        if nli is not None
        and needs_nli(t.knowledge_answer or "", bool(t.knowledge_has_answer), t.f1, cls_text)
    ]
    labels = unique_call(
        [nli_pair(t.question, t.candidate, t.knowledge_answer) for t in compare],
        lambda ps: nli.classify([a for a, _ in ps], [b for _, b in ps]),
    )
    for t in compare:
        t.nli_label = labels[nli_pair(t.question, t.candidate, t.knowledge_answer)]
    for t in valid:
        t.score = span_score(bool(t.knowledge_has_answer), t.f1, t.nli_label)
        t.score_no_nli = span_score(bool(t.knowledge_has_answer), t.f1, None)
