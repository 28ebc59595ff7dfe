"""build_config: Q2_TINY and the tiny switch; a model named explicitly is kept."""

from __future__ import annotations


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
