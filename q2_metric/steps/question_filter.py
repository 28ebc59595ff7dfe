"""Stage "question filter", questions -> filtered questions: the personal filter and the round-trip check.

In `single` mode the released code examines a candidate's questions in rank order and stops at the
first valid one: later questions are never parsed nor answered. The stage below does the same work
batched: rank 0 of every candidate occurrence in one QA call, then rank 1 only for occurrences
still without a valid question, and so on (at most `num_return_sequences` calls).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from q2_metric.components import Answer, Parser, QuestionAnswerer, dependency_tokens
from q2_metric.results import DISCARDED, NO_MATCH, PERSONAL, UNUSED, VALID, Pair, QuestionTrace
from q2_metric.steps.normalize import TokenRules, answers_match
from q2_metric.steps.unique import unique_call

__all__ = [
    "DISCARDED",
    "NO_MATCH",
    "PERSONAL",
    "UNUSED",
    "VALID",
    "filter_questions",
    "is_personal",
    "is_valid_question",
]


def is_personal(
    tokens: Iterable[tuple[str, str]],
    subjects: Iterable[str] = ("i", "you"),
    possessives: Iterable[str] = ("my", "your"),
) -> bool:
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


def is_valid_question(candidate: str, response_answer: Answer, rules: TokenRules | None = None) -> bool:
    """Valid when the response answers it (not "no answer", not empty) with the candidate itself,
    compared after normalisation (`rules`: the language's token rules; None: the released rule).

    >>> is_valid_question("The Joy of Painting", Answer("joy of painting"))
    True
    """
    return (
        response_answer.has_answer
        and response_answer.text != ""
        and answers_match(candidate, response_answer.text, rules)
    )


def filter_questions(
    pairs: Sequence[Pair],
    parser: Parser,
    qa: QuestionAnswerer,
    *,
    mode: str,
    personal_filter: bool,
    subjects: Iterable[str] = ("i", "you"),
    possessives: Iterable[str] = ("my", "your"),
    rules: TokenRules | None = None,
) -> int:
    """Stage "question filter": set each examined trace's status to personal, no_match or valid;
    traces never examined stay `unused`.

    Args:
        pairs: the batch, with `questions` set.
        parser: parses questions for the personal filter.
        qa: answers each question from its response (one call per rank in `single` mode).
        mode: `single` (the best valid question of each candidate, the paper's) or `multi`.
        personal_filter: drop questions about I/you (`subjects`, `possessives`).
        rules: the language's token rules for matching answers (None: the released English rule).

    Returns:
        The number of response-side QA calls made.
    """
    rounds = max((t.rank + 1 for p in pairs for t in p.result.questions), default=0)
    ranks = [[r] for r in range(rounds)] if mode == "single" else [list(range(rounds))]
    subjects, possessives = tuple(subjects), tuple(possessives)
    # a question with none of these words cannot be personal: its parse may be skipped
    words = {w.lower() for w in (*subjects, *possessives)}
    calls = 0
    for group in ranks:
        wanted = set(group)
        todo = [(p, t) for p in pairs for t in _open_traces(p, mode) if t.rank in wanted]
        if not todo:
            break
        if personal_filter:
            parsed = unique_call(
                [t.question for _, t in todo], lambda qs: dependency_tokens(parser, qs, words)
            )
            for _, t in todo:
                if is_personal(parsed[t.question], subjects, possessives):
                    t.status = PERSONAL
        asked = [(p, t) for p, t in todo if t.status != PERSONAL]
        answers = unique_call(
            [(t.question, p.response) for p, t in asked],
            lambda ks: qa.answer([q for q, _ in ks], [c for _, c in ks]),
        )
        calls += bool(answers)
        for p, t in asked:
            ans = answers[(t.question, p.response)]
            t.response_answer, t.response_has_answer = ans.text, ans.has_answer
            t.status = VALID if is_valid_question(t.candidate, ans, rules) else NO_MATCH
    return calls


def _open_traces(pair: Pair, mode: str) -> list[QuestionTrace]:
    """Traces still to examine: all unexamined ones (multi), or those of occurrences without a
    valid question yet (single)."""
    traces = pair.result.questions
    if mode == "multi":
        return [t for t in traces if t.status == UNUSED]
    done = {t.occurrence for t in traces if t.status == VALID}
    return [t for t in traces if t.status == UNUSED and t.occurrence not in done]
