"""Inspect AI's `q2()` scorer and `q2_wow` task (q2_metric.harness.inspect_task) on scripted
components: each sample checked alone, under its own id; empty knowledge never replaced by the
target; list targets joined; the Q² options in `-T`/`-S` words, checked with the models when the
task or scorer is built. The yardstick is `Q2Scorer.score` called directly on the same pairs."""

from __future__ import annotations

import asyncio
import math

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai._util.error import PrerequisiteError
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import SampleScore, Target
from inspect_ai.solver import TaskState

from q2_metric.display import reason_line
from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.harness import inspect_task as I
from q2_metric.runtime import cache
from q2_metric.testing.scripted import scripted_scorer

KNOWLEDGE = "Bob Ross hosted The Joy of Painting on PBS."


def state(sample_id, reply, metadata=None, target=""):
    return TaskState(
        ModelName("mockllm/model"),
        sample_id,
        1,
        "hi",
        [],
        target=Target(target),
        output=ModelOutput.from_content("mockllm/model", reply),
        metadata=metadata,
    )


def run(scorer, states):
    async def go():
        return await asyncio.gather(*(scorer(s, s.target) for s in states))

    return asyncio.run(go())


def test_each_sample_alone_under_its_own_id(scripted):
    scorer = I.q2(tiny=False, max_wait=0.5)
    states = [
        state("a", "Bob Ross hosted the show on PBS.", {"knowledge": KNOWLEDGE}),
        state("b", "He painted trees.", {"knowledge": ["not", 7]}),  # a list of passages is joined
        state("c", "Bob Ross hosted the show on PBS.", {"knowledge": ""}, target=KNOWLEDGE),
        state(7, "", {"knowledge": KNOWLEDGE}),
        state(
            "e", "Bob Ross hosted the show on PBS.", None, target=["Bob Ross hosted", "The Joy of Painting."]
        ),
    ]
    got = run(scorer, states)
    assert scripted.engine_calls == 1  # one batch: the bad sample did not fail the others
    status = [g.metadata["q2_status"] for g in got]
    assert status == ["scored", "bad", "empty", "empty", "scored"]
    assert got[1].explanation == "sample 'b': field 'knowledge' must be a string, got list."
    assert math.isnan(got[1].value) and got[1].metadata["q2_error"] == got[1].explanation
    # empty knowledge in the metadata is empty: never scored against the target
    assert math.isnan(got[2].value) and got[2].reason == "no_knowledge"
    assert math.isnan(got[3].value) and got[3].reason == "no_response"
    want = scripted_scorer().score(
        ["Bob Ross hosted the show on PBS.", "Bob Ross hosted the show on PBS."],
        [KNOWLEDGE, "Bob Ross hosted The Joy of Painting."],
    )
    assert got[0].value == want.scores[0] and got[0].explanation == reason_line(want.responses[0])
    assert got[4].value == want.scores[1]  # the list target joined by a space
    # the spans (issue 43): the engine's for the same pair, in the reply as given; none when bad
    fields = ("start", "end", "text", "supported", "question")
    assert [tuple(s[f] for f in fields) for s in got[0].metadata["q2_spans"]] == [
        tuple(getattr(s, f) for f in fields) for s in want.responses[0].spans
    ] and got[0].metadata["q2_spans"]
    assert all(
        states[0].output.completion[s["start"] : s["end"]] == s["text"] for s in got[0].metadata["q2_spans"]
    )
    assert got[3].metadata["q2_spans"] == [] and got[1].metadata["q2_spans"] == []
    # the record's verdict (at 0.5) and reason
    assert [g.metadata["q2_verdict"] for g in got][1:4] == ["unverified"] * 3
    assert got[0].metadata["q2_verdict"] == ("consistent" if want.scores[0] > 0.5 else "inconsistent")
    assert got[0].metadata["q2_reason"] == got[0].explanation
    for g in got:
        assert g.metadata["q2_signature"] == str(want.signature)
    scores = [SampleScore(score=g, sample_id=s.sample_id) for g, s in zip(got, states)]
    assert I.q2_mean()(scores) == pytest.approx((want.scores[0] + want.scores[1]) / 2)
    from inspect_ai._util.registry import registry_info  # what Inspect copies into EvalScore.metadata

    assert registry_info(scorer).metadata["q2_counts"] == {"scored": 2, "empty": 2, "bad": 1}
    assert registry_info(scorer).metadata["q2_signature"] == str(want.signature)


def test_the_scorer_takes_options_by_name_and_in_options(scripted):
    scorer = I.q2(options={"tiny": False}, max_batch=2)
    assert run(scorer, [state(1, "Bob Ross.", {"knowledge": KNOWLEDGE})])[0].metadata["q2_status"] == "scored"
    with pytest.raises(Q2OptionError) as err:
        I.q2(tiny=False, qg_batch_size=0)
    assert isinstance(err.value, PrerequisiteError)  # Inspect prints its sentence, no traceback, exit 1
    assert str(err.value).startswith("Invalid Q² option -S qg_batch_size=0") and "\n" not in str(err.value)
    with pytest.raises(TypeError, match="-S qg_batchsize"):  # an unknown name: also a TypeError
        I.q2(tiny=False, qg_batchsize=3)
    with pytest.raises(Q2OptionError, match="given twice"):
        I.q2(tiny=False, options={"tiny": True})
    with pytest.raises(Q2OptionError, match="-S max_wait"):
        I.q2(tiny=False, max_wait=-1)


def test_a_missing_model_fails_when_the_task_is_built_naming_its_option(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    missing = str(tmp_path / "no-qg")
    with pytest.raises(ModelNotAvailable) as err:
        I.q2_wow(limit=2, tiny=True, qg_model=missing)
    assert isinstance(err.value, PrerequisiteError)
    text = str(err.value)
    assert missing in text and "-T qg_model" in text and "--qg-model" not in text and "\n" not in text
    with pytest.raises(ModelNotAvailable, match="-S qg_model"):
        I.q2(tiny=True, options={"qg_model": missing})
    cache.reset()


def test_q2_wow_takes_the_model_options_in_inspects_words(tmp_path, tiny_env, monkeypatch):
    """`-T qg_model=DIR` (any Q² option by name) and `-T options={...}` reach the scorer."""
    from q2_metric.models.tiny import ensure_tiny_models

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    paths = ensure_tiny_models()
    task = I.q2_wow(limit=2, tiny=False, qg_model=paths["qg"], qa_model=paths["qa"], nli_model=paths["nli"])
    (e,) = cache.engines()
    assert (e.config.qg_model, e.config.qa_model, e.config.nli_model) == (
        paths["qg"],
        paths["qa"],
        paths["nli"],
    )
    assert len(task.dataset) == 2
    cache.reset()
    I.q2_wow(
        limit=2,
        options={"tiny": False, "qg_model": paths["qg"], "qa_model": paths["qa"], "nli_model": paths["nli"]},
    )
    (e,) = cache.engines()
    assert e.config.qg_model == paths["qg"]
    cache.reset()
