"""ragas' `Q2Faithfulness` (q2_metric.harness.ragas_metric) on scripted components: the options as
keywords, checked with the models when the metric is built; counts and the full signature on the
result; samples ragas gives up on (its timeout) never scored; contexts joined by the separator.
The yardstick is `Q2Scorer.score` called directly on the same pairs."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("ragas")

from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.runtime import cache
from q2_metric.testing.scripted import scripted_scorer

KNOWLEDGE = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired in Canada."]
ROWS = [
    {"user_input": "q1", "response": "Bob Ross hosted the show on PBS.", "retrieved_contexts": KNOWLEDGE},
    {"user_input": "q2", "response": "", "retrieved_contexts": KNOWLEDGE[:1]},
    {"user_input": "q3", "response": "It aired in Canada.", "retrieved_contexts": KNOWLEDGE[1:]},
]


def test_scores_counts_signature_and_progress(scripted, capsys):
    from ragas import EvaluationDataset

    from q2_metric.harness.ragas_metric import evaluate

    result = evaluate(EvaluationDataset.from_list(ROWS), tiny=False, max_wait=1.0, show_progress=False)
    got = result.to_pandas()["q2"].tolist()
    want = scripted_scorer().score(
        [r["response"] for r in ROWS], [" ".join(r["retrieved_contexts"]) for r in ROWS]
    )
    assert [None if math.isnan(g) else g for g in got] == [None if math.isnan(w) else w for w in want.scores]
    assert result.counts == {"scored": 2, "empty": 1, "bad": 0}
    assert str(result.signature) == str(want.signature)
    assert "Q²: engine call 1 done" in capsys.readouterr().err
    # the spans on the side, in row order: the engine's for the same pairs, each in its response
    fields = ("start", "end", "text", "supported", "question")
    assert [[tuple(s[f] for f in fields) for s in d["q2_spans"]] for d in result.details] == [
        [tuple(getattr(s, f) for f in fields) for s in r.spans] for r in want.responses
    ]
    assert any(d["q2_spans"] for d in result.details) and result.details[1]["q2_spans"] == []
    assert [d["q2_status"] for d in result.details] == ["scored", "empty", "scored"]
    assert [d["q2_reason"] for d in result.details] == [r.reason for r in want.responses]
    assert result.details[1]["q2_verdict"] == "unverified"
    for row, d in zip(ROWS, result.details):
        assert all(row["response"][s["start"] : s["end"]] == s["text"] for s in d["q2_spans"])


def test_samples_ragas_gives_up_on_are_not_scored(scripted):
    """ragas' timeout cancels the samples still waiting for their batch: none reaches the engine."""
    from ragas import EvaluationDataset, RunConfig

    from q2_metric.harness.ragas_metric import Q2Faithfulness, evaluate

    metric = Q2Faithfulness(tiny=False, max_wait=3.0, progress=False)
    result = evaluate(
        EvaluationDataset.from_list(ROWS),
        metric,
        run_config=RunConfig(timeout=1, max_retries=1),
        show_progress=False,
    )
    assert all(math.isnan(v) for v in result.to_pandas()["q2"].tolist())
    assert scripted.replies == 0 and result.counts == {"scored": 0, "empty": 0, "bad": 0}


def test_options_are_keywords_checked_with_the_models_when_the_metric_is_built(tmp_path, monkeypatch):
    from q2_metric.harness.ragas_metric import Q2Faithfulness

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
    cache.reset()
