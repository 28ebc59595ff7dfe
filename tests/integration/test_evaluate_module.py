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
from support.data import ROOT
from support.files import snapshot

import q2_metric
from q2_metric import Q2InputError
from q2_metric import version as card_text

KEYS = {
    "q2",
    "q2_no_nli",
    "coverage",
    "no_answer_share",
    "num_responses",
    "num_scored",
    "num_skipped",
    "num_valid_questions",
    "scores",
    "scores_no_nli",
    "signature",
}
PRED = ["bob ross hosted the joy of painting on pbs", "it aired in canada"]
REF = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired in Canada and Europe."]


@pytest.fixture
def opts(tiny_config):
    return dict(
        qg_model=tiny_config.qg_model,
        qa_model=tiny_config.qa_model,
        nli_model=tiny_config.nli_model,
        device="cpu",
        decoding="greedy",
        max_question_length=8,
    )


def model_env(tiny_config, tmp_path):
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
        "Q2_QG_MODEL": tiny_config.qg_model,
        "Q2_QA_MODEL": tiny_config.qa_model,
        "Q2_NLI_MODEL": tiny_config.nli_model,
    }


def test_load_by_module_path_and_compute(opts):
    metric = evaluate.load(q2_metric.module_path())
    results = metric.compute(predictions=PRED, references=REF, **opts)
    assert set(results) >= KEYS
    assert isinstance(results["q2"], float) and 0 <= results["q2"] <= 1
    assert len(results["scores"]) == 2 and all(isinstance(s, float) for s in results["scores"])
    assert results["signature"].startswith("q2:") and "details" not in results
    detailed = metric.compute(predictions=PRED, references=REF, return_details=True, **opts)
    assert detailed["details"][0]["candidates"] and "questions" in detailed["details"][0]
    # spans (issue 43): at their offsets in each prediction as given, the same as the engine's
    from q2_metric import Q2Config, Q2Scorer

    engine = Q2Scorer(Q2Config(**opts)).score(PRED, REF)
    for pred, got, res in zip(PRED, detailed["details"], engine.responses):
        assert got["spans"] and all(pred[s["start"] : s["end"]] == s["text"] for s in got["spans"])
        assert [(s["start"], s["end"], s["score"]) for s in got["spans"]] == [
            (s.start, s.end, s.score) for s in res.spans
        ]


def test_info_fields():
    info = evaluate.load(q2_metric.module_path()).info
    assert info.citation == card_text.CITATION and info.description == card_text.DESCRIPTION
    # one reference per prediction, or a list of them (issue 19)
    assert [set(f) for f in info.features] == [{"predictions", "references"}] * 2 and info.license == "MIT"
    assert info.homepage and info.codebase_urls and "Examples:" in info.inputs_description


def test_load_from_repository_root(opts, monkeypatch):
    monkeypatch.chdir(ROOT)
    metric = evaluate.load("q2_metric")
    assert 0 <= metric.compute(predictions=PRED[:1], references=REF[:1], **opts)["q2"] <= 1


def test_load_bare_name_after_register(tiny_config, tmp_path):
    env = model_env(tiny_config, tmp_path)
    reg = subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", "register"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reg.returncode == 0, reg.stderr
    code = (
        "import evaluate, json; m = evaluate.load('q2'); "
        "print(json.dumps(m.compute(predictions=['bob ross hosted it'], references=['Bob Ross hosted it.'],"
        " device='cpu', decoding='greedy', max_question_length=8)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert 0 <= json.loads(run.stdout.strip().splitlines()[-1])["q2"] <= 1


def test_second_compute_reuses_models(opts):
    metric = evaluate.load(q2_metric.module_path())
    metric.compute(predictions=PRED[:1], references=REF[:1], **opts)
    scorer = metric._scorer
    model = scorer.qg.model
    metric.compute(predictions=PRED[1:], references=REF[1:], **opts, question_mode="multi")
    assert metric._scorer is scorer and scorer.qg.model is model
    assert scorer.config.question_mode == "multi"  # rule options change without a reload
    metric.compute(predictions=PRED[1:], references=REF[1:], **{**opts, "device": "cpu", "dtype": "float32"})
    assert metric._scorer is not scorer  # a model option changed: rebuilt


def test_scorer_cached_per_metric_instance(opts):
    """Two instances with different model options keep their own models across alternating calls."""
    first, second = evaluate.load(q2_metric.module_path()), evaluate.load(q2_metric.module_path())
    other = {**opts, "dtype": "float32"}
    first.compute(predictions=PRED[:1], references=REF[:1], **opts)
    second.compute(predictions=PRED[:1], references=REF[:1], **other)
    models = first._scorer.qa.model, second._scorer.qa.model
    for _ in range(2):
        first.compute(predictions=PRED[:1], references=REF[:1], **opts)
        second.compute(predictions=PRED[:1], references=REF[:1], **other)
    assert (first._scorer.qa.model, second._scorer.qa.model) == models
    assert models[0] is not models[1]


def test_add_batch_then_compute(opts):
    metric = evaluate.load(q2_metric.module_path())
    metric.add_batch(predictions=PRED[:1], references=REF[:1])
    metric.add(predictions=PRED[1], references=REF[1])
    batched = metric.compute(**opts)
    direct = metric.compute(predictions=PRED, references=REF, **opts)
    assert batched["scores"] == direct["scores"]


def test_multi_process_mode(opts, tmp_path):
    def part(pid):
        m = evaluate.load(
            q2_metric.module_path(),
            num_process=2,
            process_id=pid,
            experiment_id="q2-test",
            cache_dir=str(tmp_path),
        )
        m.add_batch(predictions=PRED[pid : pid + 1], references=REF[pid : pid + 1])
        return m.compute(**opts)

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(part, [0, 1])
    assert second is None and len(first["scores"]) == 2


@pytest.mark.parametrize(
    "preds, refs, message",
    [
        (["a", "b"], ["c"], "predictions has 2 items but references has 1"),
        (["a", None], ["c", "d"], "item 1: field 'predictions' must be a string, got None"),
    ],
)
def test_bad_input_gives_engine_error(preds, refs, message):
    metric = evaluate.load(q2_metric.module_path())
    with pytest.raises(Q2InputError, match=re.escape(message)):
        metric.compute(predictions=preds, references=refs)
    with pytest.raises(Q2InputError, match=re.escape(message)):
        metric.add_batch(predictions=preds, references=refs)


def test_unknown_option_is_rejected(opts):
    metric = evaluate.load(q2_metric.module_path())
    with pytest.raises(TypeError, match=r"^'nonsense' is not a Q² option"):
        metric.compute(predictions=PRED, references=REF, nonsense=1)
    with pytest.raises(TypeError, match=r"did you mean 'variant'\?"):
        metric.compute(predictions=PRED, references=REF, varient="dnli")


def test_evaluate_harness(tmp_path, monkeypatch, capsys):
    """evaluate's own `LocalModuleTest.test_load`, on the file the Space ships as q2.py: the module
    loads from metrics/q2, `_compute` takes no **kwargs, and its doctest runs more than one example."""
    import doctest
    import importlib
    import inspect
    from unittest.mock import patch

    (tmp_path / "metrics" / "q2").mkdir(parents=True)
    (tmp_path / "metrics" / "q2" / "q2.py").write_text(
        (ROOT / "q2_metric" / "q2_metric.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(doctest, "ELLIPSIS_MARKER", "[...]")
    module = importlib.import_module(
        evaluate.loading.evaluation_module_factory(
            os.path.join("metrics", "q2"), module_type="metric"
        ).module_path
    )
    instance = evaluate.loading.import_main_class(module.__name__)
    parameters = inspect.signature(instance._compute).parameters
    assert all(p.kind != p.VAR_KEYWORD for p in parameters.values())
    assert set(q2_metric.config.option_names()) <= set(parameters)  # every option named
    real_load = evaluate.load
    with patch(
        "evaluate.load", side_effect=lambda name, *a, **k: real_load(os.path.join("metrics", name), *a, **k)
    ):
        results = doctest.testmod(module, verbose=True, raise_on_error=True)
    capsys.readouterr()
    assert results.failed == 0 and results.attempted > 1


def test_every_option_is_documented():
    doc = evaluate.load(q2_metric.module_path()).info.inputs_description
    for name in q2_metric.config.option_names() + ["variant", "progress", "verbose", "batch_size"]:
        assert re.search(rf"\b{name}\b", doc), name


def test_config_name_dnli_changes_the_variant(opts):
    plain = evaluate.load(q2_metric.module_path()).compute(predictions=PRED, references=REF, **opts)
    dnli = evaluate.load(q2_metric.module_path(), config_name="dnli").compute(
        predictions=PRED, references=REF, **opts
    )
    assert "|personal:yes|" in plain["signature"] and "|dnli:no|" in plain["signature"]
    assert "|personal:no|" in dnli["signature"] and "|dnli:yes|" in dnli["signature"]
    assert (
        evaluate.load(q2_metric.module_path(), "paper")._config()
        == evaluate.load(q2_metric.module_path(), "default")._config()
    )
    with pytest.raises(
        ValueError,
        match=r"^Invalid Q² configuration name 'dnnli': allowed values are "
        r"'default', 'paper' or 'dnli'\.$",
    ):
        evaluate.load(q2_metric.module_path(), "dnnli")


@pytest.mark.parametrize(
    "option, value, allowed",
    [
        ("variant", "dnlii", "allowed values are 'default', 'paper' or 'dnli'"),
        ("decoding", "sample", "allowed values are 'beam' or 'greedy'"),
        ("question_mode", True, "allowed values are 'single' or 'multi'"),
        ("device", "gpu", "use 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device"),
        ("device", "cuda:0", "torch sees 0 CUDA device(s) here; use 'auto' or 'cpu'"),
        ("use_nli", "yes", "use True or False"),
        ("num_beams", 0, "use an integer >= 1"),
        ("qa_doc_stride", -1, "use an integer >= 0"),
        ("batch_size", 2.5, "use an integer >= 1"),
        ("fallback_scores", [1, 0.5], "use 3 numbers in [0, 1]"),
        ("drop_candidates", "i", "use a list of strings"),
        ("qa_model", "", "use a Hub id or a local directory"),
    ],
)
def test_bad_option_value_one_sentence(option, value, allowed, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    metric = evaluate.load(q2_metric.module_path())
    with pytest.raises(ValueError) as err:
        metric.compute(predictions=PRED, references=REF, **{option: value})
    assert str(err.value) == f"Invalid Q² option {option}={value!r}: {allowed}."


def test_device_forms_and_batch_size(opts, monkeypatch):
    import torch

    metric = evaluate.load(q2_metric.module_path())
    assert metric._config(device=torch.device("cpu")).device == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert metric._config(device="cuda:1").device == "cuda:1"
    assert metric._config(device=torch.device("cuda", 0)).device == "cuda:0"
    with pytest.raises(ValueError, match=r"device='cuda:2': torch sees 2 CUDA device"):
        metric._config(device="cuda:2")
    config = metric._config(batch_size=4, nli_batch_size=8)
    assert (config.qg_batch_size, config.qa_batch_size, config.nli_batch_size) == (4, 4, 8)
    monkeypatch.undo()
    results = metric.compute(
        predictions=PRED,
        references=REF,
        **{**opts, "device": torch.device("cpu")},
        batch_size=1,
        verbose=False,
        progress=False,
    )
    assert 0 <= results["q2"] <= 1


def test_progress_bar_default_and_off(opts, monkeypatch, capsys):
    from q2_metric.scorer import Q2Scorer

    seen = []
    real_score = Q2Scorer.score_checked  # the engine's door of every path

    def spy(self, responses, knowledge, histories=None, *, progress=None):
        seen.append(progress)
        return real_score(self, responses, knowledge, histories, progress=progress)

    monkeypatch.setattr(Q2Scorer, "score_checked", spy)
    module = sys.modules[type(evaluate.load(q2_metric.module_path())).__module__]
    many = module.PROGRESS_MIN
    metric = evaluate.load(q2_metric.module_path())
    metric.compute(predictions=PRED[:1], references=REF[:1], **opts)
    metric.compute(predictions=PRED[:1] * many, references=REF[:1] * many, **opts)
    metric.compute(predictions=PRED[:1] * many, references=REF[:1] * many, progress=False, **opts)
    metric.compute(predictions=PRED[:1], references=REF[:1], progress=True, **opts)
    assert [p is not None for p in seen] == [False, True, False, True]
    capsys.readouterr()
    seen[1]("questions", 3, 8)  # the engine reports a stage, then the end: stderr is no terminal here,
    seen[1]("done", 8, 8)  # so a line tells what the stage did (a tqdm bar on a terminal)
    assert "Q² 2/6 questions: 3 model inputs in " in capsys.readouterr().err


def test_results_are_strict_json(opts, tmp_path):
    from q2_metric.hub.publish import save_results

    results = evaluate.load(q2_metric.module_path()).compute(predictions=["", " "], references=REF, **opts)
    text = json.dumps(results, allow_nan=False)  # raises on NaN
    assert results["q2"] is None and results["scores"] == [None, None] and results["num_skipped"] == 2
    path = save_results(tmp_path, {"q2": float("nan"), "scores": [float("nan"), 0.5], "signature": "s"})
    saved = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in {path}"))
    assert saved["q2"] is None and saved["scores"] == [None, 0.5] and "null" in path.read_text()
    assert text


# -- hub card --------------------------------------------------------------------------------


def card_header():
    text = (ROOT / "hub_card" / "README.md").read_text(encoding="utf-8")
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def test_card_yaml_header():
    header, body = card_header()
    for key in (
        "title",
        "emoji",
        "colorFrom",
        "colorTo",
        "sdk",
        "sdk_version",
        "app_file",
        "pinned",
        "tags",
        "description",
    ):
        assert key in header, key
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert set(header["tags"]) >= {"evaluate", "metric"}
    for section in (
        "## Metric Description",
        "## How to Use",
        "### Inputs",
        "### Output Values",
        "#### Values from Popular Papers",
        "### Examples",
        "## Limitations and Bias",
        "## Citation",
        "## Further References",
    ):
        assert section in body, section
    for value in ("0.238", "0.696", "0.135", "0.756", "77.3%", "0.9798"):
        assert value in body
    # one source of truth with _info()
    assert card_text.DESCRIPTION in body and card_text.CITATION in body
    assert (ROOT / "hub_card" / "app.py").exists()


def test_card_code_example_runs(tiny_config, tmp_path):
    _, body = card_header()
    blocks = re.findall(r"```(\w+)\n(.*?)```", body, re.S)
    setup = next(code for lang, code in blocks if lang == "bash")
    example = next(code for lang, code in blocks if lang == "python" and "evaluate.load" in code)
    env = model_env(tiny_config, tmp_path)
    assert "q2-metric register" in setup
    subprocess.run([sys.executable, "-m", "q2_metric.cli", "register"], env=env, check=True, timeout=120)
    run = subprocess.run(
        [sys.executable, "-c", example], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().split()[-1].startswith("q2:")


def test_space_script_loads(opts, tmp_path):
    """The Space's q2.py (written by `q2-metric space`) is the module itself and loads by path."""
    from q2_metric.hub.space import MODULE_FILE

    (tmp_path / "q2.py").write_text(MODULE_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    metric = evaluate.load(str(tmp_path / "q2.py"))
    assert 0 <= metric.compute(predictions=PRED[:1], references=REF[:1], **opts)["q2"] <= 1


# -- publishing ------------------------------------------------------------------------------

RESULTS = {"q2": 0.6512, "q2_no_nli": 0.55, "coverage": 0.9, "signature": "q2:0.1.0|qg:x"}


def test_write_results_into_local_model_card(tmp_path):
    from huggingface_hub import ModelCard

    from q2_metric.hub.publish import write_model_card

    card = tmp_path / "README.md"
    card.write_text("---\nlicense: mit\n---\n# My model\n", encoding="utf-8")
    write_model_card(
        card,
        RESULTS,
        "my-dialogue-model",
        dataset_name="Wizard of Wikipedia",
        dataset_type="wizard_of_wikipedia",
        dataset_split="validation",
    )
    write_model_card(
        card,
        {**RESULTS, "q2": 0.7},
        "my-dialogue-model",
        dataset_name="Wizard of Wikipedia",
        dataset_type="wizard_of_wikipedia",
        dataset_split="validation",
    )  # replaces, not appends
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
    base = [sys.executable, "-m", "q2_metric.cli", "publish", "--results", str(results), "--model-name", "m"]
    dry = subprocess.run(
        base + ["--card", str(card), "--dry-run"], capture_output=True, text=True, timeout=60
    )
    assert dry.returncode == 0 and "model-index" in dry.stdout and not card.exists()
    subprocess.run(base + ["--card", str(card)], check=True, timeout=60)
    assert "model-index" in card.read_text()


def test_evaluate_save_with_signature(tmp_path):
    from q2_metric.hub.publish import save_results

    path = save_results(tmp_path, {**RESULTS, "details": [1]}, model="m")
    saved = json.loads(path.read_text())
    assert saved["signature"] == RESULTS["signature"] and saved["q2"] == RESULTS["q2"]
    assert "details" not in saved and "_timestamp" in saved
    assert not math.isnan(saved["coverage"])


class FakeHub:
    """Stands in for `huggingface_hub.HfApi`: one repo's README.md kept in memory."""

    def __init__(self, readme=None):
        self.readme, self.uploads = readme, 0

    def hf_hub_download(self, repo_id, filename, token=None):
        import httpx
        from huggingface_hub.errors import RemoteEntryNotFoundError

        if self.readme is None:
            request = httpx.Request("GET", f"https://huggingface.co/{repo_id}/resolve/main/{filename}")
            raise RemoteEntryNotFoundError("404 README.md", response=httpx.Response(404, request=request))
        path = Path(self.tmp) / "downloaded.md"
        path.write_text(self.readme, encoding="utf-8")
        return str(path)

    def upload_file(self, *, path_or_fileobj, path_in_repo, repo_id, token=None, commit_message=None):
        assert path_in_repo == "README.md"
        self.readme, self.uploads = Path(path_or_fileobj).read_text(encoding="utf-8"), self.uploads + 1
        return f"https://huggingface.co/{repo_id}/commit/{self.uploads}"


@pytest.mark.parametrize("mode", ["repo-id", "card", "dry-run"])
def test_republish_with_new_signature_replaces_entries(mode, tmp_path, monkeypatch, capsys):
    """Whatever the signature, one Q² entry per metric, dataset and split; other entries stay."""
    import huggingface_hub
    from huggingface_hub import ModelCard

    from q2_metric.cli import main

    other = (
        "---\nlicense: mit\nmodel-index:\n- name: m\n  results:\n  - task: {type: text-generation}\n"
        "    dataset: {name: Other, type: other, split: test}\n"
        "    metrics:\n    - {type: bleu, value: 12.5, name: BLEU}\n---\n# m\n"
    )
    hub = FakeHub(other)
    hub.tmp = tmp_path
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: hub)
    card = tmp_path / "README.md"
    card.write_text(other, encoding="utf-8")
    where = {
        "repo-id": ["--repo-id", "me/m"],
        "card": ["--card", str(card)],
        "dry-run": ["--card", str(card), "--dry-run"],
    }[mode]
    for split, signature, value in (
        ("validation", "q2:0.1.0|qg:x@aaa", 0.6),
        ("validation", "q2:0.1.0|qg:x@bbb", 0.7),
        ("test", "q2:0.1.0|qg:x@bbb", 0.8),
    ):
        results = tmp_path / "results.json"
        results.write_text(json.dumps({**RESULTS, "q2": value, "signature": signature}))
        assert (
            main(["publish", "--results", str(results), "--model-name", "m", "--split", split, *where]) == 0
        )
        if mode == "dry-run":  # writes nothing: the printed metadata is the card it would write
            card.write_text("---\n" + capsys.readouterr().out + "---\n# m\n", encoding="utf-8")
    text = hub.readme if mode == "repo-id" else card.read_text(encoding="utf-8")
    (tmp_path / "final.md").write_text(text, encoding="utf-8")
    entries = ModelCard.load(tmp_path / "final.md").data.eval_results
    q2 = [
        (r.metric_type, r.dataset_split, r.metric_value, r.metric_config)
        for r in entries
        if r.metric_type.startswith("q2")
    ]
    assert len(q2) == 6 and len({(t, s) for t, s, _, _ in q2}) == 6  # 3 metrics x 2 splits, no duplicates
    assert ("q2", "validation", 0.7, "q2:0.1.0|qg:x@bbb") in q2 and (
        "q2",
        "test",
        0.8,
        "q2:0.1.0|qg:x@bbb",
    ) in q2
    assert [r.metric_type for r in entries if not r.metric_type.startswith("q2")] == ["bleu"]
    if mode == "repo-id":
        assert hub.uploads == 3 and "license: mit" in hub.readme


def test_publish_to_a_new_repo_card(tmp_path, monkeypatch):
    import huggingface_hub

    from q2_metric.hub.publish import push_model_card

    hub = FakeHub(None)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: hub)
    url = push_model_card("me/m", RESULTS, "m", dataset_name="WoW", dataset_type="wow", dataset_split="test")
    assert url.endswith("/commit/1") and "model-index" in hub.readme and "# m" in hub.readme


def test_publish_failures_are_one_sentence(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RESULTS))
    base = [sys.executable, "-m", "q2_metric.cli", "publish", "--model-name", "m"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    nan = tmp_path / "nan.json"
    nan.write_text('{"q2": NaN, "q2_no_nli": 0.5}')
    for args, message in (
        (
            ["--results", str(results), "--repo-id", "me/m"],
            "q2: Cannot update the model card of me/m on the Hub: HF_HUB_OFFLINE is set.",
        ),
        (
            ["--results", str(bad), "--dry-run"],
            f"q2: The results file {bad} is not JSON (Expecting property name "
            "enclosed in double quotes at line 1).",
        ),
        (["--results", str(nan), "--dry-run"], f"q2: {nan}: field(s) coverage missing from the results."),
        (
            ["--results", str(tmp_path / "missing.json"), "--dry-run"],
            f"q2: Cannot read the results file {tmp_path / 'missing.json'}: No such file or directory.",
        ),
    ):
        run = subprocess.run(base + args, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and run.stderr.strip() == message, run.stderr


def test_undefined_results_stay_out_of_the_card():
    from q2_metric.hub.publish import card_metadata

    meta = card_metadata(
        {"q2": None, "q2_no_nli": float("nan"), "coverage": 0.0},
        "m",
        dataset_name="WoW",
        dataset_type="wow",
        dataset_split="test",
    )
    [entry] = meta["model-index"][0]["results"]
    assert [m["type"] for m in entry["metrics"]] == ["q2/coverage"]


@pytest.mark.parametrize(
    "status, why", [(None, "the Hub cannot be reached"), (401, "the token is missing or may not write to it")]
)
def test_push_failure_one_sentence(status, why, monkeypatch):
    import httpx
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError

    from q2_metric.hub.publish import PublishError, push_model_card

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    request = httpx.Request("GET", "https://huggingface.co/api/models/me/m")

    class Failing(FakeHub):
        def hf_hub_download(self, repo_id, filename, token=None):
            if status is None:
                raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution", request=request)
            raise HfHubHTTPError("401 Unauthorized", response=httpx.Response(status, request=request))

    with pytest.raises(PublishError) as err:
        push_model_card("me/m", RESULTS, "m", api=Failing(), dataset_name="WoW", dataset_type="wow")
    message = str(err.value)
    assert message.startswith(f"Cannot update the model card of me/m on the Hub: {why}") and message.endswith(
        "."
    )
    assert "\n" not in message


def test_compute_tiny(tiny_env):
    import evaluate

    import q2_metric

    q2 = evaluate.load(q2_metric.module_path())
    results = q2.compute(
        predictions=["he hosted the joy of painting on pbs"],
        references=["Bob Ross hosted The Joy of Painting on PBS."],
        tiny=True,
        device="cpu",
    )
    assert (
        "|qg:tiny-random-" in results["signature"]
        and "|dec:beam5-ret5-nrng3-es1-max16-" in results["signature"]
    )
    json.dumps(results, allow_nan=False)
    with pytest.raises(ValueError, match="tiny"):
        q2.compute(predictions=["a"], references=["b"], tiny="yes")


def test_one_evaluate_instance_is_safe_from_three_threads(tiny_config):
    import threading

    import evaluate

    import q2_metric

    metric = evaluate.load(q2_metric.module_path())
    opts = dict(
        qg_model=tiny_config.qg_model,
        qa_model=tiny_config.qa_model,
        nli_model=tiny_config.nli_model,
        device="cpu",
        decoding="greedy",
        max_question_length=8,
    )
    preds = ["Paris is big.", "Rome is old."]
    expected = metric.compute(predictions=preds, references=preds, **opts)
    results, errors = [], []

    def work() -> None:
        for _ in range(6):
            try:
                results.append(metric.compute(predictions=preds, references=preds, **opts))
            except Exception as err:
                errors.append(repr(err))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 18
    assert all(r["scores"] == expected["scores"] for r in results)


def test_evaluate_cache_folder_inside_a_model_folder_is_refused(tmp_path, tiny_config):
    import shutil

    import evaluate

    import q2_metric
    from q2_metric.errors import OutputPathError

    qg = tmp_path / "qg"
    shutil.copytree(tiny_config.qg_model, qg)
    before = snapshot(qg)
    metric = evaluate.load(q2_metric.module_path(), cache_dir=str(tmp_path / "cache"))
    opts = dict(qa_model=tiny_config.qa_model, nli_model=tiny_config.nli_model, device="cpu")
    with pytest.raises(OutputPathError, match=r"lies inside|contains"):
        metric.compute(predictions=["a"], references=["b"], qg_model=str(tmp_path), **opts)
    assert snapshot(qg) == before
