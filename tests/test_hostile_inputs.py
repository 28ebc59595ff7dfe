"""The third reliability pass (issue 28): nothing the user gave us is ever damaged.

Every case of the issue, and the classes around it: outputs that are, contain or lie inside an
input; targets that are not regular files; the user's columns; the cache key and damaged cache
entries; invisible text; duplicate JSON keys; formats told by their content; a Parquet
decompression bomb; publish; the evaluate instance under threads. Every test that writes takes a
checksum of every input file and folder before and after (`snapshot`)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from q2_metric.cli import main
from q2_metric.io import read_rows
from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer
from q2_metric.errors import Q2InputError

HEADER = "response,knowledge\n"
ROWS = "Paris is big.,Paris is big.\nRome is old.,Rome is very old.\n"


def snapshot(*paths: Path) -> dict[str, tuple]:
    """Every file and folder under `paths`: its kind, and a SHA-256 of its bytes (files) or target (links)."""
    out: dict[str, tuple] = {}
    for root in map(Path, paths):
        items = [root, *sorted(root.rglob("*"))] if root.is_dir() and not root.is_symlink() else [root]
        for p in items:
            if p.is_symlink():
                out[str(p)] = ("link", os.readlink(p))
            elif p.is_dir():
                out[str(p)] = ("dir",)
            elif p.is_file():
                out[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            elif p.exists():
                out[str(p)] = ("special", p.stat().st_mode)
    return out


def tiny_flags(tiny_config) -> list[str]:
    return ["--qg-model", tiny_config.qg_model, "--qa-model", tiny_config.qa_model, "--nli-model",
            tiny_config.nli_model, "--decoding", "greedy", "--device", "cpu", "--max-question-length", "8",
            "--no-progress"]


def refused(capsys, argv: list[str], *needles: str) -> str:
    """`q2 ARGV` exits 2 with one line on stderr (no traceback) holding every needle."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("q2: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


PAIRS = [{"response": "Paris is big.", "knowledge": "Paris is big."},
         {"response": "Rome is old.", "knowledge": "Rome is very old."}]


# -- outputs that are, contain or lie inside an input ----------------------------------------------

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


# -- the user's columns ------------------------------------------------------------------------------

@pytest.mark.parametrize("column, prefix", [("q2", ""), ("reason", ""), ("error", ""), ("num_questions", ""),
                                            ("dodeca_q2", "dodeca_"), ("dodeca_error", "dodeca_")])
def test_input_columns_the_output_writes_are_refused(tmp_path, capsys, column, prefix):
    data = tmp_path / "in.csv"
    data.write_text(f"response,knowledge,{column}\nParis is big.,Paris is big.,mine\n")
    before = snapshot(data)
    argv = ["score", str(data), "-o", str(tmp_path / "o.csv"), "--no-cache"] + (["--prefix", prefix] if prefix else [])
    refused(capsys, argv, f"already has the column '{column}'", "--prefix")
    assert snapshot(data) == before and not (tmp_path / "o.csv").exists()
    # with another prefix the column is kept as it was
    score_file(scripted_scorer(), data, tmp_path / "o.csv", cache_dir=None, prefix="new_")
    [row] = list(csv.DictReader(open(tmp_path / "o.csv")))
    assert row[column] == "mine" and row["new_q2"] != ""


def test_same_column_as_response_and_knowledge_is_refused(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--knowledge-col", "response",
                     "--no-cache"], "both 'response'")


# -- convert-nli, meta-eval, space, publish -----------------------------------------------------------

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


def test_publish_card_bad_yaml_and_collisions_are_one_sentence(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": "q2:x"}))
    card = tmp_path / "README.md"
    card.write_text("---\nlicense: [mit\n---\n# m\n")
    before = snapshot(tmp_path)
    base = ["publish", "--results", str(results), "--model-name", "m"]
    refused(capsys, [*base, "--card", str(card)], f"The YAML header of the card '{card}' cannot be read (line")
    refused(capsys, [*base, "--card", str(card), "--dry-run"], "cannot be read")
    refused(capsys, [*base, "--card", str(results)], f"'{results}' (--card) is the input '{results}' (--results)")
    link = tmp_path / "CARD.md"
    link.symlink_to(card)
    refused(capsys, [*base, "--card", str(link)], "is a symbolic link")
    assert snapshot(tmp_path) == {**before, **snapshot(link)}
    card.write_text("---\nlicense: mit\n---\n# m\n")
    assert main([*base, "--card", str(card)]) == 0
    assert "model-index" in card.read_text() and "license: mit" in card.read_text()


def test_publish_fails_fast_when_the_hub_cannot_be_reached(tmp_path):
    with socket.socket() as s:  # a local port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": "q2:x"}))
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{port}",
           "HF_HOME": str(tmp_path / "hf"), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", "HF_TOKEN": ""}
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "q2_metric.cli", "publish", "--results", str(results),
                          "--model-name", "m", "--repo-id", "me/m"], env=env, capture_output=True, text=True,
                         timeout=120)
    took = time.monotonic() - start
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().startswith(f"q2: The Hub cannot be reached (127.0.0.1:{port}: ")
    assert took < 15, took  # the client's own retries took ~23 s


# -- the cache --------------------------------------------------------------------------------------

def test_damaged_cache_entry_is_dropped_recomputed_and_reported_once(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    first = score_file(scripted_scorer(), data, tmp_path / "a.csv", cache_dir=tmp_path / "cache")
    [cache] = (tmp_path / "cache").rglob("responses.jsonl")
    lines = cache.read_text().splitlines()
    key = json.loads(lines[0])["key"]
    cache.write_text("\n".join([json.dumps({"key": key, "result": {}}), *lines[1:],
                                json.dumps({"result": {}}), '["not", "ours"]']) + "\n")
    capsys.readouterr()
    second = score_file(scripted_scorer(), data, tmp_path / "b.csv", cache_dir=tmp_path / "cache")
    assert (second.num_cached, second.num_scored_now) == (1, 1)
    assert second.warnings == [f"3 damaged lines of the cache file '{cache}' were dropped; their rows are "
                               "scored again"]
    assert capsys.readouterr().err.count("damaged lines") == 1
    third = score_file(scripted_scorer(), data, tmp_path / "c.csv", cache_dir=tmp_path / "cache")
    assert (third.num_cached, third.warnings) == (2, [])  # reported once: the damaged lines are gone
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes() == (tmp_path / "c.csv").read_bytes()
    assert first.system.q2 == second.system.q2


def test_cache_key_follows_library_versions(monkeypatch):
    from q2_metric import signature
    from q2_metric.corpus.cache import cache_key

    scorer = scripted_scorer()
    keys = {cache_key(scorer)}
    for lib in ("transformers", "tokenizers", "spacy", "torch"):
        real = signature._version
        monkeypatch.setattr(signature, "_version", lambda d, lib=lib, real=real: "0.0.0-other" if d == lib else real(d))
        keys.add(cache_key(scorer))
        monkeypatch.setattr(signature, "_version", real)
    assert len(keys) == 5  # each library's version changes the key


def test_spacy_folder_identity_covers_every_file(tmp_path):
    spacy = pytest.importorskip("spacy")
    from q2_metric.models.checks import check_spacy

    folder = tmp_path / "pipeline"
    spacy.blank("en").to_disk(folder)
    seen = {check_spacy(str(folder))}
    config = (folder / "config.cfg").read_text()
    (folder / "config.cfg").write_text(config.replace("[nlp]", "[nlp]\n# changed", 1))
    seen.add(check_spacy(str(folder)))
    vocab = next(p for p in sorted((folder / "vocab").iterdir()) if p.is_file())
    vocab.write_bytes(vocab.read_bytes() + b"\0")  # a component's file in a subfolder
    seen.add(check_spacy(str(folder)))
    assert len(seen) == 3 and all(s.startswith("spacy:local-") for s in seen)


# -- text and JSON ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d\u2060", "\u202e\u2066\u2069", "\ufeff",
                                  "\u00a0\u2003\u3000", "\u3164", "\u00ad", "\U000e0041", "\u2800", " \t\u200f "])
def test_invisible_text_is_empty(text):
    result = scripted_scorer().score([text, "Paris is big."], ["Paris is big.", text])
    assert [r.reason for r in result.responses] == ["empty response", "empty knowledge"]
    assert result.system.num_scored == 0


@pytest.mark.parametrize("text", ["a\u200b", "\u0301", "\ue000", "é"])
def test_visible_text_is_not_empty(text):
    from q2_metric.validation import is_blank

    assert not is_blank(text)


def test_duplicate_json_key_names_the_row_and_key(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text('{"response": "a", "knowledge": "b"}\n'
                    '{"response": "a", "knowledge": "b", "knowledge": "c"}\n'
                    '{"response": "a", "knowledge": {"x": 1, "x": 2}}\n')
    rows = read_rows(data)
    assert [r.error for r in rows] == [
        None, "line 2: the key 'knowledge' appears twice in one JSON object (which value is meant?)",
        "line 3: the key 'x' appears twice in one JSON object (which value is meant?)"]


# -- formats --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", ["utf-16", "utf-32", "utf-16-be"])
def test_utf16_and_utf32_with_a_bom_are_read(tmp_path, codec):
    data = tmp_path / "in.csv"
    bom = {"utf-16-be": b"\xfe\xff"}.get(codec, b"")
    data.write_bytes(bom + (HEADER + "Café.,Café ☕.\n").encode(codec))
    [row] = read_rows(data)
    assert row.fields == {"response": "Café.", "knowledge": "Café ☕."}


@pytest.mark.parametrize("name, packer, what", [
    ("in.csv", gzip.compress, "gzip-compressed"), ("in.csv.gz", gzip.compress, "gzip-compressed"),
    ("in.csv", lambda b: __import__("bz2").compress(b), "bzip2-compressed"),
    ("in.xlsx", lambda b: b"PK\x03\x04" + b"\0" * 30, "a ZIP archive")])
def test_compressed_inputs_say_what_they_are(tmp_path, capsys, name, packer, what):
    data = tmp_path / name
    data.write_bytes(packer((HEADER + ROWS).encode()))
    line = refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--no-cache"], what)
    assert "latin-1" not in line


def test_utf16_without_bom_is_not_told_latin1(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_bytes((HEADER + ROWS).encode("utf-16-le"))
    line = refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--no-cache"], "UTF-16")
    assert "utf-16-le" in line


def test_extensions_are_read_by_content_and_case_insensitively(tmp_path):
    jsonl = tmp_path / "IN.JSONL"
    jsonl.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    bare = tmp_path / "pairs"  # no extension: JSON objects
    bare.write_text(jsonl.read_text())
    parquet = write_parquet(tmp_path / "pairs.csv", PAIRS)  # Parquet under a wrong extension
    upper = write_parquet(tmp_path / "P.PARQUET", PAIRS)
    for path in (jsonl, bare, parquet, upper):
        assert [r.fields for r in read_rows(path)] == PAIRS, path


def test_output_extensions_it_cannot_write_are_refused(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    for name in ("x.xlsx", "x.txt", "x.tsv", "x"):
        refused(capsys, ["score", str(data), "-o", str(tmp_path / name), "--no-cache"],
                "tables are written as .csv, .jsonl")
        assert not (tmp_path / name).exists()
    refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--steps", str(tmp_path / "s.txt"),
                     "--no-cache"], "(--steps)")
    score_file(scripted_scorer(), data, tmp_path / "x.JSONL", cache_dir=None)
    score_file(scripted_scorer(), data, tmp_path / "x.Parquet", cache_dir=None)
    assert [json.loads(line)["response"] for line in open(tmp_path / "x.JSONL")] == ["Paris is big.", "Rome is old."]
    assert [r.fields["response"] for r in read_rows(tmp_path / "x.Parquet", allow_empty=True)] == \
        ["Paris is big.", "Rome is old."]


BOMB = r"""
import resource, sys
from q2_metric.io import read_rows
from q2_metric.errors import Q2InputError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    read_rows(sys.argv[1])
    print("read")
except Q2InputError as err:
    print(err)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_parquet_decompression_bomb_is_refused_before_decoding(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, text = 400_000, "x" * 1000  # 400 MB of text once decoded, a few kB on disk
    table = pa.table({"response": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), [text]),
                      "knowledge": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), ["k"])})
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(table, bomb, compression="zstd")
    assert bomb.stat().st_size < 100_000
    env = {**os.environ, "Q2_MAX_INPUT_BYTES": str(50 * 1024 ** 2)}
    run = subprocess.run([sys.executable, "-c", BOMB, str(bomb)], env=env, capture_output=True, text=True, timeout=300)
    message, grown_mb = run.stdout.splitlines()
    assert message.startswith(f"The input '{bomb}' is a Parquet table of at least ") and \
        "above the limit of 52,428,800 bytes" in message and "Q2_MAX_INPUT_BYTES" in message
    assert int(grown_mb) < 200, grown_mb  # the 400 MB of text were never built
    big = tmp_path / "big.csv"
    big.write_text(HEADER + ROWS * 10)
    with pytest.raises(Q2InputError, match="is a file of [0-9]+ bytes, above the limit of 100 bytes"):
        os.environ["Q2_MAX_INPUT_BYTES"] = "100"
        try:
            read_rows(big)
        finally:
            del os.environ["Q2_MAX_INPUT_BYTES"]


# -- ParlAI ---------------------------------------------------------------------------------------

def test_parlai_explain_file_never_replaces_the_annotations(tmp_path, tiny_config):
    pytest.importorskip("parlai")
    sys.path.insert(0, str(Path(__file__).parent))
    from parlai_data import write_annotations

    data = write_annotations(tmp_path / "annotations.csv", 3)
    before = snapshot(data)
    flags = ["--q2-qg-model", tiny_config.qg_model, "--q2-qa-model", tiny_config.qa_model, "--q2-nli-model",
             tiny_config.nli_model, "--q2-decoding", "greedy", "--q2-max-question-length", "8", "--q2-device", "cpu"]
    base = [sys.executable, "-m", "parlai.scripts.eval_model", "-t", "parlai_ext.teachers:CrossAnnotationTeacher",
            "-m", "parlai_ext.agents:ReplayAgent", "--q2-annotations", str(data), "--datapath",
            str(tmp_path / "datapath"), "--metrics", "q2", "--log-every-n-secs", "-1", *flags]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for explain, how in ((data, "is the input"), (tmp_path, "contains the input")):
        run = subprocess.run([*base, "--q2-explain-file", str(explain)], capture_output=True, text=True, env=env,
                             timeout=600)
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert f"(--q2-explain-file) {how} '{data}' (--q2-annotations)" in run.stderr.strip().splitlines()[-1]
        assert snapshot(data) == before
    # a folder that does not exist yet is created
    explain = tmp_path / "new" / "deeper" / "explain.jsonl"
    run = subprocess.run([*base, "--q2-explain-file", str(explain)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(explain.read_text().splitlines()) == 3 and snapshot(data) == before


# -- evaluate ------------------------------------------------------------------------------------

def test_one_evaluate_instance_is_safe_from_three_threads(tiny_config):
    import threading

    import evaluate

    import q2_metric

    metric = evaluate.load(q2_metric.module_path())
    opts = dict(qg_model=tiny_config.qg_model, qa_model=tiny_config.qa_model, nli_model=tiny_config.nli_model,
                device="cpu", decoding="greedy", max_question_length=8)
    preds = ["Paris is big.", "Rome is old."]
    expected = metric.compute(predictions=preds, references=preds, **opts)
    results, errors = [], []

    def work() -> None:
        for _ in range(6):
            try:
                results.append(metric.compute(predictions=preds, references=preds, **opts))
            except Exception as err:  # noqa: BLE001 - counted below
                errors.append(repr(err))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 18
    assert all(r["scores"] == expected["scores"] for r in results)


# -- the last two items of the issue ----------------------------------------------------------------

def test_long_text_warning_hidden_under_quiet(tmp_path, tiny_config):
    from transformers import AutoTokenizer

    limit = AutoTokenizer.from_pretrained(tiny_config.qa_model).model_max_length
    long = " ".join(["Paris is a big city in France."] * (limit // 4 + 50))
    data = tmp_path / "in.csv"
    data.write_text(HEADER + f"Paris is big.,{long}\n")
    run = subprocess.run([sys.executable, "-m", "q2_metric.cli", "score", str(data), "-o",
                          str(tmp_path / "o.csv"), "--no-cache", "--quiet", *tiny_flags(tiny_config)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


def test_browser_close_leaves_no_process(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from browser import Browser, find_chromium, group_alive

    if find_chromium() is None:
        pytest.skip("chromium is not installed")
    browser = Browser(tmp_path / "profile")
    assert browser.js("1 + 1") == 2
    pgid = browser.proc.pid
    assert group_alive(pgid)
    browser.close()
    assert not group_alive(pgid)


def test_parlai_explain_file_against_every_input_and_output(tmp_path, capsys):
    pytest.importorskip("parlai")
    from parlai_ext.options import check_explain_file

    model = tmp_path / "model"
    model.write_text("weights")
    report = tmp_path / "report.json"
    opt = {"model_file": str(model), "report_filename": str(report), "world_logs": str(tmp_path / "logs.jsonl")}
    for path, needle in ((model, "is the input"), (report, "name the same path"),
                         (tmp_path / "logs.jsonl", "name the same path"), (model / "x.jsonl", "lies inside")):
        with pytest.raises(SystemExit) as exit_:
            check_explain_file(opt, str(path))
        assert exit_.value.code == 2 and needle in capsys.readouterr().err
    assert model.read_text() == "weights"


def test_ray_checks_paths_and_columns_before_ray_starts(tmp_path):
    pytest.importorskip("ray")
    from q2_metric.errors import OutputPathError
    from q2_metric.corpus.ray import score_file_ray

    folder = tmp_path / "data"
    write_parquet(folder / "part-0.parquet", PAIRS)
    before = snapshot(folder)
    with pytest.raises(OutputPathError, match="lies inside the input"):
        score_file_ray(scripted_scorer(), folder, folder / "scores.parquet", cache_dir=None)
    write_parquet(tmp_path / "cols.parquet", [{**p, "q2": 1.0} for p in PAIRS])
    with pytest.raises(Q2InputError, match="already has the column 'q2'"):
        score_file_ray(scripted_scorer(), tmp_path / "cols.parquet", tmp_path / "o.csv", cache_dir=None)
    assert snapshot(folder) == before


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
    with pytest.raises(OutputPathError, match="lies inside|contains"):
        metric.compute(predictions=["a"], references=["b"], qg_model=str(tmp_path), **opts)
    assert snapshot(qg) == before
