"""build_config: Q2_TINY and the tiny switch; a model named explicitly is kept."""

from __future__ import annotations

import pytest

from q2_metric.errors import Q2OptionError


def test_q2_tiny_environment_variable_everywhere(tiny_env, monkeypatch):
    from q2_metric.options import build_config

    paper = build_config()
    assert not paper.qg_model.startswith(str(tiny_env))
    monkeypatch.setenv("Q2_TINY", "1")
    config = build_config()
    assert config.qg_model == str(tiny_env / "qg") and config.max_question_length == 16
    assert build_config(tiny=False).qg_model == paper.qg_model  # the switch wins over the variable
    # a model named explicitly is kept
    assert build_config(options={"nli_model": "/elsewhere"}).nli_model == "/elsewhere"


def test_the_one_merge_of_adapter_keywords_and_options():
    from q2_metric.options import ADAPTER_KEYWORDS, merge_options

    assert set(ADAPTER_KEYWORDS) >= {"variant", "tiny", "batch_size", "max_batch", "qg_model", "device"}
    assert merge_options({"tiny": True, "device": None}, {"qg_model": "D"}) == {"qg_model": "D", "tiny": True}
    assert merge_options({"tiny": True}, {"tiny": True}) == {"tiny": True}  # the same value twice is fine
    assert merge_options({"tiny": True}) == {"tiny": True}
    with pytest.raises(Q2OptionError) as err:
        merge_options({"max_batch": 4}, {"max_batch": 8})
    assert str(err.value) == (
        "The Q² option max_batch is given twice with different values (max_batch=4 and "
        "options['max_batch']=8); give it once."
    )
    with pytest.raises(Q2OptionError) as err:
        merge_options({"tiny": True}, {"tiny": False}, spell=lambda n: f"-S {n}")
    assert "(-S tiny=True and -S options['tiny']=False)" in str(err.value)
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option options=\[1\]: use a mapping"):
        merge_options({}, [1])
