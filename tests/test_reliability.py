"""Issue 19, hostile and unusual inputs: every input row is one row, every failure one sentence.

CSV per RFC 4180 (and a property test through `csv.writer`), lone surrogates and control
characters, option values checked once for every front-end, interrupts, concurrent runs, a full
disk, damaged NLI archives, multi-reference `evaluate` input. Expected values come from the RFC,
from `csv.writer`'s own output, or from separate runs (the best of single-reference scores).
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from q2_metric.io import MANIFEST_SUFFIX, TEMP_MARK, read_rows, recover_outputs
from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import ScriptedParser, scripted_scorer

PY = sys.executable
HEADER = "response,knowledge\n"


def cli(*args, env=None, **kw):
    return subprocess.run([PY, "-m", "q2_metric.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, **kw)


def tiny_flags(config) -> list[str]:
    return ["--qg-model", config.qg_model, "--qa-model", config.qa_model, "--nli-model", config.nli_model,
            "--decoding", "greedy", "--device", "cpu", "--no-progress"]


# -- CSV: RFC 4180, one record = one row, the file's line numbers -----------------------------------

def test_bare_cr_is_data_not_a_phantom_row(tmp_path):
    """The issue's case: `\\r` inside an unquoted field of an LF file is data (before: a phantom row
    "the us" scored with the first half's knowledge, and every later line number off by one)."""
    path = tmp_path / "x.csv"
    path.write_bytes(b"response,knowledge\nbob,Bob.\nit aired in\rthe us,It aired in the US.\nlast,Last.\n")
    rows = read_rows(path)
    assert [(r.line, r.fields, r.error) for r in rows] == [
        (2, {"response": "bob", "knowledge": "Bob."}, None),
        (3, {"response": "it aired in\rthe us", "knowledge": "It aired in the US."}, None),
        (4, {"response": "last", "knowledge": "Last."}, None)]


def test_quoted_cr_lf_crlf_are_data_and_lines_are_the_files(tmp_path):
    # CRLF line ends, as csv.writer writes them; fields with CR, LF and CRLF inside quotes
    text = ('response,knowledge\r\n"a\rb",K1\r\n"c\nd",K2\r\n"e\r\nf","K3, ""quoted"""\r\n'
            'only-one\r\n"g",K5\r\n')
    path = tmp_path / "x.csv"
    path.write_bytes(text.encode())
    rows = read_rows(path)
    assert [r.line for r in rows] == [2, 3, 5, 7, 8]  # the file's lines (LF-counted) where each starts
    assert [r.fields.get("response") for r in rows] == ["a\rb", "c\nd", "e\r\nf", "only-one", "g"]
    assert rows[2].fields["knowledge"] == 'K3, "quoted"'
    assert [r.error for r in rows] == [None, None, None, "line 7: 1 field(s) but the header has 2 (a comma in "
                                                        "an unquoted field, or a missing one?)", None]


def test_property_csv_writer_rows_read_back_one_for_one(tmp_path):
    """Seeded random rows with CR, LF, CRLF, quotes, commas, NUL and non-ASCII text, written by
    `csv.writer`: every row reads back as exactly one row, equal to what was written, on the line
    the writer started it. (With `lineterminator="\n"` csv.writer leaves a field's CR unquoted, so
    a last field ending in CR gives `x,\r\n`, which every reader reads as a CRLF line end: that
    combination is written with QUOTE_ALL.)"""
    alphabet = ['a', 'b', ' ', ',', '"', '\r', '\n', '\r\n', 'é', '€', '😀', '\u2028', '\x00', "'", ';', 'x' * 5]
    rng = random.Random(19)
    for trial in range(60):
        records = [["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(2)]
                   for _ in range(rng.randint(1, 25))]
        records = [r for r in records if r != ["", ""]]  # csv.writer writes `""`-less empty rows as `,`
        terminator, quoting = rng.choice([("\r\n", csv.QUOTE_MINIMAL), ("\r\n", csv.QUOTE_ALL),
                                          ("\n", csv.QUOTE_ALL)])
        buf = io.StringIO(newline="")
        writer = csv.writer(buf, lineterminator=terminator, quoting=quoting)
        writer.writerow(["response", "knowledge"])
        starts = []
        for record in records:
            starts.append(buf.getvalue().count("\n") + 1)
            writer.writerow(record)
        path = tmp_path / f"p{trial}.csv"
        path.write_bytes(buf.getvalue().encode())
        rows = read_rows(path, allow_empty=True)
        assert [[r.fields.get("response"), r.fields.get("knowledge")] for r in rows] == records, trial
        assert [r.error for r in rows] == [None] * len(records)
        assert [r.line for r in rows] == starts


def test_cli_scores_one_output_row_per_input_row(tmp_path):
    rows = [["it aired in\rthe us", "It aired in the US."], ['say "hi",\r\nthen', "Bob said hi."],
            ["Paris is big.", "Paris is big."]]
    path = tmp_path / "in.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["response", "knowledge"], *rows])
    report = score_file(scripted_scorer(), path, tmp_path / "out.csv", cache_dir=None)
    assert (report.num_rows, report.num_bad) == (3, 0)
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        assert [[r["response"], r["knowledge"]] for r in csv.DictReader(f)] == rows


# -- lone surrogates and control characters -----------------------------------------------------------

def test_lone_surrogate_is_replaced_in_the_api(tmp_path):
    parser = ScriptedParser()
    seen = []
    parse = parser.parse
    parser.parse = lambda texts: seen.extend(texts) or parse(texts)
    result = scripted_scorer(parser=parser).score(["Bob\ud800 Ross hosted it.", "A \ud83d\ude00 pair."],
                                                  ["Bob Ross hosted it.", "A pair."])
    assert "Bob\ufffd Ross hosted it." in seen and "A \U0001F600 pair." in seen  # the pair is its character
    assert not any(0xD800 <= ord(c) <= 0xDFFF for text in seen for c in text)
    assert result.system.num_scored == 2


def test_lone_surrogate_in_jsonl_never_ends_the_run(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"response": "Paris is big.", "knowledge": "Paris is big."}\n'
                    '{"response": "Bob\\ud800 Ross.", "knowledge": "Bob Ross."}\n'
                    '{"response": "Rome.", "knowledge": "Rome."}\n', encoding="utf-8")
    for out in ("out.csv", "out.jsonl", "out.parquet"):
        report = score_file(scripted_scorer(), path, tmp_path / out, cache_dir=tmp_path / "cache")
        assert (report.num_rows, report.num_bad, report.system.num_scored) == (3, 0, 3)
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[1])["response"] == "Bob\ufffd Ross."


def test_nul_only_knowledge_is_empty():
    result = scripted_scorer().score(["Paris is big.", "Rome.", "\x00\x1b"], ["\x00\x00", " \x00\t", "Rome."])
    assert [r.reason for r in result.responses] == ["empty knowledge", "empty knowledge", "empty response"]
    assert result.system.num_skipped == 3


# -- the evaluate module ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def metric():
    import evaluate

    import q2_metric

    return evaluate.load(q2_metric.module_path())


@pytest.fixture(scope="module")
def opts(tiny_config):
    return dict(qg_model=tiny_config.qg_model, qa_model=tiny_config.qa_model, nli_model=tiny_config.nli_model,
                device="cpu", decoding="greedy", max_question_length=8, progress=False)


def test_evaluate_lone_surrogate_and_empty_compute_signature(metric, opts):
    results = metric.compute(predictions=["Bob\ud800 Ross hosted the show.", "Bob \x1b[31mRoss\x00 hosted it."],
                             references=["Bob Ross hosted it.", "Bob Ross\x7f hosted\x0b it."], **opts)
    assert results["num_scored"] == 2  # control characters go to the models as they are
    empty = metric.compute(predictions=[], references=[], **opts)
    assert empty["num_responses"] == 0
    for role in ("qg", "qa", "nli"):  # the model digests, as in a call that scores something
        assert f"|{role}:local-" in empty["signature"]  # a local model is named by its digest
    assert empty["signature"] == results["signature"]


def test_evaluate_multi_reference_is_the_best_reference(metric, opts, rows):
    preds = [r["response"] for r in rows[:3]]
    refs = [[rows[0]["knowledge"], rows[1]["knowledge"]], [rows[1]["knowledge"]],
            ["", rows[2]["knowledge"], rows[0]["knowledge"]]]
    multi = metric.compute(predictions=preds, references=refs, return_details=True, **opts)
    # expected: each reference scored on its own, then the best per prediction
    single = [[metric.compute(predictions=[p], references=[k], **opts)["scores"][0] for k in ks]
              for p, ks in zip(preds, refs)]
    best = [max(range(len(s)), key=lambda j: (s[j] is not None, s[j] or 0.0, -j)) for s in single]
    assert multi["scores"] == [s[b] for s, b in zip(single, best)]
    assert multi["best_reference"] == best and len(multi["details"]) == 3
    assert multi["num_responses"] == 3
    with pytest.raises(ValueError, match="item 0: field 'references' is an empty list"):
        metric.compute(predictions=["a"], references=[[]], **opts)


# -- option values: one check, named as each front-end spells it --------------------------------------

def test_cli_batch_size_zero_is_one_sentence(tmp_path, capsys):
    from q2_metric.cli import main

    (tmp_path / "in.csv").write_text(HEADER + "a,b\n")
    assert main(["score", str(tmp_path / "in.csv"), "-o", str(tmp_path / "o.csv"), "--batch-size", "0",
                 "--no-cache"]) == 2
    assert capsys.readouterr().err == "q2: Invalid Q² option --batch-size=0: use an integer >= 1.\n"


def test_parlai_option_checks_name_the_parlai_flag():
    pytest.importorskip("parlai")
    from parlai_ext.options import config_from_opt

    from q2_metric.errors import Q2OptionError

    base = {"q2_qg_model": "qg", "q2_qa_model": "qa", "q2_nli_model": "nli", "q2_device": "cpu"}
    for key, value, message in [
            ("q2_batch_size", 0, "Invalid Q² option --q2-batch-size=0: use an integer >= 1."),
            ("q2_batch_size", -1, "Invalid Q² option --q2-batch-size=-1: use an integer >= 1."),
            ("q2_max_question_length", 0, "Invalid Q² option --q2-max-question-length=0: use an integer >= 1.")]:
        with pytest.raises(Q2OptionError) as err:
            config_from_opt({**base, key: value})
        assert str(err.value) == message


def test_parlai_device_without_gpu_is_one_parse_error(tmp_path):
    pytest.importorskip("parlai")
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    res = subprocess.run([PY, "-m", "parlai.scripts.eval_model", "-t", "parlai_ext.teachers:CrossAnnotationTeacher",
                          "-m", "parlai_ext.agents:ReplayAgent", "--datapath", str(tmp_path), "--metrics", "q2",
                          "--q2-device", "cuda"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert ("argument --q2-device: invalid value 'cuda': torch sees 0 CUDA device(s) here; use 'auto' or 'cpu'"
            in res.stdout + res.stderr)
    assert "--device cpu" not in res.stdout + res.stderr


def test_token_help_prefers_the_environment():
    from q2_metric.cli import build_parser

    publish = build_parser()._subparsers._group_actions[0].choices["publish"]
    assert "HF_TOKEN" in publish.format_help() and "hf auth login" in publish.format_help()


# -- interrupts -----------------------------------------------------------------------------------------

def start_paused(args, pause, tmp_path, env=None):
    flag = tmp_path / f"paused-{pause}"
    proc = subprocess.Popen([PY, "-m", "q2_metric.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "Q2_TEST_PAUSE": pause,
                                 "Q2_TEST_PAUSE_FILE": str(flag), **(env or {})})
    deadline = time.time() + 300
    while not flag.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline
        time.sleep(0.1)
    return proc, flag


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_MARK in p.name or p.name.endswith(MANIFEST_SUFFIX))


def test_sigint_at_start_up_is_one_line(tmp_path):
    (tmp_path / "in.csv").write_text(HEADER + "a,b\n")
    # held where start-up checks the models (a fixed sleep raced start-up on a fast machine)
    proc, _ = start_paused(["score", str(tmp_path / "in.csv"), "-o", str(tmp_path / "o.csv")], "models-check",
                           tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.count("\n") == 1 and err.startswith("q2: interrupted (SIGINT)"), err


@pytest.mark.parametrize("sig, code, point", [(signal.SIGTERM, 143, "chunk-1"), (signal.SIGINT, 130, "chunk-1"),
                                              (signal.SIGTERM, 143, "temps-written")])
def test_signal_mid_run_keeps_cache_and_outputs(tiny_config, rows, tmp_path, sig, code, point):
    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["response", "knowledge"]] + [[r["response"], r["knowledge"]] for r in rows[:4]])
    out = tmp_path / "out"
    out.mkdir()
    (out / "o.csv").write_text("old\n")
    args = ["score", str(data), "-o", str(out / "o.csv"), "--cache-dir", str(tmp_path / "cache"),
            "--chunk-size", "2", *tiny_flags(tiny_config)]
    proc, _ = start_paused(args, point, tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    ours = [line for line in err.splitlines() if line.startswith("q2")]
    assert proc.returncode == code and ours == [
        f"q2: interrupted ({signal.Signals(sig).name}); run the same command again to resume from the cache."]
    assert "Traceback" not in err
    assert (out / "o.csv").read_text() == "old\n" and leftovers(out) == []  # the old set, nothing half-written
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    # chunks grow 1, 2, ... (score_files.chunked): a stop after the first chunk has cached 1 response
    cached = 4 if point == "temps-written" else 1
    assert f"({4 - cached} now, {cached} from the cache)" in res.stdout  # the finished work is reused


# -- concurrent runs --------------------------------------------------------------------------------------

def test_recover_outputs_leaves_a_live_runs_manifest_alone(tiny_config, rows, tmp_path):
    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["response", "knowledge"]] + [[r["response"], r["knowledge"]] for r in rows[:2]])
    out = tmp_path / "o.csv"
    args = ["score", str(data), "-o", str(out), "--summary", str(tmp_path / "s.json"), "--cache-dir",
            str(tmp_path / "cache"), *tiny_flags(tiny_config)]
    proc, flag = start_paused(args, "manifest-written", tmp_path)  # run A: its set is being renamed
    manifest = tmp_path / f".o.csv{MANIFEST_SUFFIX}"
    assert manifest.exists()
    other = threading.Thread(target=recover_outputs, args=([out, tmp_path / "s.json"],))  # what run B does
    other.start()
    other.join(timeout=2)
    assert other.is_alive() and manifest.exists()  # B waits for A instead of completing A's manifest
    flag.unlink()  # let A go on
    _, err = proc.communicate(timeout=120)
    other.join(timeout=30)
    assert proc.returncode == 0, err
    assert not other.is_alive() and leftovers(tmp_path) == []
    assert json.loads((tmp_path / "s.json").read_text())["num_rows"] == 2
    res = cli(*args)  # a second run on the same outputs and cache
    assert res.returncode == 0 and "(0 now, 2 from the cache)" in res.stdout, res.stderr


# -- a full disk ------------------------------------------------------------------------------------------

FULL_DISK = r"""
import json, resource, signal, sys
from pathlib import Path
from q2_metric.corpus.cache import cache_key
from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer
tmp, limit, old = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
scorer = scripted_scorer()
cache = tmp / "cache" / cache_key(scorer) / "responses.jsonl"
cache.parent.mkdir(parents=True, exist_ok=True)
# an earlier run's cache, near the limit: one valid entry of 20000 bytes (a damaged one would be dropped)
entry = {"key": "earlier", "result": {"q2": 1.0, "q2_no_nli": 1.0, "fallback": False, "reason": None,
                                      "questions": []}, "pad": ""}
entry["pad"] = "x" * (20000 - len(json.dumps(entry)))
cache.write_text(json.dumps(entry) + "\n")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    report = score_file(scorer, tmp / "in.csv", old, cache_dir=tmp / "cache")
    print(json.dumps({"scored": report.system.num_scored, "warnings": report.warnings}))
except OSError as err:
    print(json.dumps({"error": f"{err.strerror} '{err.filename}'"}))
print(json.dumps({"cache_size": cache.stat().st_size}))
"""


def test_full_disk_keeps_the_scored_rows_and_names_the_file(tmp_path):
    (tmp_path / "in.csv").write_text(HEADER + "".join(f"Paris {i} is big.,Paris {i} is big.\n" for i in range(30)))
    old = tmp_path / "out.csv"
    old.write_text("old\n")
    run = lambda limit: subprocess.run([PY, "-c", FULL_DISK, str(tmp_path), str(limit), str(old)],  # noqa: E731
                                       capture_output=True, text=True, timeout=300)
    # the cache cannot grow, the outputs (small) can: the chunk is kept and written out
    res = run(20001 + 500)
    first, second = [json.loads(line) for line in res.stdout.splitlines()]
    cache = next((tmp_path / "cache").rglob("responses.jsonl"))
    assert first["scored"] == 30 and second["cache_size"] == 20001  # the cut append was undone
    assert first["warnings"] == [f"cannot write the cache file '{cache}' (File too large): this run goes on without "
                                 "the cache (its scores go to the outputs but will not be reused by a later run)"]
    assert f"q2: warning: cannot write the cache file '{cache}'" in res.stderr
    assert len(old.read_text().splitlines()) == 31
    # nothing can grow: the error names the output file and the earlier outputs are kept
    old.write_text("old\n")
    res = run(1000)
    first = json.loads(res.stdout.splitlines()[0])
    assert first == {"error": f"File too large while writing (the earlier outputs are kept) '{old}'"}
    assert old.read_text() == "old\n" and leftovers(tmp_path) == []


# -- q2 convert-nli on damaged or hostile archives --------------------------------------------------------

def tar_with(path: Path, members: list[tuple[str, bytes | None, bytes]]) -> Path:
    """(name, data or None, type) members; type is a tarfile type (REGTYPE, SYMTYPE, LNKTYPE, DIRTYPE)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = "/etc/passwd"
            if data is not None and kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return path


def test_convert_nli_damaged_archives_are_one_sentence(tmp_path):
    import torch

    buf = io.BytesIO()
    torch.save({"w": torch.zeros(1)}, buf)
    weights, labels = buf.getvalue(), b"entailment\ncontradiction\nneutral\n"
    good_config = json.dumps({"model": {"type": "basic_classifier"}}).encode()
    R, S, L, D = tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE
    rest = [("weights.th", weights, R), ("vocabulary/labels.txt", labels, R)]
    cases = {
        "symlink": ([("config.json", None, S), *rest], "config.json is a symbolic link in the archive, not a file"),
        "hardlink": ([("config.json", None, L), *rest], "config.json is a hard link in the archive, not a file"),
        "dir": ([("config.json", None, D), *rest], "config.json is a directory in the archive, not a file"),
        "badjson": ([("config.json", b"{nope", R), *rest], "config.json is not valid JSON"),
        "notorch": ([("config.json", good_config, R), ("weights.th", b"not a pickle", R),
                     ("vocabulary/labels.txt", labels, R)], "weights.th is not a PyTorch state dict"),
        "dotdot": ([("../config.json", good_config, R), *rest], "config.json is missing"),
    }
    (tmp_path / "work").mkdir()
    for name, (members, expected) in cases.items():
        archive = tar_with(tmp_path / f"{name}.tar.gz", members)
        res = cli("convert-nli", str(archive), "out", cwd=tmp_path / "work")
        assert res.returncode == 2 and res.stderr.count("\n") == 1, (name, res.stderr)
        assert res.stderr.startswith(f"q2: {archive}: {expected}"), (name, res.stderr)
    not_tar = tmp_path / "plain.tar.gz"
    not_tar.write_text("hello")
    res = cli("convert-nli", str(not_tar), "out", cwd=tmp_path / "work")
    assert res.returncode == 2 and res.stderr.startswith(f"q2: {not_tar}: not a tar archive"), res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*(f"{n}.tar.gz" for n in cases), "plain.tar.gz",
                                                                 "work"])
    assert list((tmp_path / "work").iterdir()) == []  # nothing written, not even the output folder
