"""ragas, offline: `Q2Faithfulness` (response, retrieved_contexts; no LLM, no embeddings) scores an
`EvaluationDataset` through `ragas.evaluate`, in batched engine calls; each score equals
`q2 score --tiny` (the command line) on the same (reply, knowledge) pairs."""

from __future__ import annotations

import csv
import math

import pytest
from support.harness import ROOT, cli_score, close, count_engine, env, set_in_process

pytest.importorskip("ragas")


@pytest.mark.slow
def test_ragas_metric_scores_a_dataset(harness_tiny, tmp_path, monkeypatch):
    from ragas import EvaluationDataset

    from q2_metric.harness.ragas_metric import Q2Faithfulness, evaluate

    environ = env(harness_tiny["q2"], tmp_path)
    set_in_process(monkeypatch, environ)
    calls, loads = count_engine(monkeypatch)
    with open(ROOT / "q2_metric" / "data" / "wow_sample.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:11]
    records = [
        {"user_input": r["message"], "response": r["response"], "retrieved_contexts": [r["knowledge"]]}
        for r in rows
    ]
    records.append({"user_input": "hi", "response": "", "retrieved_contexts": [rows[0]["knowledge"]]})
    # two retrieved contexts: the knowledge is both, joined by a space
    records.append(
        {
            "user_input": "hi",
            "response": rows[1]["response"],
            "retrieved_contexts": [rows[1]["knowledge"], rows[2]["knowledge"]],
        }
    )
    max_batch = 8
    metric = Q2Faithfulness(options={"max_batch": max_batch}, max_wait=1.0)
    result = evaluate(EvaluationDataset.from_list(records), metric)
    got = result.to_pandas()["q2"].tolist()
    pairs = [(r["response"], " ".join(r["retrieved_contexts"])) for r in records]
    want, summary = cli_score(pairs, tmp_path, environ)
    assert len(got) == len(records)
    for g, w in zip(got, want):
        assert close(None if math.isnan(g) else g, w["q2"]), (g, w)
    scored = [g for g in got if not math.isnan(g)]
    assert len(scored) == summary["num_scored"] == len(records) - 1
    assert math.isclose(sum(scored) / len(scored), summary["q2"], abs_tol=1e-9)
    assert str(result.signature) == summary["signature"]
    assert len(loads) == 1
    expected = math.ceil(len(records) / max_batch)
    assert len(calls) <= expected, calls
    for name in {n for c in calls for n in c}:
        assert sum(c.count(name) for c in calls) <= expected
