"""LightEval's Q² metrics (q2_metric.harness.lighteval_task) on scripted components, through the
function LightEval's pipeline calls (`lighteval.metrics.apply_metric`: a batched metric gets the
whole batch) and its own aggregation (`MetricsLogger.aggregate`): one engine call for all the
figures of a batch, values as the engine gives them, every sample checked alone, the counts and the
full signature, options checked with the models when the metrics are built. The yardstick is
`Q2Scorer.score` called directly on the same pairs. The whole runner (`lighteval accelerate`) is
tests/integration/test_harness_lighteval.py."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("lighteval")

from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.runtime import cache
from q2_metric.testing.scripted import scripted_scorer

KNOWLEDGE = "Bob Ross hosted The Joy of Painting on PBS. The show aired in Canada."
REPLIES = [
    "Bob Ross hosted the show on PBS.",
    "",
    "It aired in Canada.",
    "He painted on PBS.",
    "Ross hosted it.",
]


def _docs(knowledge=None):
    from q2_metric.harness.lighteval_task import wow_prompt

    docs = []
    for n in range(len(REPLIES)):
        row = {
            "topic": "Bob Ross",
            "message": f"Tell me more ({n}).",
            "knowledge": KNOWLEDGE,
            "q2_key": f"row {n + 1}",
        }
        if knowledge is not None and n in knowledge:
            row["knowledge"] = knowledge[n]
        doc = wow_prompt(row, "q2_wow|0")
        doc.id = str(n)
        docs.append(doc)
    return docs


def _responses(replies=REPLIES):
    from lighteval.models.model_output import ModelResponse

    return [ModelResponse(text=[r]) for r in replies]


def _run(metrics, docs, responses):
    """What LightEval's pipeline does with a task's batch: `apply_metric`, then its aggregation."""
    from lighteval.logging.info_loggers import MetricsLogger
    from lighteval.metrics import apply_metric

    outputs = apply_metric(responses=responses, docs=docs, metrics=metrics)
    logger = MetricsLogger()
    for output in outputs:
        logger.log("q2_wow|0", output)

    class Task:
        def aggregation(self):
            return {k: v for m in metrics for k, v in m.get_corpus_aggregations().items()}

    logger.aggregate({"q2_wow|0": Task()}, bootstrap_iters=0)
    return outputs, dict(logger.metric_aggregated["q2_wow|0"])


def _nan(v):
    return None if v is None or math.isnan(v) else v


def test_one_engine_call_for_every_figure_values_counts_and_signature(scripted, capsys):
    from q2_metric.harness.lighteval_task import FIGURES, q2_metrics

    metrics = q2_metrics(tiny=False)
    assert [m.metric_name for m in metrics] == list(FIGURES) and all(m.batched_compute for m in metrics)
    docs = _docs()
    outputs, results = _run(metrics, docs, _responses())
    assert scripted.engine_calls == 1  # six figures, one engine call
    want = scripted_scorer().score(REPLIES, [KNOWLEDGE] * len(REPLIES))
    assert [_nan(o["q2"]) for o in outputs] == [_nan(w) for w in want.scores]
    assert [_nan(o["q2_no_nli"]) for o in outputs] == [_nan(r.q2_no_nli) for r in want.responses]
    assert [o["empty"] for o in outputs] == [0, 1, 0, 0, 0]
    # the figures over the scored samples: the engine's system figures; the counts summed
    assert math.isclose(results["q2"], want.system.q2) and math.isclose(
        results["q2_no_nli"], want.system.q2_no_nli
    )
    assert math.isclose(results["coverage"], want.system.coverage)
    assert (results["scored"], results["empty"], results["bad"]) == (4, 1, 0)
    assert "q2_stderr" in results and not math.isnan(results["q2_stderr"])
    # each doc: its status, reason and spans, and the FULL signature (so the saved details hold them)
    for doc, response in zip(docs, want.responses):
        s = doc.specific
        assert s["q2_signature"] == str(want.signature) and s["q2_key"] == f"row {int(doc.id) + 1}"
        fields = ("start", "end", "text", "supported", "question")
        assert [tuple(x[f] for f in fields) for x in s["q2_spans"]] == [
            tuple(getattr(x, f) for f in fields) for x in response.spans
        ]
        assert s["q2_reason"] == response.reason and s["q2_verdict"] in (
            "consistent",
            "inconsistent",
            "unverified",
        )
    assert [d.specific["q2_status"] for d in docs] == ["scored", "empty", "scored", "scored", "scored"]
    assert docs[1].specific["q2_reason"] and docs[0].specific["q2_reason"]
    assert any(d.specific["q2_spans"] for d in docs)
    err = capsys.readouterr().err
    assert "Q²: 4 scored, 1 empty (unscored), 0 bad" in err and f"Q² signature: {want.signature}" in err


def test_max_batch_splits_the_engine_calls(scripted):
    from q2_metric.harness.lighteval_task import q2_metrics

    outputs, results = _run(q2_metrics(tiny=False, max_batch=2), _docs(), _responses())
    assert scripted.engine_calls == 3  # ceil(5 / 2), shared by the six figures
    want = scripted_scorer().score(REPLIES, [KNOWLEDGE] * len(REPLIES))
    assert [_nan(o["q2"]) for o in outputs] == [_nan(w) for w in want.scores]
    assert math.isclose(results["q2"], want.system.q2)


def test_a_sample_whose_knowledge_is_no_text_is_bad_alone(scripted):
    from q2_metric.harness.lighteval_task import q2_metrics

    docs = _docs(knowledge={2: 7})
    outputs, results = _run(q2_metrics(tiny=False), docs, _responses())
    assert [d.specific["q2_status"] for d in docs] == ["scored", "empty", "bad", "scored", "scored"]
    error = docs[2].specific["q2_reason"]
    assert error.startswith("row 3: field 'knowledge'") and "int" in error, error
    assert math.isnan(outputs[2]["q2"]) and outputs[2]["bad"] == 1
    assert (results["scored"], results["empty"], results["bad"]) == (3, 1, 1)
    good = [0, 3, 4]
    want = scripted_scorer().score([REPLIES[i] for i in good], [KNOWLEDGE] * len(good))
    assert [outputs[i]["q2"] for i in good] == want.scores


def test_knowledge_falls_back_to_the_references(scripted):
    from lighteval.tasks.requests import Doc

    from q2_metric.harness.lighteval_task import q2_metrics

    doc = Doc(
        query="Tell me about Bob Ross.",
        choices=["Bob Ross hosted", "The Joy of Painting."],
        gold_index=[0, 1],
    )
    doc.id = "a"
    outputs, _ = _run(q2_metrics(tiny=False), [doc], _responses(["Bob Ross hosted the show."]))
    want = scripted_scorer().score(["Bob Ross hosted the show."], ["Bob Ross hosted The Joy of Painting."])
    assert outputs[0]["q2"] == want.scores[0]
    assert doc.specific["q2_status"] == "scored" and doc.specific["q2_reason"]


def test_options_are_keywords_checked_with_the_models_when_the_metrics_are_built(tmp_path, monkeypatch):
    from q2_metric.harness.lighteval_task import q2_metrics, wow_task

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    missing = str(tmp_path / "no-qg")
    with pytest.raises(ModelNotAvailable) as err:
        wow_task(tiny=True, qg_model=missing)
    text = str(err.value)
    assert missing in text and "qg_model" in text and "--qg-model" not in text and "\n" not in text
    with pytest.raises(Q2OptionError, match="Invalid Q² option qg_batch_size=0"):
        q2_metrics(tiny=True, options={"qg_batch_size": 0})
    with pytest.raises(Q2OptionError, match="given twice"):
        q2_metrics(tiny=True, options={"tiny": False})
    cache.reset()


def test_the_task_reads_the_bundled_sample_through_the_package_reader(scripted):
    import copy

    from lighteval.tasks.lighteval_task import LightevalTask

    import q2_metric.harness.lighteval_task as module

    rows = module.wow_rows()
    assert len(rows) == 40 and rows[0]["q2_key"] == "row 1" and rows[-1]["q2_key"] == "row 40"
    config = module.wow_task(tiny=False)
    task = LightevalTask(copy.deepcopy(config))  # as LightEval's registry copies it
    LightevalTask.load_datasets({"t": task})
    docs = task.eval_docs()
    assert [d.specific["knowledge"] for d in docs] == [r["knowledge"] for r in rows]
    assert docs[0].query.startswith("Topic: ") and docs[0].query.endswith("\nWizard:")
    assert "TASKS_TABLE" not in vars(module) or module.TASKS_TABLE  # built on first use only
