"""The `evaluate` module: three ways to load it offline, compute, caching, add_batch, errors."""

import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import evaluate
import pytest
import yaml

import q2_metric
from q2_metric import Q2InputError, card_text
from q2_metric.scorer import _CACHE

ROOT = Path(__file__).resolve().parents[1]
KEYS = {"q2", "q2_no_nli", "coverage", "no_answer_share", "num_responses", "num_scored", "num_skipped",
        "num_valid_questions", "scores", "scores_no_nli", "signature"}
PRED = ["bob ross hosted the joy of painting on pbs", "it aired in canada"]
REF = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired in Canada and Europe."]


@pytest.fixture
def opts(tiny_config):
    return dict(qg_model=tiny_config.qg_model, qa_model=tiny_config.qa_model,
                nli_model=tiny_config.nli_model, device="cpu", decoding="greedy", max_question_length=8)


def model_env(tiny_config, tmp_path):
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules"),
            "Q2_QG_MODEL": tiny_config.qg_model, "Q2_QA_MODEL": tiny_config.qa_model,
            "Q2_NLI_MODEL": tiny_config.nli_model}


def test_load_by_module_path_and_compute(opts):
    metric = evaluate.load(q2_metric.module_path())
    results = metric.compute(predictions=PRED, references=REF, **opts)
    assert KEYS <= set(results)
    assert isinstance(results["q2"], float) and 0 <= results["q2"] <= 1
    assert len(results["scores"]) == 2 and all(isinstance(s, float) for s in results["scores"])
    assert results["signature"].startswith("q2:") and "details" not in results
    detailed = metric.compute(predictions=PRED, references=REF, return_details=True, **opts)
    assert detailed["details"][0]["candidates"] and "questions" in detailed["details"][0]


def test_info_fields():
    info = evaluate.load(q2_metric.module_path()).info
    assert info.citation == card_text.CITATION and info.description == card_text.DESCRIPTION
    assert set(info.features) == {"predictions", "references"} and info.license == "MIT"
    assert info.homepage and info.codebase_urls and "Examples:" in info.inputs_description


def test_load_from_repository_root(opts, monkeypatch):
    monkeypatch.chdir(ROOT)
    metric = evaluate.load("q2_metric")
    assert 0 <= metric.compute(predictions=PRED[:1], references=REF[:1], **opts)["q2"] <= 1


def test_load_bare_name_after_register(tiny_config, tmp_path):
    env = model_env(tiny_config, tmp_path)
    reg = subprocess.run([sys.executable, "-m", "q2_metric.frontends.cli", "register"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert reg.returncode == 0, reg.stderr
    code = ("import evaluate, json; m = evaluate.load('q2'); "
            "print(json.dumps(m.compute(predictions=['bob ross hosted it'], references=['Bob Ross hosted it.'],"
            " device='cpu', decoding='greedy', max_question_length=8)))")
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert 0 <= json.loads(run.stdout.strip().splitlines()[-1])["q2"] <= 1


def test_second_compute_reuses_models(opts):
    metric = evaluate.load(q2_metric.module_path())
    metric.compute(predictions=PRED[:1], references=REF[:1], **opts)
    [scorer] = _CACHE.values()
    model = scorer.qg.model
    metric.compute(predictions=PRED[1:], references=REF[1:], **opts, question_mode="multi")
    assert list(_CACHE.values()) == [scorer] and scorer.qg.model is model
    assert scorer.config.question_mode == "multi"  # rule options change without a reload
    metric.compute(predictions=PRED[1:], references=REF[1:], **{**opts, "device": "cpu", "dtype": "float32"})
    assert list(_CACHE.values()) != [scorer]  # a model option changed: rebuilt


def test_add_batch_then_compute(opts):
    metric = evaluate.load(q2_metric.module_path())
    metric.add_batch(predictions=PRED[:1], references=REF[:1])
    metric.add(predictions=PRED[1], references=REF[1])
    batched = metric.compute(**opts)
    direct = metric.compute(predictions=PRED, references=REF, **opts)
    assert batched["scores"] == direct["scores"]


def test_multi_process_mode(opts, tmp_path):
    def part(pid):
        m = evaluate.load(q2_metric.module_path(), num_process=2, process_id=pid,
                          experiment_id="q2-test", cache_dir=str(tmp_path))
        m.add_batch(predictions=PRED[pid:pid + 1], references=REF[pid:pid + 1])
        return m.compute(**opts)

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(part, [0, 1])
    assert second is None and len(first["scores"]) == 2


@pytest.mark.parametrize("preds, refs, message", [
    (["a", "b"], ["c"], "predictions has 2 items but references has 1"),
    (["a", None], ["c", "d"], "item 1: field 'predictions' must be a string, got None"),
])
def test_bad_input_gives_engine_error(preds, refs, message):
    metric = evaluate.load(q2_metric.module_path())
    with pytest.raises(Q2InputError, match=re.escape(message)):
        metric.compute(predictions=preds, references=refs)
    with pytest.raises(Q2InputError, match=re.escape(message)):
        metric.add_batch(predictions=preds, references=refs)


def test_unknown_option_is_rejected(opts):
    with pytest.raises(TypeError, match="unknown Q2 option"):
        evaluate.load(q2_metric.module_path()).compute(predictions=PRED, references=REF, nonsense=1)


# -- hub card --------------------------------------------------------------------------------

def card_header():
    text = (ROOT / "hub_card" / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def test_card_yaml_header():
    header, body = card_header()
    for key in ("title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "app_file", "pinned",
                "tags", "description"):
        assert key in header, key
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert set(header["tags"]) >= {"evaluate", "metric"}
    for section in ("## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                    "#### Values from Popular Papers", "### Examples", "## Limitations and Bias",
                    "## Citation", "## Further References"):
        assert section in body, section
    for value in ("0.238", "0.696", "0.135", "0.756", "77.3%", "0.9798"):
        assert value in body
    # one source of truth with _info()
    assert card_text.DESCRIPTION in body and card_text.CITATION in body
    assert (ROOT / "hub_card" / "app.py").exists() and (ROOT / "hub_card" / "requirements.txt").exists()


def test_card_code_example_runs(tiny_config, tmp_path):
    _, body = card_header()
    blocks = re.findall(r"```(\w+)\n(.*?)```", body, re.S)
    setup = next(code for lang, code in blocks if lang == "bash")
    example = next(code for lang, code in blocks if lang == "python" and "evaluate.load" in code)
    env = model_env(tiny_config, tmp_path)
    assert "q2-metric register" in setup
    subprocess.run([sys.executable, "-m", "q2_metric.frontends.cli", "register"], env=env, check=True, timeout=120)
    run = subprocess.run([sys.executable, "-c", example], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().split()[-1].startswith("q2:")


def test_space_script_loads(opts):
    metric = evaluate.load(str(ROOT / "hub_card" / "q2.py"))
    assert 0 <= metric.compute(predictions=PRED[:1], references=REF[:1], **opts)["q2"] <= 1


# -- publishing ------------------------------------------------------------------------------

RESULTS = {"q2": 0.6512, "q2_no_nli": 0.55, "coverage": 0.9, "signature": "q2:0.1.0|qg:x"}


def test_write_results_into_local_model_card(tmp_path):
    from huggingface_hub import ModelCard

    from q2_metric.frontends.hub import write_model_card

    card = tmp_path / "README.md"
    card.write_text("---\nlicense: mit\n---\n# My model\n", encoding="utf-8")
    write_model_card(card, RESULTS, "my-dialogue-model", dataset_name="Wizard of Wikipedia",
                     dataset_type="wizard_of_wikipedia", dataset_split="validation")
    write_model_card(card, {**RESULTS, "q2": 0.7}, "my-dialogue-model", dataset_name="Wizard of Wikipedia",
                     dataset_type="wizard_of_wikipedia", dataset_split="validation")  # replaces, not appends
    data = ModelCard.load(card).data
    assert data.license == "mit" and data.model_name == "my-dialogue-model"
    by_type = {r.metric_type: r for r in data.eval_results}
    assert set(by_type) == {"q2", "q2/q2_no_nli", "q2/coverage"}
    assert by_type["q2"].metric_value == 0.7 and by_type["q2"].dataset_split == "validation"
    assert "# My model" in card.read_text(encoding="utf-8")


def test_publish_cli_card_and_dry_run(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RESULTS))
    card = tmp_path / "README.md"
    base = [sys.executable, "-m", "q2_metric.frontends.cli", "publish", "--results", str(results), "--model-name", "m"]
    dry = subprocess.run(base + ["--card", str(card), "--dry-run"], capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and "model-index" in dry.stdout and not card.exists()
    subprocess.run(base + ["--card", str(card)], check=True, timeout=60)
    assert "model-index" in card.read_text()


def test_evaluate_save_with_signature(tmp_path):
    from q2_metric.frontends.hub import save_results

    path = save_results(tmp_path, {**RESULTS, "details": [1]}, model="m")
    saved = json.loads(path.read_text())
    assert saved["signature"] == RESULTS["signature"] and saved["q2"] == RESULTS["q2"]
    assert "details" not in saved and "_timestamp" in saved
    assert not math.isnan(saved["coverage"])
