"""MLflow, offline: the `Q2Faithfulness` scorer in `mlflow.genai.evaluate` (a local sqlite tracking
store, telemetry off, no socket to another machine) scores the bundled sample's rows, each equal to
`q2 score --tiny` (the command line) on the same (response, knowledge) pairs, with the full
signature; MLflow's rows in flight share engine calls, and `evaluate` here scores them all ahead in
engine calls of `max_batch` rows."""

from __future__ import annotations

import csv
import json
import math

import pytest
from support.harness import ROOT, cli_score, close, count_engine, env, set_in_process
from support.offline import no_network

pytest.importorskip("mlflow")

OFFLINE = {"MLFLOW_DISABLE_TELEMETRY": "true", "MLFLOW_GENAI_EVAL_SCORER_RATE_LIMIT": "0"}


def _data() -> list[dict]:
    with open(ROOT / "q2_metric" / "data" / "wow_sample.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:11]
    data = [
        {"inputs": {"message": r["message"], "knowledge": r["knowledge"]}, "outputs": r["response"]}
        for r in rows
    ]
    data.append({"inputs": {"message": "hi", "knowledge": rows[0]["knowledge"]}, "outputs": ""})
    # two passages: the knowledge is both, joined by a space
    data.append(
        {
            "inputs": {"message": "hi"},
            "outputs": rows[1]["response"],
            "expectations": {"knowledge": [rows[1]["knowledge"], rows[2]["knowledge"]]},
        }
    )
    return data


def _pairs(data: list[dict]) -> list[tuple[str, str]]:
    out = []
    for row in data:
        knowledge = row["inputs"].get("knowledge", (row.get("expectations") or {}).get("knowledge"))
        out.append((row["outputs"], " ".join(knowledge) if isinstance(knowledge, list) else knowledge))
    return out


def _feedback(result) -> list[dict]:
    """Each row's q2 feedback as MLflow's result table keeps it: (value, metadata)."""
    out = []
    for assessments in result.result_df["assessments"]:
        (fb,) = [a for a in assessments if a["assessment_name"] == "q2"]
        out.append(fb)
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A sqlite tracking store, as docs/mlflow.md sets (created once: MLflow migrates a new one)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def offline(harness_tiny, store, tmp_path, monkeypatch):
    environ = {**env(harness_tiny["q2"], tmp_path), **OFFLINE}
    set_in_process(monkeypatch, environ)
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)
    import mlflow

    mlflow.set_tracking_uri(store)
    return environ


@pytest.mark.slow
def test_mlflow_genai_evaluate_gives_q2_scores_rows(offline, tmp_path, monkeypatch):
    import mlflow

    from q2_metric.harness.mlflow_scorer import Q2Faithfulness

    calls, loads = count_engine(monkeypatch)
    data = _data()
    scorer = Q2Faithfulness(max_wait=1.0)
    with no_network() as tried:
        result = mlflow.genai.evaluate(data=data, scorers=[scorer])
    assert tried == []
    feedback = _feedback(result)
    want, summary = cli_score(_pairs(data), tmp_path, offline)
    got = [fb["feedback"]["value"] for fb in feedback]
    assert len(got) == len(data)
    for g, w in zip(got, want):
        assert close(g, w["q2"]), (g, w)
    scored = [g for g in got if g is not None]
    assert len(set(scored)) >= 3  # the rows differ: a swap of two rows would show
    assert len(scored) == summary["num_scored"] == len(data) - 1
    assert feedback[-2]["metadata"]["q2_status"] == "empty" and feedback[-2]["rationale"].startswith(
        "Not scored"
    )
    assert {fb["metadata"]["q2_signature"] for fb in feedback} == {summary["signature"]} == {scorer.signature}
    # the row's record: its verdict at 0.5 (q2 score's decision; unverified when not scored), its reason
    for fb, w in zip(feedback, want):
        decision = "unverified" if w["q2"] is None else "consistent" if w["q2"] > 0.5 else "inconsistent"
        assert fb["metadata"]["q2_verdict"] == decision and fb["metadata"]["q2_reason"] == w["reason"]
    assert scorer.counts == {"scored": len(data) - 1, "empty": 1, "bad": 0}
    assert math.isclose(result.metrics["q2/mean"], summary["q2"], abs_tol=1e-9)
    for row, fb in zip(data, feedback):  # the spans, each in its response
        for span in json.loads(fb["metadata"].get("q2_spans", "[]")):
            assert row["outputs"][span["start"] : span["end"]] == span["text"]
    assert len(loads) == 1
    # MLflow's 10 scoring threads: its rows in flight share engine calls
    assert len(calls) < len(data), calls


@pytest.mark.slow
def test_evaluate_scores_every_row_ahead_in_max_batch_engine_calls(offline, tmp_path, monkeypatch):
    from q2_metric.harness.mlflow_scorer import evaluate

    calls, loads = count_engine(monkeypatch)
    data = _data()
    with no_network() as tried:
        result = evaluate(data, max_batch=8)
    assert tried == []
    got = [fb["feedback"]["value"] for fb in _feedback(result)]
    want, summary = cli_score(_pairs(data), tmp_path, offline)
    assert all(close(g, w["q2"]) for g, w in zip(got, want)), (got, want)
    assert result.signature == summary["signature"]
    assert result.counts == {"scored": len(data) - 1, "empty": 1, "bad": 0}
    assert len(loads) == 1 and len(calls) == math.ceil(len(data) / 8), calls


@pytest.mark.slow
def test_the_pages_forty_row_example_keeps_every_trace(harness_tiny, tmp_path):
    """docs/mlflow.md's 40-row example lost 3 of 40 traces on the page's sqlite store ("QueuePool
    limit of size 5 overflow 10 reached"): run as the page says (its exports, its block, a new
    store in an empty folder), every row has its trace, with its spans and its Q² assessment."""
    import re
    import subprocess
    import sys

    page = (ROOT / "docs" / "mlflow.md").read_text(encoding="utf-8")
    exports = dict(re.findall(r"\b(MLFLOW_\w+)=(\S+)", "\n".join(re.findall(r"^export (.*)$", page, re.M))))
    assert exports.get("MLFLOW_SQLALCHEMYSTORE_POOLCLASS") == "NullPool"
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "evaluate(rows, max_batch=64)" in b
    )
    check = (
        "\ntraces = mlflow.search_traces(run_id=result.run_id, return_type='list')\n"
        "print('TRACES', len(traces), sum(bool(t.data.spans) for t in traces),"
        " sum(any(a.name == 'q2' for a in t.info.assessments) for t in traces))\n"
    )
    environ = {**env(harness_tiny["q2"], tmp_path), **exports}
    res = subprocess.run(
        [sys.executable, "-c", block + check],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "TRACES 40 40 40" in res.stdout, (res.stdout, res.stderr[-3000:])
    assert "Failed to send trace" not in res.stderr and "QueuePool" not in res.stderr
