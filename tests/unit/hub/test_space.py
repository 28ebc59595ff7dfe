"""The Space's messages: in the Space's own variables, one message instead of error badges, the legend."""

from __future__ import annotations

import pytest


def test_space_messages_are_made_in_the_space_variables(tmp_path):
    """The Space's words are given where the message is made (its `Spelling`, `space_name`, and its
    pointer to the tiny models), not put in afterwards; the sentence written by hand."""
    from q2_metric.errors import ModelNotAvailable
    from q2_metric.frontend import model_words
    from q2_metric.hub.space import TINY_OFFER, space_name
    from q2_metric.models.checks import check_model

    assert [space_name(n) for n in ("qg_model", "qa_model", "nli_model", "device")] == [
        "the Space's variable Q2_QG_MODEL",
        "the Space's variable Q2_QA_MODEL",
        "the Space's variable Q2_NLI_MODEL",
        "device",  # a key of Q2_SPACE_OPTIONS
    ]
    missing = tmp_path / "missing"
    with pytest.raises(ModelNotAvailable) as err, model_words(space_name, tiny_offer=TINY_OFFER):
        check_model(str(missing), "qg")
    assert str(err.value) == (
        f"The question-generation model path '{missing}' is not a directory with a saved model (nothing "
        "is there); pass a directory written by save_pretrained() as the Space's variable Q2_QG_MODEL; "
        "or set the variable Q2_TINY=1 to try the Space on tiny random models (meaningless scores, no "
        "download)."
    )


def test_space_shows_one_message_not_error_badges(tmp_path):
    from q2_metric.config import Q2Config
    from q2_metric.hub.space import score_or_message
    from q2_metric.scorer import Q2Scorer

    scorer = Q2Scorer(Q2Config(qg_model=str(tmp_path / "missing"), device="cpu"))
    out = score_or_message("a response", "some knowledge", scorer)
    assert out[:5] == ("", "", "", [], "") and out[5].startswith("**Not scored:** ")
    assert out[5].endswith(
        "pass a directory written by save_pretrained() as the Space's variable Q2_QG_MODEL; or set the "
        "variable Q2_TINY=1 to try the Space on tiny random models (meaningless scores, no download)."
    )
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
