"""Q² in another language is its own number: `lang:CODE` in the full and the short signature and
its own fingerprint; the English signature and fingerprint keep their fields as before the option."""

from q2_metric.config import Q2Config
from q2_metric.models.provision import language_models
from q2_metric.signature import Signature, config_fingerprint


def test_english_signs_as_before_and_another_language_signs_lang():
    english = Signature.create(Q2Config())
    assert "lang" not in english.to_dict() and "lang:" not in english.short()
    german = Signature.create(language_models(Q2Config(language="de")))
    fields = german.to_dict()
    assert fields["lang"] == "de"
    assert (fields["qg"], fields["qa"], fields["nli"]) == (
        "lmqg/mt5-base-dequad-qg",
        "deepset/xlm-roberta-large-squad2",
        "MoritzLaurer/mDeBERTa-v3-base-mnli-xnli",
    )
    assert "|lang:de|" in german.short() and "models:custom(qg,qa,nli)" in german.short()
    assert [k for k, _ in german.fields if k != "lang"] == [k for k, _ in english.fields]  # lang added only


def test_the_fingerprint_keys_english_as_before_and_another_language_apart():
    english = Q2Config()
    assert config_fingerprint(Q2Config(language="de")) != config_fingerprint(english)
    assert config_fingerprint(english.replace(model_sets="sets.json")) != config_fingerprint(english)


def test_a_model_named_by_its_own_option_wins_over_the_sets():
    config = language_models(Q2Config(language="de", qa_model="my/qa"))
    assert config.qa_model == "my/qa" and config.qg_model == "lmqg/mt5-base-dequad-qg"
