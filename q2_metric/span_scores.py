"""Step 6, answers -> span scores: F1 first, NLI when the answers differ."""

from __future__ import annotations

from q2_metric.components import CONTRADICTION, ENTAILMENT, Answer


def nli_pair(question: str, candidate: str, knowledge_answer: str) -> tuple[str, str]:
    """(premise, hypothesis) comparing the knowledge answer with the candidate.

    >>> nli_pair("Who hosted the show?", "Bob Ross", "Ross")
    ('Who hosted the show? Ross.', 'Who hosted the show? Bob Ross.')
    """
    return f"{question} {knowledge_answer}.", f"{question} {candidate}."


def needs_nli(knowledge_answer: Answer, f1: float) -> bool:
    """NLI decides only when the knowledge answers and the answers are not identical (F1 < 1)."""
    return knowledge_answer.has_answer and f1 < 1.0


def span_score(knowledge_answer: Answer, f1: float, nli_label: str | None) -> float:
    """No answer -> 0; F1 = 1 -> 1; else entailment -> 1, contradiction -> 0, neutral (or no NLI) -> F1.

    >>> span_score(Answer("1980s"), 0.5, "neutral")
    0.5
    """
    if not knowledge_answer.has_answer:
        return 0.0
    if f1 >= 1.0:
        return 1.0
    if nli_label == ENTAILMENT:
        return 1.0
    if nli_label == CONTRADICTION:
        return 0.0
    return f1
