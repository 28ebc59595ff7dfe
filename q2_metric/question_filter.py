"""Steps 3-4, questions -> filtered questions: the personal filter and the round-trip check."""

from __future__ import annotations

from typing import Iterable

from q2_metric.components import Answer
from q2_metric.normalize import answers_match

# Status of a generated question, as shown in explanations and steps files.
VALID = "valid"
PERSONAL = "personal"
NO_MATCH = "no_match"  # the response answer is "no answer" or differs from the candidate
UNUSED = "unused"  # valid, but `single` mode already kept a better-ranked question
DISCARDED = "discarded_unanswerable"  # DNLI variant: unanswerable while others are answerable


def is_personal(tokens: Iterable[tuple[str, str]], subjects: Iterable[str] = ("i", "you"),
                possessives: Iterable[str] = ("my", "your")) -> bool:
    """True when a question's `nsubj` is I/you or a `poss` token is my/your.

    >>> is_personal([("What", "attr"), ("do", "aux"), ("you", "nsubj"), ("like", "ROOT")])
    True
    """
    subjects, possessives = {s.lower() for s in subjects}, {p.lower() for p in possessives}
    for text, dep in tokens:
        if dep == "nsubj" and text.lower() in subjects:
            return True
        if dep == "poss" and text.lower() in possessives:
            return True
    return False


def is_valid_question(candidate: str, response_answer: Answer) -> bool:
    """A question is valid when the response answers it, with the candidate itself (normalised).

    >>> is_valid_question("The Joy of Painting", Answer("joy of painting"))
    True
    """
    return response_answer.has_answer and answers_match(candidate, response_answer.text)


def select_questions(statuses: list[str], mode: str) -> list[str]:
    """Given one candidate's question statuses (best-ranked first), keep the first valid question
    in `single` mode (later valid ones become `unused`) or all valid ones in `multi` mode."""
    if mode == "multi":
        return list(statuses)
    out, kept = [], False
    for status in statuses:
        if status == VALID and kept:
            out.append(UNUSED)
        else:
            kept = kept or status == VALID
            out.append(status)
    return out
