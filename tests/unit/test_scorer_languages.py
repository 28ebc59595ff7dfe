"""The language's model set wired into the engine: per role the set's model, its QG input, QA
answers sliced from the text, its candidate extractors (the one that runs named in the signature)
and its token rules in the two stages that compare answers; English keeps the paper's path."""

import json

import pytest

from q2_metric import Q2Scorer
from q2_metric.errors import ModelNotAvailable
from q2_metric.frontend import Item, score_items
from q2_metric.steps.normalize import TokenRules

GERMAN = (
    "Der Rhein fließt seit 2019 durch Basel und Köln.",
    "Der Rhein fließt seit 2019 durch Basel und Köln.",
)


@pytest.fixture(scope="module")
def german(tiny_dir):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("Q2_TINY_MODELS", str(tiny_dir))
        yield Q2Scorer(tiny=True, language="de", device="cpu")


def test_english_keeps_the_papers_path(tiny_config):
    scorer = Q2Scorer(tiny_config)
    assert scorer.language_set() is None and scorer.token_rules() is None and scorer.candidate_specs() is None
    assert type(scorer.parser).__name__ == "SpacyParser" and scorer.qg.prompt == "q2"
    assert not scorer.qa.exact_offsets


def test_each_role_takes_the_sets_path(german):
    assert german.candidate_specs() == ("token-classification:tiny:ner-multilingual", "rules")
    assert german.parser.name == "token-classification:tiny:ner-multilingual"
    assert german.qg.prompt == "lmqg-highlight" and german.qa.exact_offsets
    assert german.token_rules() == TokenRules(
        "words",
        True,
        ("der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines"),
    )
    outcome = score_items(german, [Item("row 1", *GERMAN)])
    record = outcome.records()[0]
    assert record.status == "scored"
    fields = outcome.signature.to_dict()
    assert fields["lang"] == "de" and fields["parser"] == "token-classification:tiny:ner-multilingual"
    assert fields["qaspan"] == "squad2-exact"
    assert "2019" in [s.text for s in record.spans]  # numbers by rule beside the entities
    for span in record.spans:
        assert GERMAN[0][span.start : span.end] == span.text


def test_the_token_rules_reach_both_answer_stages(german, monkeypatch):
    import q2_metric.scorer as engine

    seen = []
    for name in ("filter_questions", "answer_from_knowledge"):
        real = getattr(engine, name)
        monkeypatch.setattr(
            engine,
            name,
            lambda *a, _real=real, _name=name, **k: seen.append((_name, k["rules"])) or _real(*a, **k),
        )
    score_items(german, [Item("row 1", *GERMAN)])
    assert {name for name, _ in seen} == {"filter_questions", "answer_from_knowledge"}
    assert all(rules == german.token_rules() for _, rules in seen)


def test_the_first_available_extractor_runs_and_none_available_is_one_sentence(tmp_path, tiny_models):
    entry = {
        "qg": {"model": tiny_models["qg"], "prompt": "q2"},
        "qa": {"model": tiny_models["qa"]},
        "nli": {"model": tiny_models["nli"]},
        "candidates": ["spacy:xx_no_such_pipeline", "rules"],
        "tokens": {"split": "words"},
        "figures": "not measured",
    }
    path = tmp_path / "sets.json"
    path.write_text(json.dumps({"sv": entry}), encoding="utf-8")
    scorer = Q2Scorer(language="sv", model_sets=str(path), device="cpu")
    assert scorer.check_models()["parser"] == "rules"
    entry["candidates"] = ["spacy:xx_no_such_pipeline"]
    path.write_text(json.dumps({"sv": entry}), encoding="utf-8")
    with pytest.raises(
        ModelNotAvailable,
        match=r"None of the answer-candidate extractors spacy:xx_no_such_pipeline is available",
    ):
        Q2Scorer(language="sv", model_sets=str(path), device="cpu").check_models()
