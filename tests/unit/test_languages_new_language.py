"""A language is added by data alone: a user's file with one entry (Swedish, on the tiny models the
tests build) scores a Swedish item, signed `lang:sv`; the English set leaves the same item
unverified with its sentence; English items under the Swedish set likewise."""

import json
import math

import pytest

from q2_metric import Q2Config, Q2Scorer
from q2_metric.errors import Q2OptionError
from q2_metric.frontend import Item, score_items
from q2_metric.options import build_config

SWEDISH = "Stockholm är Sveriges huvudstad och största stad, med nästan en miljon invånare."
SWEDISH_KNOWLEDGE = (
    "Stockholm är Sveriges huvudstad. Staden har nästan en miljon invånare och ligger vid Mälaren."
)
ENGLISH = "Bob Ross hosted The Joy of Painting on public television for eleven years."


@pytest.fixture(scope="module")
def swedish_file(tiny_models, tmp_path_factory):
    path = tmp_path_factory.mktemp("sets") / "swedish.json"
    entry = {
        "qg": {"model": tiny_models["qg"], "prompt": "q2"},
        "qa": {"model": tiny_models["qa"]},
        "nli": {"model": tiny_models["nli"]},
        "candidates": ["rules"],
        "tokens": {"split": "words", "lowercase": True, "articles": ["en", "ett"]},
        "figures": "not measured",
    }
    path.write_text(json.dumps({"sv": entry}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def swedish(swedish_file):
    config = build_config(options={"language": "sv", "model_sets": str(swedish_file), "device": "cpu"})
    return Q2Scorer(config.replace(max_question_length=16))


def test_a_swedish_item_is_scored_on_the_swedish_set_written_as_data(swedish, tiny_models):
    assert swedish.config.qg_model == tiny_models["qg"]  # the entry's models, no code
    outcome = score_items(
        swedish, [Item("row 1", SWEDISH, SWEDISH_KNOWLEDGE), Item("row 2", ENGLISH, ENGLISH)]
    )
    sv, en = outcome.records()
    assert sv.status == "scored" and sv.score is not None and sv.verdict in ("consistent", "inconsistent")
    assert "|lang:sv|" in sv.signature and "|lang:sv|" in outcome.signature.short()
    for span in sv.spans:
        assert span.start is not None and span.end is not None and SWEDISH[span.start : span.end] == span.text
    assert en.status == "empty" and en.verdict == "unverified"  # English: not what the Swedish set covers
    assert en.reason == (
        "Not scored: row 2: field 'response' is in English (en), which the Swedish (sv) model set does not cover."
    )


def test_the_english_set_leaves_the_swedish_item_unverified(tiny_config):
    scorer = Q2Scorer(tiny_config)
    record = score_items(scorer, [Item("row 1", SWEDISH, SWEDISH_KNOWLEDGE)]).records()[0]
    assert (record.status, record.verdict, record.score) == ("empty", "unverified", None)
    assert record.reason == (
        "Not scored: row 1: field 'response' is in Swedish (sv), which the English (en) model set does not cover."
    )
    result = scorer.score([SWEDISH], [SWEDISH_KNOWLEDGE])  # the Python API: the same gate
    assert math.isnan(result.scores[0]) and result.responses[0].reason.startswith("Not scored: item 0: field")
    assert "lang:" not in str(result.signature)


def test_a_language_without_an_entry_fails_before_any_model_work():
    with pytest.raises(Q2OptionError, match=r"language='sv': no model set for it"):
        build_config(options={"language": "sv"})
    with pytest.raises(Q2OptionError, match=r"use a language code of two lowercase letters"):
        build_config(options={"language": "Swedish"})
    with pytest.raises(Q2OptionError, match=r"no model set for it"):
        Q2Scorer(language="sv")
    assert Q2Config().language == "en" and Q2Config().model_sets is None
