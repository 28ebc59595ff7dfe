"""The one output-path guard (`q2_metric.io.paths.check_run`) and every front-end going through it.

Each front-end is asked to write into a model folder, the tiny-model folder or the Hugging Face
cache; each refusal must be the guard's own sentence ("... lies inside the qg_model folder ...",
"... the tiny-model folder, Q2_TINY_MODELS ...") and leave every byte of those folders as it was.
The sentences are the ones written in `check_run`'s docstring contract, not read from its output.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from q2_metric.cli import main
from q2_metric.config import Q2Config
from q2_metric.errors import OutputPathError
from q2_metric.io.paths import check_run


def snapshot(*folders: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A model folder, a tiny-model folder (Q2_TINY_MODELS), a Hugging Face cache (HF_HUB_CACHE)
    and a data file, each with something in it."""
    model, tiny, hub = tmp_path / "my-qg", tmp_path / "tiny", tmp_path / "hf-hub"
    for folder in (model, tiny / "qg", hub / "models--x"):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text('{"model_type": "t5"}')
    monkeypatch.setenv("Q2_TINY_MODELS", str(tiny))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    data = tmp_path / "in.csv"
    data.write_text("response,knowledge\nBob Ross hosted it.,Bob Ross hosted The Joy of Painting.\n")
    return {"model": model, "tiny": tiny, "hub": hub, "data": data, "root": tmp_path}


def test_an_output_inside_a_model_folder_is_refused(places):
    config = Q2Config(qg_model=str(places["model"]), tiny=False)
    with pytest.raises(OutputPathError, match=r"lies inside the qg_model folder '.*my-qg'"):
        check_run({"input": places["data"]}, {"-o/--output": places["model"] / "scores.csv"}, config=config)


@pytest.mark.parametrize(
    "where, name", [("tiny", "the tiny-model folder, Q2_TINY_MODELS"), ("hub", "the Hugging Face cache")]
)
def test_an_output_inside_the_tiny_folder_or_the_hub_cache_is_refused(places, where, name):
    with pytest.raises(OutputPathError, match=f"lies inside {name}"):
        check_run({}, {"--summary": places[where] / "qg" / "s.json"})
    with pytest.raises(OutputPathError, match=f"is {name}"):
        check_run({}, {"--out-dir": places[where]}, folders=["--out-dir"])


def test_an_output_folder_may_hold_the_caches(places):
    """A folder the run writes its own files into (say the home folder) may contain the caches."""
    check_run({}, {"--out-dir": places["root"]}, folders=["--out-dir"])


def test_the_tiny_builder_may_write_its_own_folder(places):
    check_run({}, {"Q2_TINY_MODELS": places["tiny"]}, folders=["Q2_TINY_MODELS"], builds_tiny_models=True)
    with pytest.raises(OutputPathError, match="lies inside the Hugging Face cache"):
        check_run(
            {}, {"Q2_TINY_MODELS": places["hub"] / "t"}, folders=["Q2_TINY_MODELS"], builds_tiny_models=True
        )


# -- every front-end, through the guard -----------------------------------------------------------


def _refused(capsys, argv: list[str], sentence: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert sentence in err and err.count("\n") == 1, err


@pytest.mark.parametrize("flag", ["-o", "--summary", "--steps", "--cache-dir"])
def test_q2_score_refuses_outputs_in_a_model_folder(places, capsys, flag):
    before = snapshot(places["model"])
    name = {"--summary": "s.json", "--cache-dir": "cache"}.get(flag, "x.csv")
    argv = ["score", str(places["data"]), "--qg-model", str(places["model"]), "--quiet"]
    argv += ["-o", str(places["root"] / "out.csv")] if flag != "-o" else []
    _refused(capsys, argv + [flag, str(places["model"] / name)], "lies inside the qg_model folder")
    assert snapshot(places["model"]) == before


@pytest.mark.parametrize("where", ["tiny", "hub"])
def test_q2_score_refuses_outputs_in_the_tiny_folder_or_hub_cache(places, capsys, where):
    before = snapshot(places[where])
    _refused(
        capsys,
        ["score", str(places["data"]), "-o", str(places[where] / "qg" / "x.csv"), "--quiet"],
        "lies inside the " + ("tiny-model folder" if where == "tiny" else "Hugging Face cache"),
    )
    assert snapshot(places[where]) == before


def test_meta_eval_benchmark_refuses_out_and_cache_dirs_in_a_model_folder(places, capsys):
    data = places["root"] / "set.csv"
    data.write_text("response,knowledge,label\na b,a b,1\nc d,e f,0\n")
    base = ["meta-eval", "--dataset", f"one={data}", "--qg-model", str(places["model"])]
    _refused(capsys, base + ["--out-dir", str(places["model"] / "bench")], "lies inside the input")
    _refused(
        capsys,
        base + ["--out-dir", str(places["root"] / "bench"), "--cache-dir", str(places["tiny"] / "c")],
        "lies inside the tiny-model folder",
    )


def test_write_template_onto_a_dataset_file_is_refused(places, capsys):
    folder = places["root"] / "sets"
    folder.mkdir()
    data = folder / "meta_eval_template.csv"  # a dataset that happens to bear the template's name
    data.write_text("response,knowledge,label\na b,a b,1\nc d,e f,0\n")
    before = snapshot(folder)
    _refused(
        capsys, ["meta-eval", "--dataset", f"one={data}", "--write-template", str(folder)], "is the input"
    )
    assert snapshot(folder) == before


def test_convert_nli_space_publish_and_fetch_refuse_the_tiny_folder(places, capsys):
    archive = places["root"] / "model.tar.gz"
    archive.write_bytes(b"not read")
    results = places["root"] / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.5, "coverage": 1.0, "signature": "q2:0.4.0"}))
    inside = places["tiny"] / "qg" / "new"
    before = snapshot(places["tiny"])
    for argv in (
        ["convert-nli", str(archive), str(inside)],
        ["space", str(inside)],
        ["publish", "--results", str(results), "--model-name", "m", "--card", str(inside / "README.md")],
        ["data", "fetch", "begin", "--out", str(inside)],
    ):
        _refused(capsys, argv, "lies inside the tiny-model folder")
    assert snapshot(places["tiny"]) == before


def test_the_evaluate_cache_folder_may_not_lie_in_a_model_folder(places):
    evaluate = pytest.importorskip("evaluate")
    import q2_metric

    module = evaluate.load(q2_metric.module_path(), cache_dir=str(places["model"] / "cache"))
    with pytest.raises(OutputPathError, match="lies inside the qg_model folder"):
        module.compute(predictions=["a"], references=["b"], qg_model=str(places["model"]))


def test_q2_score_ray_refuses_before_starting_ray(places, capsys):
    pytest.importorskip("ray")
    import ray

    _refused(
        capsys,
        ["score", str(places["data"]), "-o", str(places["tiny"] / "x.csv"), "--ray", "--quiet"],
        "lies inside the tiny-model folder",
    )
    assert not ray.is_initialized()


def test_parlai_explain_file_in_a_model_folder_is_refused(places, capsys):
    pytest.importorskip("parlai")
    from parlai_ext.options import check_explain_file

    with pytest.raises(SystemExit) as stop:
        check_explain_file({"q2_qg_model": str(places["model"])}, str(places["hub"] / "explain.jsonl"))
    assert stop.value.code == 2 and "lies inside the Hugging Face cache" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        check_explain_file({"q2_qg_model": str(places["model"])}, str(places["model"] / "explain.jsonl"))
    assert "lies inside the input" in capsys.readouterr().err


# -- the reads added in issue 40 reach every front-end through the one guard ----------------------


@pytest.fixture
def new_reads(tmp_path, monkeypatch):
    """The Hugging Face cache set the way only huggingface_hub's own resolution finds it (HF_HOME as
    `$HOME/...`, no HF_HUB_CACHE), and a spaCy pipeline package named by Q2_SPACY_MODEL (the default
    of every configuration), each with something in it. (`evaluate` is left out here: it reads HF_HOME
    without expanding `$VARS` and would make a folder named '$HOME' in the working directory; its
    guard call is the same `check_run`, tested above.)"""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HOME", "$HOME/hf")
    monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path / "tiny"))
    hub = home / "hf" / "hub"
    site = tmp_path / "site"
    spacy = site / "q2_test_pipeline"
    for folder in (hub / "models--x", spacy):
        folder.mkdir(parents=True)
    (hub / "models--x" / "config.json").write_text("{}")
    (spacy / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("Q2_SPACY_MODEL", "q2_test_pipeline")
    data = tmp_path / "in.csv"
    data.write_text(
        "response,knowledge,label\nBob Ross hosted it.,Bob Ross hosted The Joy of Painting.,1\na b,c d,0\n"
    )
    return {
        "hub": (hub, "lies inside the Hugging Face cache"),
        "spacy": (spacy, "lies inside the installed spaCy pipeline 'q2_test_pipeline'"),
        "data": data,
        "root": tmp_path,
    }


@pytest.mark.parametrize("where", ["hub", "spacy"])
def test_every_front_end_refuses_the_cache_and_the_spacy_package(new_reads, capsys, where):
    folder, sentence = new_reads[where]
    root, data = new_reads["root"], new_reads["data"]
    archive = root / "model.tar.gz"
    archive.write_bytes(b"not read")
    results = root / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.5, "coverage": 1.0, "signature": "q2:0.4.0"}))
    before = snapshot(folder)
    inside = folder / "new"
    for argv in (
        ["score", str(data), "-o", str(inside / "x.csv"), "--quiet"],
        ["score", str(data), "-o", str(root / "x.csv"), "--cache-dir", str(inside), "--quiet"],
        ["meta-eval", "--dataset", f"one={data}", "--out-dir", str(root / "b"), "--cache-dir", str(inside)],
        ["convert-nli", str(archive), str(inside)],
        ["space", str(inside)],
        ["publish", "--results", str(results), "--model-name", "m", "--card", str(inside / "README.md")],
        ["data", "fetch", "begin", "--out", str(inside)],
    ):
        _refused(capsys, argv, sentence)
    if importlib.util.find_spec("parlai") is not None:
        from parlai_ext.options import check_explain_file

        with pytest.raises(SystemExit):
            check_explain_file({}, str(inside / "explain.jsonl"))
        assert sentence in capsys.readouterr().err
    assert snapshot(folder) == before
