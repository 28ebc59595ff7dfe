"""The runtime's one cache (`q2_metric.runtime.cache`): options through the contract's options path,
the models checked in the front-end's words, one engine and one micro-batcher per configuration."""

from __future__ import annotations

import pytest

from q2_metric import Q2Config
from q2_metric.errors import Q2OptionError
from q2_metric.runtime import cache
from q2_metric.runtime.cache import runtime_config


def test_harness_options_go_through_the_options_path():
    config, max_batch = runtime_config(
        {"variant": "dnli", "batch_size": 4, "max_batch": 8, "decoding": "greedy", "tiny": False}
    )
    assert config == Q2Config.dnli(qg_batch_size=4, qa_batch_size=4, nli_batch_size=4, decoding="greedy")
    assert max_batch == 8
    assert runtime_config({"tiny": False}) == (Q2Config(), None)  # None: the adapter's default
    with pytest.raises(ValueError, match="decoding"):
        runtime_config({"decoding": "sampling", "tiny": False})
    with pytest.raises(TypeError, match="not a Q² option"):
        runtime_config({"num_beam": 3, "tiny": False})
    with pytest.raises(ValueError, match="max_batch"):
        runtime_config({"max_batch": 0, "tiny": False})
    # each error one sentence naming the option as the harness spells it
    spell = lambda name: f"-S {name}"  # noqa: E731 (a one-line speller, as the adapters pass them)
    with pytest.raises(Q2OptionError) as err:
        runtime_config({"qg_batch_size": 0, "tiny": False}, spell)
    assert (
        str(err.value).startswith("Invalid Q² option -S qg_batch_size=0") and str(err.value).count(". ") == 0
    )
    with pytest.raises(Q2OptionError, match="-S max_batch"):
        runtime_config({"max_batch": True, "tiny": False}, spell)


def test_a_missing_model_is_one_sentence_in_the_harness_words_before_any_work(tmp_path, monkeypatch):
    """`engine_for(..., check=True)`: the models checked when the harness builds its scorer."""
    from q2_metric.errors import ModelNotAvailable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ModelNotAvailable) as err:
        cache.engine_for(
            {"qg_model": missing, "tiny": False},
            spell=lambda n: f"-T {n}",
            check=True,
            tiny_hint="`-T tiny=true`",
        )
    text = str(err.value)
    assert missing in text and "-T qg_model" in text and "--qg-model" not in text and "\n" not in text
    cache.reset()


def test_one_engine_and_one_micro_batcher_per_configuration_and_policy(monkeypatch):
    """Every adapter finds the same engine (one model load) and, for the same policy and progress,
    the same micro-batcher (copies of a metric share their engine calls)."""
    from q2_metric.testing.scripted import scripted_scorer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    try:
        config, _ = runtime_config({"tiny": False})
        cache.engine(config).scorer = scripted_scorer()  # no model files: the check passes
        first_engine, first = cache.micro_batcher({"tiny": False}, max_wait=0.5)
        again_engine, again = cache.micro_batcher({"tiny": False, "max_batch": None}, max_wait=0.5)
        assert again is first and again_engine is first_engine and cache.engines() == [first_engine]
        _, other_wait = cache.micro_batcher({"tiny": False}, max_wait=0.25)
        _, other_size = cache.micro_batcher({"tiny": False, "max_batch": 3}, max_wait=0.5)
        _, with_lines = cache.micro_batcher({"tiny": False}, max_wait=0.5, progress=True)
        found = {id(b) for b in (first, other_wait, other_size, with_lines)}
        assert len(found) == 4 and {b.engine for b in (other_wait, other_size, with_lines)} == {first_engine}
        assert (other_size.policy.max_batch, other_wait.policy.max_wait) == (3, 0.25)
        assert first.progress is None and with_lines.progress is not None
        # the max_wait check comes first, in the adapter's words, before any option or model
        with pytest.raises(Q2OptionError, match=r"^Invalid Q² option -S max_wait=-1: "):
            cache.micro_batcher(
                {"qg_model": "/nowhere", "tiny": False}, max_wait=-1, spell=lambda n: f"-S {n}"
            )
    finally:
        cache.reset()
