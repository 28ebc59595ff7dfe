"""The Space's messages: in the Space's own variables, one message instead of error badges, the legend."""

from __future__ import annotations


def test_space_messages_name_the_space_variables():
    from q2_metric.errors import ModelNotAvailable
    from q2_metric.hub.space import space_message

    err = ModelNotAvailable(
        "The question-generation model 'x' is not in the Hugging Face cache and the Hub "
        "cannot be reached: download it or pass a local model directory as qg_model (--qg-model)."
    )
    text = space_message(err)
    assert "Q2_QG_MODEL" in text and "--qg-model" not in text and "Q2_TINY=1" in text


def test_space_shows_one_message_not_error_badges(tmp_path):
    from q2_metric.config import Q2Config
    from q2_metric.hub.space import score_or_message
    from q2_metric.scorer import Q2Scorer

    scorer = Q2Scorer(Q2Config(qg_model=str(tmp_path / "missing"), device="cpu"))
    out = score_or_message("a response", "some knowledge", scorer)
    assert out[:5] == ("", "", "", [], "") and out[5].startswith("**Not scored:** ")
    assert "Q2_QG_MODEL" in out[5]
    long = score_or_message("x" * 1001, "k", scorer)
    assert "1,001 characters long" in long[5]


def test_space_status_legend_explains_every_status():
    from q2_metric.hub.space import STATUS_LEGEND
    from q2_metric.results import DISCARDED, NO_MATCH, PERSONAL, UNUSED, VALID

    for status in (VALID, NO_MATCH, PERSONAL, UNUSED, DISCARDED):
        assert f"**{status}**" in STATUS_LEGEND


def test_space_tiny_from_the_environment(tiny_env, monkeypatch):
    from q2_metric.hub.space import space_config
    from q2_metric.models.tiny import uses_tiny

    monkeypatch.setenv("Q2_TINY", "1")
    assert uses_tiny(space_config())
