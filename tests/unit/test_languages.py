"""The model-set table: the bundled entries, a user's file, and the schema's one sentence per
problem naming the file, the entry and the field."""

import json

import pytest

from q2_metric.config import DEFAULT_NLI_MODEL, DEFAULT_QA_MODEL, DEFAULT_QG_MODEL
from q2_metric.errors import Q2OptionError
from q2_metric.languages import NOT_MEASURED, check_entry, model_set, model_sets, read_sets

ISSUE_LANGUAGES = ("de", "es", "fr", "it", "ja", "ko", "ru", "zh", "ar")


def good_entry(**changes):
    entry = {
        "qg": {"model": "some/qg", "prompt": "lmqg-highlight"},
        "qa": {"model": "some/qa"},
        "nli": {"model": "some/nli"},
        "candidates": ["spacy:sv_core_news_sm", "rules"],
        "tokens": {"split": "words", "lowercase": True, "articles": ["en", "ett"]},
        "figures": "not measured",
    }
    entry.update(changes)
    return entry


def test_english_is_the_papers_set():
    en = model_set("en")
    assert (en.qg, en.qa, en.nli, en.qg_prompt) == (
        DEFAULT_QG_MODEL,
        DEFAULT_QA_MODEL,
        DEFAULT_NLI_MODEL,
        "q2",
    )
    assert en.tokens.articles == ("a", "an", "the") and en.tokens.split == "words"


def test_the_issues_languages_have_the_public_models_and_no_figures_yet():
    sets = model_sets()
    for code in ISSUE_LANGUAGES:
        s = sets[code]
        assert s.qa == "deepset/xlm-roberta-large-squad2", code
        assert s.nli == "MoritzLaurer/mDeBERTa-v3-base-mnli-xnli", code
        assert s.qg_prompt == "lmqg-highlight" and s.qg.startswith("lmqg/mt5-base-"), code
        assert s.figures == NOT_MEASURED and not s.measured and s.measure, code
        assert s.candidates[-1] == "rules", code
    for code in ("de", "es", "fr", "it", "ja", "ko", "ru"):  # QG-Bench's languages: their own QG
        assert sets[code].qg == f"lmqg/mt5-base-{code}quad-qg"
    for code in ("zh", "ar"):  # none in QG-Bench: said in the entry
        assert "zero-shot" in sets[code].note
    assert sets["zh"].tokens.split == sets["ja"].tokens.split == "characters"


def test_a_users_file_adds_and_replaces_entries(tmp_path):
    path = tmp_path / "sets.json"
    path.write_text(
        json.dumps({"_comment": "mine", "sv": good_entry(), "de": good_entry()}), encoding="utf-8"
    )
    sets = model_sets(path)
    assert sets["sv"].qg == "some/qg" and sets["sv"].source == str(path)
    assert sets["de"].qa == "some/qa"  # the user's entry replaces the bundled one
    assert model_sets()["de"].qa == "deepset/xlm-roberta-large-squad2"  # the bundled table unchanged
    assert model_set("sv", path).tokens.articles == ("en", "ett")


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        (good_entry(qg={"prompt": "q2"}), "qg.model"),
        (good_entry(qg={"model": "m", "prompt": "free"}), "qg.prompt"),
        (good_entry(qa="deepset/x"), "qa.model"),
        (good_entry(nli={"model": "  "}), "nli.model"),
        (good_entry(candidates=[]), "candidates"),
        (good_entry(candidates=["stanza:sv"]), "candidates"),
        (good_entry(tokens={"split": "syllables"}), "tokens.split"),
        (good_entry(tokens={"split": "words", "lowercase": "yes"}), "tokens.lowercase"),
        (good_entry(tokens={"split": "words", "articles": "en"}), "tokens.articles"),
        (good_entry(figures={"value": 0.5}), "figures"),
        (good_entry(figures="soon"), "figures"),
        (good_entry(extra=1), "extra"),
    ],
)
def test_a_bad_entry_is_one_sentence_naming_the_file_the_entry_and_the_field(tmp_path, entry, field):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"sv": entry}), encoding="utf-8")
    with pytest.raises(Q2OptionError) as caught:
        read_sets(path)
    text = str(caught.value)
    assert text.startswith(f"The model set 'sv' of {path}: field '{field}' ")
    assert text.endswith(".") and text.count(". ") == 0 and "\n" not in text


def test_a_bad_file_is_one_sentence(tmp_path):
    for content, words in (
        ("{", "is not JSON"),
        ("[1]", "must hold a JSON object"),
        ('{"Swedish": {}}', "no language code"),
    ):
        path = tmp_path / "f.json"
        path.write_text(content, encoding="utf-8")
        with pytest.raises(Q2OptionError, match=words):
            read_sets(path)
    with pytest.raises(Q2OptionError, match="cannot be read"):
        read_sets(tmp_path / "missing.json")


def test_a_language_without_a_set_is_one_sentence_naming_the_sets():
    with pytest.raises(
        Q2OptionError,
        match=r"^Invalid Q² option language='sv': no model set for it \(there are sets for ar, de, en",
    ):
        model_set("sv")


def test_figures_measured_are_an_object_of_their_fields():
    figures = {
        "dataset": "seahorse",
        "split": "test",
        "metric": "roc_auc",
        "value": 0.7,
        "command": "q2 meta-eval",
    }
    assert check_entry("sv", good_entry(figures=figures), "x").measured
