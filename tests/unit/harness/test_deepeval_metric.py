"""DeepEval's `Q2FaithfulnessMetric` (q2_metric.harness.deepeval_metric) on scripted components:
`measure` and `a_measure`, concurrent test cases (and DeepEval's copies of the metric) sharing one
engine call, the threshold rule, a test case without an output or knowledge, the options checked
with the models when the metric is built. The yardstick is `Q2Scorer.score` called directly on the
same pairs; DeepEval's own runner is in tests/integration/test_harness_deepeval.py."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

pytest.importorskip("deepeval")

from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.runtime import cache
from q2_metric.testing.scripted import scripted_scorer

KNOWLEDGE = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired in Canada."]
CASES = [
    ("Bob Ross hosted the show on PBS.", KNOWLEDGE),
    ("It aired in Canada.", KNOWLEDGE[1:]),
    ("Bob Ross painted on PBS in Canada.", KNOWLEDGE),
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    monkeypatch.setenv("DEEPEVAL_DISABLE_DOTENV", "1")


def _case(response, contexts, name=None, context=None):
    from deepeval.test_case import LLMTestCase

    return LLMTestCase(
        input="q", actual_output=response, retrieval_context=contexts, context=context, name=name
    )


def _want(pairs):
    return scripted_scorer().score([r for r, _ in pairs], [" ".join(k) for _, k in pairs])


def test_measure_gives_score_reason_signature_and_spans(scripted):
    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    metric = Q2FaithfulnessMetric(threshold=0.5, tiny=False, progress=False)
    want = _want(CASES[:1]).responses[0]
    got = metric.measure(_case(*CASES[0]))
    assert got == metric.score == want.q2
    assert metric.reason == want.reason and metric.error is None and metric.status == "scored"
    assert metric.signature == str(_want(CASES[:1]).signature) == metric.evaluation_model
    fields = ("start", "end", "text", "candidate", "supported", "score", "question")
    assert [tuple(s[f] for f in fields) for s in metric.spans] == [
        tuple(getattr(s, f) for f in fields) for s in want.spans
    ] and metric.spans
    assert all(s["reason"] for s in metric.spans)
    logs = json.loads(metric.verbose_logs)
    assert logs["q2_spans"] == metric.spans and logs["q2_reason"] == want.reason
    assert logs["q2_verdict"] == metric.verdict == ("consistent" if want.q2 > 0.5 else "inconsistent")
    assert metric.is_successful() is (want.q2 > 0.5) and metric.success is metric.is_successful()


def test_concurrent_a_measure_calls_and_deepevals_copies_share_one_engine_call(scripted):
    from deepeval.metrics.utils import copy_metrics

    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    metric = Q2FaithfulnessMetric(tiny=False, progress=False, max_wait=1.0)
    copies = [copy_metrics([metric])[0] for _ in CASES]  # what DeepEval's evaluate does per test case
    assert all(type(c) is Q2FaithfulnessMetric and c._batcher is metric._batcher for c in copies)

    async def run():
        return await asyncio.gather(*(c.a_measure(_case(*pair)) for c, pair in zip(copies, CASES)))

    got = asyncio.run(run())
    assert got == _want(CASES).scores
    assert scripted.engine_calls == 1 and metric._batcher.batches == [len(CASES)]


def test_the_threshold_is_the_projects_rule_and_checked():
    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    metric = Q2FaithfulnessMetric.__new__(Q2FaithfulnessMetric)
    metric.threshold, metric.error = 0.5, None
    for score, success in ((0.5, False), (0.51, True), (None, False)):
        metric.score = score
        assert metric.is_successful() is success, score  # consistent iff Q² > threshold
    with pytest.raises(Q2OptionError, match="threshold"):
        Q2FaithfulnessMetric(threshold=1.5)


def test_knowledge_is_retrieval_context_else_context(scripted):
    from deepeval.test_case.llm_test_case import RetrievedContextData

    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric, knowledge_of

    assert knowledge_of(_case("x", None, context=KNOWLEDGE)) == KNOWLEDGE
    assert knowledge_of(_case("x", KNOWLEDGE[:1], context=KNOWLEDGE)) == KNOWLEDGE[:1]
    data = [RetrievedContextData(context=k, source="wiki") for k in KNOWLEDGE]
    assert knowledge_of(_case("x", data)) == KNOWLEDGE
    metric = Q2FaithfulnessMetric(tiny=False, progress=False)
    assert metric.measure(_case(CASES[0][0], None, context=KNOWLEDGE)) == _want(CASES[:1]).scores[0]


def test_empty_missing_output_and_missing_knowledge_are_unscored_with_their_sentence(scripted):
    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    metric = Q2FaithfulnessMetric(tiny=False, progress=False)
    assert metric.measure(_case("   ", KNOWLEDGE)) is None
    assert metric.status == "empty" and metric.error.startswith("Not scored") and not metric.is_successful()
    assert metric.measure(_case(None, KNOWLEDGE, name="turn-7")) is None
    assert metric.status == "bad" and metric.error.startswith("test case 'turn-7': field 'response'")
    assert metric.measure(_case("It aired.", None)) is None
    assert metric.status == "bad" and "the test case with input 'q'" in metric.error
    assert "knowledge" in metric.error and "\n" not in metric.error and not metric.is_successful()


def test_options_are_checked_with_the_models_when_the_metric_is_built(tmp_path, monkeypatch):
    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    missing = str(tmp_path / "no-qg")
    with pytest.raises(ModelNotAvailable) as err:
        Q2FaithfulnessMetric(tiny=True, qg_model=missing)
    text = str(err.value)
    assert missing in text and "qg_model" in text and "--qg-model" not in text and "\n" not in text
    with pytest.raises(Q2OptionError, match="Invalid Q² option qg_batch_size=0"):
        Q2FaithfulnessMetric(tiny=True, options={"qg_batch_size": 0})
    with pytest.raises(Q2OptionError, match="given twice"):
        Q2FaithfulnessMetric(tiny=True, options={"tiny": False})
    cache.reset()


def test_nan_never_reaches_deepeval(scripted):
    """An unscored test case's score is None, not NaN (DeepEval averages and serializes scores)."""
    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    metric = Q2FaithfulnessMetric(tiny=False, progress=False)
    metric.measure(_case("", KNOWLEDGE))
    assert metric.score is None and not (isinstance(metric.score, float) and math.isnan(metric.score))


def test_deepevals_sync_runner_calls_measure_one_engine_call_per_test_case(scripted, tmp_path, monkeypatch):
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig

    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    monkeypatch.chdir(tmp_path)  # DeepEval keeps its .deepeval folder in the working directory
    monkeypatch.setenv("DEEPEVAL_RESULTS_FOLDER", str(tmp_path / "results"))
    result = evaluate(
        [_case(*pair) for pair in CASES],
        [Q2FaithfulnessMetric(tiny=False, progress=False)],
        async_config=AsyncConfig(run_async=False),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    tests = sorted(result.test_results, key=lambda r: r.index)
    assert [t.metrics_data[0].score for t in tests] == _want(CASES).scores
    assert scripted.engine_calls == len(CASES)
