"""Rule 1: answer candidates."""

from q2_metric.components import ParsedText
from q2_metric.config import Q2Config
from q2_metric.models.spacy_parser import SpacyParser
from q2_metric.steps.candidates import answer_candidates


def test_entities_first_then_new_noun_chunks_without_i():
    parsed = ParsedText(
        entities=["Bob Ross", "PBS"], noun_chunks=["bob ross", "I", "the show", "The Show", "pbs"]
    )
    assert answer_candidates(parsed) == ["Bob Ross", "PBS", "the show"]


def test_drop_is_case_insensitive_and_configurable():
    parsed = ParsedText(entities=["I"], noun_chunks=["i", "you", "it"])
    assert answer_candidates(parsed) == ["you", "it"]
    assert answer_candidates(parsed, drop=("i", "you")) == ["it"]


def test_real_spacy_model_batch():
    parser = SpacyParser(Q2Config())
    parsed = parser.parse(
        [
            "Bob Ross became famous on YouTube in the 21st century and I love him.",
            "!!!",
            "Ça va très bien à Paris.",
        ]
    )
    assert answer_candidates(parsed[0]) == ["Bob Ross", "YouTube", "the 21st century", "him"]
    assert answer_candidates(parsed[1]) == []
    assert "Paris" in answer_candidates(parsed[2])
    assert parser.describe().startswith("spacy:en_core_web_sm")
