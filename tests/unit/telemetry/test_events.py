"""Observable verdicts: with OpenTelemetry configured (an SDK logger provider with the SDK's
in-memory exporter), every scored response emits one `gen_ai.evaluation.result` event through the
Logs API, parented to the caller's span, with the attributes written out here by hand."""

from __future__ import annotations

import csv
import json

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry import _logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from support.data import SAMPLE

from q2_metric.cli import main
from q2_metric.testing.scripted import scripted_scorer

RESPONSES = ["Paris is big.", "Paris and Rome are big.", "Bob likes cats.", ""]
KNOWLEDGE = ["Paris is big.", "Paris is big.", "Nothing here.", "Something."]
OP = {
    "format": "q2-operating-point",
    "version": 1,
    "threshold": 0.5,
    "rule": {"name": "balanced_accuracy"},
    "dataset": {"name": "d", "sha256": "a" * 64},
    "scores": {"sha256": "b" * 64, "signature": "q2:0.5.0|qg:x"},
    "figures": {"balanced_accuracy": {"value": 0.7, "low": 0.6, "high": 0.8}},
    "calibration": {"ece": 0.1, "table": []},
    "created": "2026-12-01T23:00:00+00:00",
}
# The scripted components: "what about X?" for each capitalised X, answered where the text holds X.
EXPECTED = [
    {
        "gen_ai.evaluation.name": "q2",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "consistent",
        "gen_ai.evaluation.explanation": "Weakest question: 'what about Paris?'; the response answers "
        "'Paris', the knowledge 'Paris' (span score 1).",
    },
    {  # Paris answered (1), Rome not (0): the mean 0.5 is <= 0.5, and Rome's question is the weakest
        "gen_ai.evaluation.name": "q2",
        "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "inconsistent",
        "gen_ai.evaluation.explanation": "Weakest question: 'what about Rome?'; the response answers "
        "'Rome', the knowledge 'no answer' (span score 0).",
    },
    {
        "gen_ai.evaluation.name": "q2",
        "gen_ai.evaluation.score.value": 0.0,
        "gen_ai.evaluation.score.label": "inconsistent",
        "gen_ai.evaluation.explanation": "Weakest question: 'what about Bob?'; the response answers "
        "'Bob', the knowledge 'no answer' (span score 0).",
    },
    {  # an empty response cannot be checked
        "gen_ai.evaluation.name": "q2",
        "gen_ai.evaluation.score.label": "unverified",
        "error.type": "unverified",
        "gen_ai.evaluation.explanation": "Not scored: empty response.",
    },
]


@pytest.fixture(scope="module")
def exporter():
    """The process's logger provider (set once: OpenTelemetry keeps the first) with an in-memory
    exporter."""
    exporter = InMemoryLogRecordExporter()
    provider = _logs.get_logger_provider()
    if not isinstance(provider, LoggerProvider):
        _logs.set_logger_provider(LoggerProvider())
        provider = _logs.get_logger_provider()
    assert isinstance(provider, LoggerProvider)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return exporter


@pytest.fixture
def events(exporter, monkeypatch):
    monkeypatch.delenv("TRACEPARENT", raising=False)
    exporter.clear()

    def take():
        """The events emitted since the last call."""
        taken = [r.log_record for r in exporter.get_finished_logs()]
        exporter.clear()
        return taken

    return take


def test_one_event_per_response_parented_to_the_callers_span(tmp_path, events):
    op = tmp_path / "op.json"
    op.write_text(json.dumps(OP))
    tracer = TracerProvider().get_tracer("caller")
    with tracer.start_as_current_span("answer") as span:
        result = scripted_scorer().score(RESPONSES, KNOWLEDGE, operating_point=op)
    parent = span.get_span_context()
    records = events()
    assert [r.q2 for r in result.responses][:3] == [1.0, 0.5, 0.0]
    assert len(records) == len(RESPONSES)
    for record, expected in zip(records, EXPECTED):
        assert record.event_name == "gen_ai.evaluation.result"
        assert (record.trace_id, record.span_id) == (parent.trace_id, parent.span_id)
        assert dict(record.attributes) == expected


def test_no_operating_point_no_label_and_no_span_no_parent(events):
    scripted_scorer().score(RESPONSES[:1], KNOWLEDGE[:1])
    [record] = events()
    assert "gen_ai.evaluation.score.label" not in record.attributes
    assert record.attributes["gen_ai.evaluation.score.value"] == 1.0
    assert record.trace_id == 0 and record.span_id == 0  # no caller span: no parent


def test_q2_score_emits_one_event_per_row_under_the_traceparent(tmp_path, tiny_env, events, monkeypatch):
    trace_id, span_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    monkeypatch.setenv("TRACEPARENT", f"00-{trace_id}-{span_id}-01")
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:3]
    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, ["response", "knowledge"], extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "out.csv"
    argv = ["score", str(data), "-o", str(out), "--tiny", "--no-cache", "--quiet", "--threshold", "0.4"]
    assert main(argv) == 0
    records = events()
    with open(out, newline="", encoding="utf-8") as f:
        scored = list(csv.DictReader(f))
    assert len(records) == len(scored) == 3
    for record, row in zip(records, scored):
        assert (f"{record.trace_id:032x}", f"{record.span_id:016x}") == (trace_id, span_id)
        assert record.attributes["gen_ai.evaluation.name"] == "q2"
        assert record.attributes["gen_ai.evaluation.score.value"] == pytest.approx(float(row["q2"]))
        assert record.attributes["gen_ai.evaluation.score.label"] == row["decision"]


# -- every front-end that scores: the contract's one emission -----------------------------------------
def op_file(path, threshold):
    path.write_text(json.dumps({**OP, "threshold": threshold}))
    return path


# at the operating point's 0.4, the second response (0.5) is consistent: the label is the file's, not 0.5's
AT_04 = [
    {**EXPECTED[0]},
    {**EXPECTED[1], "gen_ai.evaluation.score.label": "consistent"},
    {**EXPECTED[2]},
    {**EXPECTED[3]},
]


def test_q2_serve_parents_each_event_to_the_traceparent_of_its_request(tmp_path, events):
    """A real `q2 serve` app on uvicorn (in process, so that the SDK's exporter hears it) over real
    HTTP: one event per item, parented to the span the request's `traceparent` header names, labelled
    at the operating point's threshold; a request without the header has no parent."""
    import httpx
    from support.serve import q2_service

    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    op = op_file(tmp_path / "op.json", 0.4)
    items = [{"response": r, "knowledge": k} for r, k in zip(RESPONSES, KNOWLEDGE)]
    with q2_service(scripted_scorer(), operating_point=op) as url:
        assert events() == []  # no event from the warm-up item: no caller asked for it
        reply = httpx.post(
            url + "/v1/score",
            json={"items": items},
            headers={"traceparent": f"00-{trace_id}-{span_id}-01"},
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        records = events()
        lone = httpx.post(url + "/v1/score", json=items[0], timeout=60)
        assert lone.status_code == 200, lone.text
        [unparented] = events()
        # the guardrails' client sends its caller's span as the traceparent header
        from q2_metric.guardrails.client import Q2Service

        with TracerProvider().get_tracer("guard").start_as_current_span("guard") as guard_span:
            Q2Service(url).ask(items[:2])
        guarded = events()
    out = reply.json()
    assert [e["verdict"] for e in out["results"]] == [
        "consistent",
        "consistent",
        "inconsistent",
        "unverified",
    ]
    assert "|thr:0.4|op:ba@" in out["signature"]
    assert len(records) == len(items)
    for record, expected in zip(records, AT_04):
        assert record.event_name == "gen_ai.evaluation.result"
        assert (f"{record.trace_id:032x}", f"{record.span_id:016x}") == (trace_id, span_id)
        assert dict(record.attributes) == expected
    assert (unparented.trace_id, unparented.span_id) == (0, 0)
    mine = guard_span.get_span_context()
    assert [(r.trace_id, r.span_id) for r in guarded] == [(mine.trace_id, mine.span_id)] * 2
    assert dict(unparented.attributes) == AT_04[0]


def test_a_harness_in_process_emits_once_per_test_case_under_the_callers_span(tmp_path, events, monkeypatch):
    """DeepEval's metric in process, its test cases concurrent (the runtime's micro-batcher scores
    them in the engine thread): one event per test case, each parented to the span of the caller
    that measured it, labelled at the operating point's threshold."""
    pytest.importorskip("deepeval")
    import asyncio

    from deepeval.test_case import LLMTestCase

    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric
    from q2_metric.runtime import cache

    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    cache.reset()
    config, _ = cache.runtime_config({"tiny": False})
    cache.engine(config).scorer = scripted_scorer()
    try:
        metric = Q2FaithfulnessMetric(
            tiny=False, progress=False, operating_point=op_file(tmp_path / "op.json", 0.4)
        )
        tracer = TracerProvider().get_tracer("caller")
        cases = [
            LLMTestCase(input="q", actual_output=r, retrieval_context=[k])
            for r, k in zip(RESPONSES, KNOWLEDGE)
        ]

        async def one(case):
            with tracer.start_as_current_span("check") as span:
                await metric.a_measure(case)
                return span.get_span_context(), metric.verdict

        async def all_of():
            return await asyncio.gather(*(one(c) for c in cases))

        spans = asyncio.run(all_of())
    finally:
        cache.reset()
    records = events()
    assert len(records) == len(cases)
    by_span = {(r.trace_id, r.span_id): dict(r.attributes) for r in records}
    assert len(by_span) == len(cases)  # each test case's own caller span
    for (span, _), expected in zip(spans, AT_04):
        assert by_span[(span.trace_id, span.span_id)] == expected
    assert "|thr:0.4|op:ba@" in (metric.signature or "")
