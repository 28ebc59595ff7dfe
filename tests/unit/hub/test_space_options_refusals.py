"""The Space with a bad `Q2_SPACE_OPTIONS` (issue 36): it starts, and the one message under the Score
button says what is wrong; its tiny-models banner names the variable Q2_TINY=1, not a --tiny flag."""

import pytest

from q2_metric.hub.space import make_app, space_note


def by_id(app, elem_id):
    return next(b for b in app.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def click(app, *inputs):
    fn = next(f for f in app.fns.values() if f.name == "run")
    return fn.fn(*inputs)


@pytest.mark.parametrize(
    "raw, says",
    [
        (
            "{device: cpu}",
            "The Space's variable Q2_SPACE_OPTIONS is not JSON (Expecting property name enclosed in "
            'double quotes): \'{device: cpu}\'; write a JSON object such as {"device": "cpu"}.',
        ),
        (
            '["cpu"]',
            "The Space's variable Q2_SPACE_OPTIONS holds a list ('[\"cpu\"]'), not a JSON object; write one "
            'such as {"device": "cpu"}.',
        ),
        (
            "null",
            "The Space's variable Q2_SPACE_OPTIONS holds null ('null'), not a JSON object; write one such as "
            '{"device": "cpu"}.',
        ),
        (
            '{"devise": "cpu"}',
            "The Space's variable Q2_SPACE_OPTIONS names an unknown option: 'devise' is not a Q² "
            "option (did you mean 'device'?).",
        ),
        ('{"decoding": "sample"}', "Invalid Q² option decoding='sample'"),
    ],
)
def test_a_bad_options_variable_is_the_one_message(monkeypatch, raw, says):
    monkeypatch.setenv("Q2_SPACE_OPTIONS", raw)
    monkeypatch.delenv("Q2_TINY", raising=False)
    app = make_app()  # no exception: the Space starts
    message = by_id(app, "q2-message").value
    assert message.startswith("**Not scored:** ") and says in message and "\n" not in message
    out = click(app, "it aired in canada", "The show aired in Canada.")
    assert out == ("", "", "", [], "", message)


def test_the_banner_names_the_variable_not_a_flag():
    note = space_note()
    assert "--tiny" not in note and "Q2_TINY=1" in note and note.startswith("These scores are meaningless")
