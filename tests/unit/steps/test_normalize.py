"""Rule 8: normalisation and token F1."""

import pytest

from q2_metric.steps.normalize import answers_match, f1_score, normalize_answer


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Joy of Painting", "joy of painting"),
        ("in OUR house, an apple!", "house apple"),
        ("  a  the   ", ""),
        ("Théâtre—Paris", "théâtre—paris"),  # only ASCII punctuation is stripped, as in the released code
        ("...!!!", ""),
        ("inside the thing", "inside thing"),  # word boundaries: 'in' inside 'inside' stays
    ],
)
def test_normalize(text, expected):
    assert normalize_answer(text) == expected


def test_f1_hand_computed():
    assert f1_score("The Joy of Painting", "joy of painting, shown") == pytest.approx(6 / 7)
    assert f1_score("Bob Ross", "bob ross") == 1.0
    assert f1_score("Bob Ross", "Ross") == pytest.approx(2 / 3)
    assert f1_score("Paris", "London") == 0.0


def test_f1_empty_prediction_is_zero():
    assert f1_score("Paris", "") == 0.0
    assert f1_score("", "") == 0.0


def test_f1_counts_repeated_tokens_once_each():
    # gold: [new, new, york]; pred: [new, york, york] -> common new:1 york:1 -> P=R=2/3
    assert f1_score("new new york", "new york york") == pytest.approx(2 / 3)


def test_answers_match_after_normalisation():
    assert answers_match("The U.S.", "us")
    assert not answers_match("Paris", "Paris France")
