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


# Token rules per language (`TokenRules`): hand-computed tokens and F1.


def test_token_rules_cjk_characters_f1_by_hand():
    from q2_metric.steps.normalize import TokenRules

    rules = TokenRules(split="characters")
    # gold 8 characters, prediction 2, both in gold: P = 1, R = 2/8, F1 = 2 * 1 * 0.25 / 1.25 = 0.4
    assert f1_score("北京是中国的首都", "北京", rules) == pytest.approx(0.4)
    # the full-width comma is Unicode punctuation (a space); "2021" stays one token, so "2012" differs
    assert rules.tokens("北京，2021年") == ["北", "京", "2021", "年"]
    assert f1_score("2021年", "2012年", rules) == pytest.approx(0.5)  # 1 of 2 tokens in common
    assert f1_score("東京", "大阪", rules) == 0.0
    # with the English rule the unspaced sentence is one token: no partial credit
    assert f1_score("北京是中国的首都", "北京") == 0.0


def test_token_rules_german_articles_f1_by_hand():
    from q2_metric.steps.normalize import TokenRules

    rules = TokenRules.from_entry(
        {"split": "words", "lowercase": True, "articles": ["der", "die", "das", "ein", "eine"]}
    )
    assert rules.tokens("Die Brücke über den Rhein!") == ["brücke", "über", "den", "rhein"]
    # gold: [hauptstadt, deutschlands]; prediction: [hauptstadt]: P = 1, R = 1/2, F1 = 2/3
    assert f1_score("die Hauptstadt Deutschlands", "Eine Hauptstadt", rules) == pytest.approx(2 / 3)
    assert answers_match("Der Rhein", "rhein", rules)
    # a letter with a combining mark equals the precomposed one (NFC); « » „ “ are punctuation
    assert answers_match("Cafe\u0301", "«café»", rules)
    assert f1_score("„Köln“", "Köln", rules) == 1.0
    # English's "the" is no German article: kept
    assert rules.tokens("the Köln") == ["the", "köln"]


def test_token_rules_without_lowercase_and_bad_entries():
    from q2_metric.steps.normalize import TokenRules

    assert TokenRules(lowercase=False, articles=("der",)).tokens("Der Rhein DER") == ["Rhein"]
    with pytest.raises(ValueError, match="split"):
        TokenRules.from_entry({"split": "syllables"})
    with pytest.raises(ValueError, match="unknown keys"):
        TokenRules.from_entry({"articels": ["der"]})
    with pytest.raises(ValueError, match="list of words"):
        TokenRules.from_entry({"articles": "der"})


def test_english_without_rules_is_the_released_rule():
    # no rules: the released code's normalisation, unchanged (ASCII punctuation only, in/our dropped)
    assert f1_score("In the 1980s, our Bob Ross!", "bob ross 1980s") == 1.0
    assert normalize_answer("Théâtre—Paris") == "théâtre—paris"
    assert answers_match("The Joy", "joy")
