"""MLflow's `Q2Faithfulness` scorer (q2_metric.harness.mlflow_scorer) on scripted components, called
as MLflow calls it (`scorer.run(inputs=..., outputs=..., expectations=..., trace=...)`, from the
threads of a pool): the feedback (value, rationale, metadata with the signature and spans), rows in
flight at once sharing one engine call, `prepare` scoring the rows ahead in one engine call, where
the knowledge comes from, bad and empty rows, the options checked with the models when the scorer is
built. The yardstick is `Q2Scorer.score` called directly on the same pairs; MLflow's own runner is
in tests/integration/test_harness_mlflow.py."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("mlflow")

from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.runtime import cache
from q2_metric.testing.scripted import scripted_scorer

KNOWLEDGE = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired in Canada."]
ROWS = [
    {"inputs": {"q": "1", "knowledge": KNOWLEDGE}, "outputs": "Bob Ross hosted the show on PBS."},
    {"inputs": {"q": "2"}, "outputs": "It aired in Canada.", "expectations": {"knowledge": KNOWLEDGE[1]}},
    {"inputs": {"q": "3", "knowledge": KNOWLEDGE[0]}, "outputs": "Bob Ross painted on PBS in Canada."},
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a file store: no database to create


def _want():
    knowledge = [" ".join(KNOWLEDGE), KNOWLEDGE[1], KNOWLEDGE[0]]
    return scripted_scorer().score([r["outputs"] for r in ROWS], knowledge)


def _run(scorer, row):
    return scorer.run(
        inputs=row.get("inputs"), outputs=row.get("outputs"), expectations=row.get("expectations")
    )


def test_feedback_has_the_score_reason_signature_and_spans(scripted):
    from q2_metric.harness.mlflow_scorer import Q2Faithfulness

    scorer = Q2Faithfulness(tiny=False, progress=False)
    want = _want()
    for row, res in zip(ROWS, want.responses):
        fb = _run(scorer, row)
        assert fb.name == "q2" and fb.value == res.q2 and fb.rationale == res.reason and fb.error is None
        assert fb.metadata["q2_status"] == "scored" and fb.metadata["q2_signature"] == str(want.signature)
        assert fb.metadata["q2_reason"] == res.reason and fb.metadata["q2_score"] == json.dumps(res.q2)
        assert fb.metadata["q2_verdict"] == ("consistent" if res.q2 > 0.5 else "inconsistent")
        assert "q2_error" not in fb.metadata and all(isinstance(v, str) for v in fb.metadata.values())
        spans = json.loads(fb.metadata["q2_spans"])
        fields = ("start", "end", "text", "supported", "question")
        assert [tuple(s[f] for f in fields) for s in spans] == [
            tuple(getattr(s, f) for f in fields) for s in res.spans
        ]
    assert any(res.span_details()["spans"] for res in want.responses)
    assert scorer.counts == {"scored": 3, "empty": 0, "bad": 0} and scorer.signature == str(want.signature)


def test_rows_scored_at_once_from_threads_share_one_engine_call(scripted):
    from q2_metric.harness.mlflow_scorer import Q2Faithfulness

    scorer = Q2Faithfulness(tiny=False, progress=False, max_wait=1.0)
    with ThreadPoolExecutor(len(ROWS)) as pool:  # as MLflow's scoring pool calls a scorer
        got = list(pool.map(lambda row: _run(scorer, row).value, ROWS))
    assert got == _want().scores
    assert scripted.engine_calls == 1 and scorer._batcher.batches == [len(ROWS)]


def test_prepare_scores_the_rows_ahead_and_the_calls_read_them(scripted):
    from q2_metric.harness.mlflow_scorer import Q2Faithfulness

    scorer = Q2Faithfulness(tiny=False, progress=False, max_batch=2)
    assert scorer.prepare(ROWS) == 2 and scripted.engine_calls == 2  # 3 rows, 2 per engine call
    assert [_run(scorer, row).value for row in ROWS] == _want().scores
    assert scripted.engine_calls == 2
    scorer.reset()
    _run(scorer, ROWS[0])
    assert scripted.engine_calls == 3 and scorer.counts["scored"] == 1


def test_knowledge_from_inputs_expectations_then_the_traces_retrieved_documents(scripted, tmp_path):
    import mlflow
    from mlflow.entities import SpanType

    from q2_metric.harness.mlflow_scorer import Q2Faithfulness, retrieved_documents

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve(query):
        return [{"page_content": k, "metadata": {"doc_uri": "wiki"}} for k in KNOWLEDGE]

    @mlflow.trace
    def app(query):
        retrieve(query)
        return "Bob Ross hosted the show on PBS."

    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    app("who?")
    trace = mlflow.get_trace(mlflow.get_last_active_trace_id(), flush=True)
    assert retrieved_documents(trace) == KNOWLEDGE and retrieved_documents(None) is None
    scorer = Q2Faithfulness(tiny=False, progress=False, knowledge_key="kb")
    assert scorer.knowledge_of({"kb": "a"}, {"kb": "b"}, trace) == "a"
    assert scorer.knowledge_of({"q": 1}, {"kb": "b"}, trace) == "b"
    assert scorer.knowledge_of({"q": 1}, None, trace) == KNOWLEDGE
    fb = scorer.run(inputs={"query": "who?"}, outputs=ROWS[0]["outputs"], trace=trace)
    assert fb.value == _want().scores[0]


def test_bad_and_empty_rows(scripted):
    from q2_metric.harness.mlflow_scorer import Q2Faithfulness

    scorer = Q2Faithfulness(tiny=False, progress=False)
    empty = _run(scorer, {"inputs": {"q": "e", "knowledge": KNOWLEDGE}, "outputs": "  "})
    assert empty.value is None and empty.error is None and empty.metadata["q2_status"] == "empty"
    assert empty.rationale.startswith("Not scored")
    bad = _run(scorer, {"inputs": {"q": "b", "knowledge": KNOWLEDGE}, "outputs": {"text": "hi"}})
    assert bad.value is None and bad.error.error_code == "Q2_BAD_ROW"
    assert bad.error.error_message.startswith("the row with inputs {'q': 'b'}: field 'response'")
    assert "field 'response'" in bad.error.error_message and "dict" in bad.error.error_message
    none = _run(scorer, {"inputs": {"q": "n"}, "outputs": "Hi."})
    assert "field 'knowledge'" in none.error.error_message and "\n" not in none.error.error_message
    assert scorer.counts == {"scored": 0, "empty": 1, "bad": 2}


def test_options_are_checked_with_the_models_when_the_scorer_is_built(tmp_path, monkeypatch):
    from q2_metric.harness.mlflow_scorer import Q2Faithfulness

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    missing = str(tmp_path / "no-qg")
    with pytest.raises(ModelNotAvailable) as err:
        Q2Faithfulness(tiny=True, qg_model=missing)
    text = str(err.value)
    assert missing in text and "qg_model" in text and "--qg-model" not in text and "\n" not in text
    with pytest.raises(Q2OptionError, match="Invalid Q² option qg_batch_size=0"):
        Q2Faithfulness(tiny=True, options={"qg_batch_size": 0})
    with pytest.raises(Q2OptionError, match="given twice"):
        Q2Faithfulness(tiny=True, options={"tiny": False})
    # the keywords are the contract's to check, never coerced by pydantic ("8" is no integer)
    with pytest.raises(Q2OptionError, match="batch_size"):
        Q2Faithfulness(tiny=True, batch_size="8")
    cache.reset()
