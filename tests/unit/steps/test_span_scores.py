"""The span scores stage returns what it produces (`SpanScore`). Expected values are worked out by
hand from the released rule: F1 when the answers agree, NLI only where they differ, 0 for no answer."""

from __future__ import annotations

from q2_metric.components import NEUTRAL
from q2_metric.results import VALID, Pair, QuestionTrace, ResponseScore
from q2_metric.steps.answers import KnowledgeAnswer
from q2_metric.steps.span_scores import score_spans
from q2_metric.testing.scripted import ScriptedNLI


def _answer(pair: Pair, candidate: str, text: str, f1: float, kept: bool = True) -> KnowledgeAnswer:
    trace = QuestionTrace(candidate, f"who is {candidate}?", 0, VALID)
    return KnowledgeAnswer(pair, trace, text, text != "", f1, kept)


def _pair(response: str, knowledge: str) -> Pair:
    return Pair(response, knowledge, ResponseScore(0, float("nan"), float("nan")))


def test_span_scores_use_nli_only_where_the_answers_differ():
    p = _pair("Bob Ross hosted it.", "Ross hosted it.")
    answers = [
        _answer(p, "Bob Ross", "Bob Ross", 1.0),  # same answer: F1 1, no NLI
        _answer(p, "the show", "a programme", 0.0),  # differs: NLI (neutral here) -> F1 0
        _answer(p, "PBS", "", 0.0),  # no answer: 0, no NLI
        _answer(p, "Ross", "Bob Ross", 2 / 3, kept=False),  # discarded: no span score
    ]
    nli = ScriptedNLI(labels={("who is the show? a programme.", "who is the show? the show."): NEUTRAL})
    spans = score_spans(answers, nli)
    assert [(s.answer.trace.candidate, s.nli_label, s.score, s.score_no_nli) for s in spans] == [
        ("Bob Ross", None, 1.0, 1.0),
        ("the show", NEUTRAL, 0.0, 0.0),
        ("PBS", None, 0.0, 0.0),
    ]
    assert nli.calls == [1]
    assert all(a.trace.score is None for a in answers)  # the engine records them
