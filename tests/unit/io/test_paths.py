"""The output-path guard: an output that is, contains or lies inside an input, or is not a regular file,
is refused in one line and nothing the user gave is changed (checksums before and after)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer

from support.cli import refused
from support.files import snapshot, write_parquet, HEADER, PAIRS, ROWS


def test_output_inside_a_parquet_folder_is_refused_and_runs_do_not_grow(tmp_path, capsys):
    folder = tmp_path / "data"
    write_parquet(folder / "part-0.parquet", PAIRS)
    before = snapshot(folder)
    refused(capsys, ["score", str(folder), "-o", str(folder / "scores.parquet"), "--no-cache"],
            f"'{folder / 'scores.parquet'}' (-o/--output) lies inside the input '{folder}'")
    refused(capsys, ["score", str(folder), "-o", str(tmp_path / "s.csv"), "--steps", str(folder / "steps.csv"),
                     "--no-cache"], "(--steps) lies inside the input")
    refused(capsys, ["score", str(folder), "-o", str(tmp_path / "s.csv"), "--cache-dir", str(folder / "c")],
            "(--cache-dir) lies inside the input")
    refused(capsys, ["score", str(folder / "part-0.parquet"), "-o", str(tmp_path), "--no-cache"], "directory")
    assert snapshot(folder) == before
    # outside the folder: two runs give the same rows (2, not 2 then 4)
    outs = []
    for name in ("a.csv", "b.csv"):
        score_file(scripted_scorer(), folder, tmp_path / name, cache_dir=tmp_path / "cache")
        outs.append(list(csv.DictReader(open(tmp_path / name))))
    assert len(outs[0]) == 2 and outs[0] == outs[1]
    assert snapshot(folder) == before


def test_output_into_or_onto_a_datasets_folder_is_refused(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "ds"
    datasets.Dataset.from_list(PAIRS).save_to_disk(str(folder))
    capsys.readouterr()
    before = snapshot(folder)
    refused(capsys, ["score", str(folder), "-o", str(folder), "--no-cache"], f"'{folder}' (-o/--output) is the input")
    refused(capsys, ["score", str(folder), "-o", str(folder / "data-00000-of-00001.arrow.csv"), "--no-cache"],
            "lies inside the input")
    link = tmp_path / "link"
    link.symlink_to(folder)  # the folder under another name
    refused(capsys, ["score", str(folder), "-o", str(link / "x.csv"), "--no-cache"], "lies inside the input")
    # an output that contains the input: -o names the folder the input is in
    (tmp_path / "in.csv").write_text(HEADER + ROWS)
    refused(capsys, ["score", str(tmp_path / "in.csv"), "-o", str(tmp_path), "--no-cache"], "directory")
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
    refused(capsys, ["score", str(data), "-o", str(fifo), "--no-cache"], f"'{fifo}' (-o/--output) is a named pipe")
    refused(capsys, ["score", str(data), "-o", str(to_device), "--no-cache"],
            f"'{to_device}' (-o/--output) is a symbolic link (to '/dev/null')")
    refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--summary", str(to_file), "--no-cache"],
            "(--summary) is a symbolic link")
    if os.access("/dev/null", os.W_OK) and os.access("/dev", os.W_OK):
        refused(capsys, ["score", str(data), "-o", "/dev/null", "--no-cache"], "'/dev/null' (-o/--output) is a device")
    assert snapshot(tmp_path) == before
    assert Path("/dev/null").is_char_device()


def test_convert_nli_into_its_own_folder_is_refused(tmp_path, capsys):
    archive = tmp_path / "archive"
    (archive / "vocabulary").mkdir(parents=True)
    (archive / "config.json").write_text('{"model": {}}')
    (archive / "weights.th").write_bytes(b"\0" * 16)
    (archive / "vocabulary" / "labels.txt").write_text("entailment\n")
    before = snapshot(archive)
    refused(capsys, ["convert-nli", str(archive), str(archive)], f"'{archive}' (out_dir) is the input '{archive}'")
    refused(capsys, ["convert-nli", str(archive), str(archive / "out")], "lies inside the input")
    refused(capsys, ["convert-nli", str(tmp_path / "a.tar.gz"), str(tmp_path / "m"), "--base-model", str(archive)],
            "no such archive")  # the base model folder is an input too, and stays as it is
    refused(capsys, ["convert-nli", str(tmp_path / "a.tar.gz"), str(archive / "m"), "--base-model", str(archive)],
            "(out_dir) lies inside the input")
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
    refused(capsys, [*base, "--out-dir", str(annotated), "--scores", f"m={annotated / 'meta_eval.md'}"],
            f"'{annotated / 'meta_eval.md'}' (--out-dir (meta_eval.md)) is the input")
    refused(capsys, [*base, "--out-dir", str(nli / "out"), "--nli-model", str(nli)],
            "(--out-dir) lies inside the input")
    assert snapshot(tmp_path) == before
    link = annotated / "meta_eval.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    refused(capsys, [*base, "--out-dir", str(annotated)], "is a symbolic link")
    template = annotated / "meta_eval_template.csv"  # a split file named like the template
    template.write_text("t\n")
    before = snapshot(tmp_path)
    refused(capsys, ["meta-eval", "--annotated-dir", str(annotated), "--dodeca-inconsistent", str(template),
                     "--write-template", str(annotated)], "(--write-template) is the input")
    assert snapshot(tmp_path) == before
    card = snapshot(CARD_DIR)
    for out in (ROOT, CARD_DIR, MODULE_FILE.parent, ROOT.parent):
        refused(capsys, ["space", str(out)], f"'{out}' (out_dir)")
    assert snapshot(CARD_DIR) == card
