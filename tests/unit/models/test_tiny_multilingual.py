"""The tiny multilingual models reached by id (`tiny:<role>-multilingual`) through the models'
provision, built once and never over a user's files; and German, Chinese and Arabic items scored
end to end through the real backends' generic paths on them, with scores that differ by row."""

from __future__ import annotations

import json

import pytest

from q2_metric.config import Q2Config
from q2_metric.errors import Q2InputError
from q2_metric.models import tiny
from q2_metric.models.provision import provide_model_id, provide_models


@pytest.fixture(scope="module")
def multi_env(tmp_path_factory):
    """Q2_TINY_MODELS pointing at a folder of its own, the multilingual models built there once."""
    folder = tmp_path_factory.mktemp("tiny_env") / "tiny-models"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("Q2_TINY_MODELS", str(folder))
        paths = tiny.ensure_tiny_multilingual_models()
        yield folder, paths


def test_built_once_into_the_multilingual_subfolder_with_the_mark(multi_env):
    folder, paths = multi_env
    assert paths == {r: str(folder / "multilingual" / r) for r in ("qg", "qa", "nli", "ner")}
    for path in paths.values():
        assert json.loads((folder / "multilingual" / path.rsplit("/", 1)[1] / "config.json").read_text())[
            tiny.MARKER
        ]
    stamp = (folder / "multilingual" / "qa" / "config.json").stat().st_mtime_ns
    assert tiny.ensure_tiny_multilingual_models(folder / "multilingual") == paths  # reused
    assert (folder / "multilingual" / "qa" / "config.json").stat().st_mtime_ns == stamp


def test_ids_resolve_through_provision(multi_env):
    _, paths = multi_env
    assert tiny.tiny_model_id("ner") == "tiny:ner-multilingual"
    assert provide_model_id("tiny:ner-multilingual") == paths["ner"]
    assert provide_model_id("Davlan/xlm-roberta-base-ner-hrl") == "Davlan/xlm-roberta-base-ner-hrl"
    config = provide_models(
        Q2Config(
            qg_model="tiny:qg-multilingual",
            qa_model="tiny:qa-multilingual",
            nli_model="tiny:nli-multilingual",
        )
    )
    assert (config.qg_model, config.qa_model, config.nli_model) == (paths["qg"], paths["qa"], paths["nli"])
    assert config.max_question_length == tiny.TINY_QUESTION_LENGTH
    assert tiny.uses_tiny(config)  # the signature's test: these are tiny random models
    assert provide_models(config) == config  # idempotent


def test_an_unknown_tiny_id_is_one_sentence():
    with pytest.raises(Q2InputError, match="names no tiny model; the tiny models are tiny:qg-multilingual"):
        provide_model_id("tiny:pos-multilingual")


def test_a_foreign_folder_is_refused_and_kept(tmp_path):
    folder = tmp_path / "multi"
    (folder / "qa").mkdir(parents=True)
    (folder / "qa" / "config.json").write_text('{"model_type": "xlm-roberta"}')
    with pytest.raises(Q2InputError, match="is not a tiny model this package built"):
        tiny.ensure_tiny_multilingual_models(folder)
    assert (folder / "qa" / "config.json").read_text() == '{"model_type": "xlm-roberta"}'
    assert sorted(p.name for p in folder.iterdir()) == ["qa"]


ITEMS = [  # (response, knowledge)
    ("Die Mauer fiel am 9. November 1989 in Berlin.", "Die Berliner Mauer fiel am 9. November 1989."),
    ("Das Museum öffnet am 5. März 2021 wieder.", "Die Straße führt über die Brücke nach Köln."),
    ("Der Fernsehturm ist 368 Meter hoch.", "Berlin hat etwa 3,7 Millionen Einwohner."),
    ("这座博物馆于2021年3月5日重新开放。", "上海位于长江入海口。这座博物馆于2021年3月5日重新开放。"),
    ("北京是中国的首都，人口约两千一百万。", "东京是日本的首都。富士山高3776米。"),
    ("القاهرة هي عاصمة مصر.", "القاهرة هي عاصمة مصر. يبلغ طول نهر النيل حوالي ٦٦٥٠ كيلومترا."),
    ("افتتح المتحف في ٥ مارس ٢٠٢١.", "الرياض هي عاصمة المملكة العربية السعودية."),
]


def test_items_in_three_scripts_score_end_to_end_by_row(multi_env):
    from q2_metric.models.candidate_extractors import ExtractorParser, resolve_extractor
    from q2_metric.models.hf_nli import HFNLIClassifier
    from q2_metric.models.hf_qa import HFQuestionAnswerer
    from q2_metric.models.hf_qg import HFQuestionGenerator
    from q2_metric.scorer import Q2Scorer

    config = provide_models(
        Q2Config(
            qg_model="tiny:qg-multilingual",
            qa_model="tiny:qa-multilingual",
            nli_model="tiny:nli-multilingual",
            device="cpu",
        )
    )
    extractor = resolve_extractor(
        ["spacy:xx_no_such_pipeline", "token-classification:tiny:ner-multilingual", "rules"]
    )
    assert extractor.name == "token-classification:tiny:ner-multilingual"
    scorer = Q2Scorer(
        config,
        parser=ExtractorParser(extractor),
        qg=HFQuestionGenerator(config, prompt="lmqg-highlight"),
        qa=HFQuestionAnswerer(config, exact_offsets=True),
        nli=HFNLIClassifier(config),
    )
    # `score_checked`: the leaves alone, past the language gate of the item check (items in several
    # languages in one call; the gate's own tests are tests/unit/languages/)
    result = scorer.score_checked([r for r, _ in ITEMS], [k for _, k in ITEMS])
    scores = [round(s, 6) for s in result.scores]
    assert len(scores) == len(ITEMS)
    assert len(set(scores)) >= 3, scores  # rows differ: swapping two would show
    assert sum(bool(r.candidates) for r in result.responses) >= len(ITEMS) - 2
    for (response, _), r in zip(ITEMS, result.responses):
        for text, at in zip(r.candidates, r.candidate_offsets):
            assert at is not None and response[at[0] : at[1]] == text
    # some responses through questions answered on the response as their candidate (valid), in
    # German and Chinese; others through the end-to-end NLI fallback
    assert any(r.valid_questions for r in result.responses) and any(r.fallback for r in result.responses)
    again = scorer.score_checked([r for r, _ in ITEMS[::-1]], [k for _, k in ITEMS[::-1]])
    assert [round(s, 6) for s in again.scores] == scores[::-1]  # another batch, the same scores
