"""The response scores stage returns what it produces (`ResponseOutcome`). Expected values are
worked out by hand: the mean of the span scores, the fallback's label from the scripted NLI."""

from __future__ import annotations

import math

from q2_metric.components import ENTAILMENT, NEUTRAL
from q2_metric.results import VALID, Pair, QuestionTrace, ResponseScore
from q2_metric.steps.answers import KnowledgeAnswer
from q2_metric.steps.response_scores import score_responses
from q2_metric.steps.span_scores import score_spans
from q2_metric.testing.scripted import ScriptedNLI


def _pair(response: str, knowledge: str) -> Pair:
    return Pair(response, knowledge, ResponseScore(0, float("nan"), float("nan")))


def _answer(pair: Pair, candidate: str, text: str, f1: float, kept: bool = True) -> KnowledgeAnswer:
    trace = QuestionTrace(candidate, f"who is {candidate}?", 0, VALID)
    return KnowledgeAnswer(pair, trace, text, text != "", f1, kept)


def test_response_scores_mean_of_spans_fallback_and_none():
    covered, uncovered = _pair("a", "b"), _pair("Rome is old.", "Paris is big.")
    spans = score_spans([_answer(covered, "x", "x", 1.0), _answer(covered, "y", "", 0.0)], None)
    nli = ScriptedNLI()  # entailment when the (lower-cased) response is in the knowledge, else neutral
    out = score_responses([covered, uncovered], spans, nli, fallback=True)
    assert (out[0].q2, out[0].q2_no_nli, out[0].fallback) == (0.5, 0.5, False)  # mean of 1 and 0
    assert out[1].fallback and out[1].fallback_label == NEUTRAL and out[1].q2 == out[1].q2_no_nli == 0.5
    assert out[1].fallback_windows == 1

    entailed = _pair("paris is big", "Paris is big.")
    [o] = score_responses([entailed], [], ScriptedNLI(), fallback=True)
    assert o.fallback_label == ENTAILMENT and o.q2 == 1.0

    [off] = score_responses([uncovered], [], None, fallback=False)
    assert math.isnan(off.q2) and off.reason == "no valid question (fallback off)" and not off.fallback
