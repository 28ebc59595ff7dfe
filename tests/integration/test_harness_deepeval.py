"""DeepEval, offline: `Q2FaithfulnessMetric` in DeepEval's own `evaluate(test_cases, metrics)`
(telemetry off, no socket to another machine) scores the bundled sample's pairs, each equal to
`q2 score --tiny` (the command line) on the same (output, retrieval context) pairs, with the full
signature; its concurrent test cases share engine calls."""

from __future__ import annotations

import csv
import json
import math

import pytest
from support.harness import ROOT, cli_score, close, count_engine, env, set_in_process
from support.offline import no_network

pytest.importorskip("deepeval")

OFFLINE = {"DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "DEEPEVAL_DISABLE_DOTENV": "1"}


@pytest.mark.slow
def test_deepeval_evaluate_gives_q2_scores_rows(harness_tiny, tmp_path, monkeypatch):
    environ = {**env(harness_tiny["q2"], tmp_path), **OFFLINE}
    set_in_process(monkeypatch, environ)
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("DEEPEVAL_RESULTS_FOLDER", str(tmp_path / "deepeval-results"))
    monkeypatch.chdir(tmp_path)  # DeepEval keeps its .deepeval folder in the working directory
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
    from deepeval.test_case import LLMTestCase

    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

    calls, loads = count_engine(monkeypatch)
    with open(ROOT / "q2_metric" / "data" / "wow_sample.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:11]
    cases = [
        LLMTestCase(input=r["message"], actual_output=r["response"], retrieval_context=[r["knowledge"]])
        for r in rows
    ]
    cases.append(LLMTestCase(input="hi", actual_output="", retrieval_context=[rows[0]["knowledge"]]))
    # `context` when there is no retrieval context; two passages joined by a space
    cases.append(
        LLMTestCase(
            input="hi",
            actual_output=rows[1]["response"],
            context=[rows[1]["knowledge"], rows[2]["knowledge"]],
        )
    )
    metric = Q2FaithfulnessMetric(threshold=0.5, max_wait=1.0)
    with no_network() as tried:
        result = evaluate(
            cases,
            [metric],
            async_config=AsyncConfig(max_concurrent=8),
            display_config=DisplayConfig(show_indicator=False, print_results=False),
        )
    assert tried == []
    tests = sorted(result.test_results, key=lambda r: r.index)
    data = [t.metrics_data[0] for t in tests]
    pairs = [(c.actual_output, " ".join(c.retrieval_context or c.context)) for c in cases]
    want, summary = cli_score(pairs, tmp_path, environ)
    got = [d.score for d in data]
    for g, w in zip(got, want):
        assert close(g, w["q2"]), (g, w)
    scored = [g for g in got if g is not None]
    assert len(set(scored)) >= 3 and len(scored) == summary["num_scored"] == len(cases) - 1
    assert math.isclose(sum(scored) / len(scored), summary["q2"], abs_tol=1e-9)
    assert {d.evaluation_model for d in data} == {summary["signature"]}
    assert data[-2].error.startswith("Not scored") and data[-2].success is False
    for d, w in zip(data, want):  # DeepEval's pass/fail: Q² > threshold, q2 score's decision at 0.5
        assert d.success is (w["q2"] is not None and w["q2"] > 0.5)
    for case, d in zip(cases, data):
        logs = json.loads(d.verbose_logs)
        assert logs["q2_verdict"] == (
            "consistent" if d.success else "inconsistent" if d.score is not None else "unverified"
        )
        for span in logs["q2_spans"]:
            assert case.actual_output[span["start"] : span["end"]] == span["text"]
    assert len(loads) == 1
    # 13 test cases, 8 at a time: they share engine calls
    assert len(calls) <= 3, calls
