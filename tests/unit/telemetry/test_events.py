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
        return [r.log_record for r in exporter.get_finished_logs()]

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
