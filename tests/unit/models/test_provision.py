"""The one model-provision path: `Q2Config(tiny=True)` -> tiny random models, built once.

What is expected comes from the rule as documented (models left at their defaults are replaced,
named ones kept; questions capped at 16 tokens unless another cap is set), not from the code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from q2_metric.config import DEFAULT_QG_MODEL, Q2Config
from q2_metric.models.provision import provide_models
from q2_metric.options import build_config


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("Q2_TINY_MODELS", str(folder))
        yield folder


def test_without_tiny_nothing_changes(monkeypatch):
    monkeypatch.delenv("Q2_TINY", raising=False)
    config = Q2Config()
    assert config.tiny is False and provide_models(config) is config
    assert config.qg_model == DEFAULT_QG_MODEL


def test_tiny_replaces_the_default_models_and_caps_questions(tiny_dir):
    config = provide_models(Q2Config(tiny=True, nli_model="my/nli"))
    assert config.qg_model == str(tiny_dir / "qg") and config.qa_model == str(tiny_dir / "qa")
    assert config.nli_model == "my/nli"  # named: kept
    assert config.max_question_length == 16
    assert provide_models(config) == config  # idempotent
    assert json.loads((tiny_dir / "qg" / "config.json").read_text())["q2_tiny_random"] is True
    assert not (tiny_dir / "coref").exists()  # built only when coref is asked for


def test_tiny_with_coref_provides_a_tiny_coreference_model(tiny_dir):
    config = provide_models(Q2Config(tiny=True, coref=True))
    assert config.coref_model == str(tiny_dir / "coref")
    assert json.loads((tiny_dir / "coref" / "config.json").read_text())["q2_tiny_random"] is True


def test_a_cap_the_user_set_is_kept(tiny_dir):
    assert provide_models(Q2Config(tiny=True, max_question_length=8)).max_question_length == 8


def test_the_environment_and_every_config_path_agree(tiny_dir, monkeypatch):
    monkeypatch.setenv("Q2_TINY", "1")
    assert Q2Config().tiny is True
    assert build_config().qg_model == str(tiny_dir / "qg")
    monkeypatch.setenv("Q2_TINY", "0")
    assert build_config(tiny=True).qa_model == str(tiny_dir / "qa")
    assert build_config().qa_model != str(tiny_dir / "qa")


def test_q2config_tiny_and_score_tiny_work(tiny_dir):
    """Before 0.4.0 both raised TypeError although the README said every front-end takes tiny."""
    from q2_metric import Q2Scorer, score

    scorer = Q2Scorer(Q2Config(tiny=True, device="cpu"))
    assert scorer.config.qg_model == str(tiny_dir / "qg")
    result = score(
        ["Bob Ross hosted the show."], ["Bob Ross hosted The Joy of Painting."], tiny=True, device="cpu"
    )
    assert 0.0 <= result.q2 <= 1.0
    assert "models:tiny-random" in result.signature.short()


def test_a_foreign_model_folder_in_the_tiny_folder_is_refused(tmp_path, monkeypatch):
    from q2_metric.errors import Q2InputError

    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "config.json").write_text("{}")
    monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path))
    with pytest.raises(Q2InputError, match="is not a tiny model this package built"):
        provide_models(Q2Config(tiny=True))
    assert (tmp_path / "qa" / "config.json").read_text() == "{}"
    assert not Path(tmp_path / "qg").exists()
