"""The evaluate module's inputs: lone surrogates and control characters, an empty compute, several
references per prediction (expected: the best of the single-reference scores)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def metric():
    import evaluate

    import q2_metric

    return evaluate.load(q2_metric.module_path())


@pytest.fixture(scope="module")
def opts(tiny_config):
    return dict(
        qg_model=tiny_config.qg_model,
        qa_model=tiny_config.qa_model,
        nli_model=tiny_config.nli_model,
        device="cpu",
        decoding="greedy",
        max_question_length=8,
        progress=False,
    )


def test_evaluate_lone_surrogate_and_empty_compute_signature(metric, opts):
    results = metric.compute(
        predictions=["Bob\ud800 Ross hosted the show.", "Bob \x1b[31mRoss\x00 hosted it."],
        references=["Bob Ross hosted it.", "Bob Ross\x7f hosted\x0b it."],
        **opts,
    )
    assert results["num_scored"] == 2  # control characters go to the models as they are
    empty = metric.compute(predictions=[], references=[], **opts)
    assert empty["num_responses"] == 0
    for role in ("qg", "qa", "nli"):  # the model digests, as in a call that scores something
        assert f"|{role}:local-" in empty["signature"]  # a local model is named by its digest
    assert empty["signature"] == results["signature"]


def test_evaluate_references_as_passages_are_joined_as_every_front_end_joins_them(metric, opts, rows):
    """A list of passages per prediction is one knowledge text, the passages joined by a space
    (the rule of every front-end, issue 49; before: the best single reference). Expected: the
    same call with the joined strings written out by hand."""
    preds = [r["response"] for r in rows[:3]]
    refs = [
        [rows[0]["knowledge"], rows[1]["knowledge"]],
        [rows[1]["knowledge"]],
        ["", rows[2]["knowledge"], rows[0]["knowledge"]],
    ]
    joined = [
        rows[0]["knowledge"] + " " + rows[1]["knowledge"],
        rows[1]["knowledge"],
        " " + rows[2]["knowledge"] + " " + rows[0]["knowledge"],
    ]
    multi = metric.compute(predictions=preds, references=refs, **opts)
    assert multi["scores"] == metric.compute(predictions=preds, references=joined, **opts)["scores"]
    assert multi["num_responses"] == 3 and "best_reference" not in multi
    empty = metric.compute(predictions=["a"], references=[[]], **opts)  # no passage: empty knowledge
    assert empty["scores"] == [None] and empty["num_skipped"] == 1
