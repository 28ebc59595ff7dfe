"""`q2 score` end to end on the tiny models: what it prints (JSON, the bare score, the signature,
progress in a log or on a terminal), its flags, bad rows, and `--ray`."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import tiny_flags
from support.files import BARE, HEADER, STRAY, read_jsonl, strict_json, write, write_csv

from q2_metric.cli import main


@pytest.fixture()
def two_rows(rows, tmp_path):
    return write_csv(tmp_path / "in.csv", rows[:2])


def test_format_json_prints_only_strict_json(two_rows, tiny_models, tmp_path, capsys):
    code = main(
        [
            "score",
            str(two_rows),
            "-o",
            str(tmp_path / "out.csv"),
            "--no-cache",
            "--format",
            "json",
            *tiny_flags(tiny_models),
        ]
    )
    out = capsys.readouterr()
    assert code == 0
    figures = strict_json(out.out)  # stdout is the JSON object and nothing else
    assert {
        "q2",
        "q2_no_nli",
        "coverage",
        "no_answer_share",
        "signature",
        "signature_short",
        "num_rows",
    } <= set(figures)
    assert figures["num_rows"] == 2 and figures["signature"].startswith("q2:")
    assert figures["signature_short"].startswith("q2:") and len(figures["signature_short"]) < 100
    assert "Scored 2/2 rows" in out.err


def test_score_only_and_short_signature(two_rows, tiny_models, tmp_path, capsys):
    assert (
        main(
            [
                "score",
                str(two_rows),
                "-o",
                str(tmp_path / "a.csv"),
                "--no-cache",
                "-b",
                "--quiet",
                *tiny_flags(tiny_models),
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    assert out.err == ""  # --quiet: no progress bars, no status lines
    [line] = out.out.splitlines()
    assert 0.0 <= float(line) <= 1.0 and len(line) == 6  # one number, 4 decimals
    assert (
        main(
            [
                "score",
                str(two_rows),
                "-o",
                str(tmp_path / "b.csv"),
                "--no-cache",
                "--short",
                "--no-progress",
                *tiny_flags(tiny_models),
            ]
        )
        == 0
    )
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("q2:") and "|models:custom(qg,qa,nli)|rules:paper+dec|dtype:float32|sig:" in last


def test_max_question_length_flag(two_rows, tiny_models, tmp_path, capsys):
    assert (
        main(
            [
                "score",
                str(two_rows),
                "-o",
                str(tmp_path / "out.csv"),
                "--no-cache",
                "--format",
                "json",
                "--quiet",
                "--max-question-length",
                "5",
                *tiny_flags(tiny_models),
            ]
        )
        == 0
    )
    figures = strict_json(capsys.readouterr().out)
    assert "|dec:greedy-max5-in512|" in figures["signature"]
    with open(tmp_path / "out.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 2
    code = main(
        [
            "score",
            str(two_rows),
            "-o",
            str(tmp_path / "x.csv"),
            "--max-question-length",
            "0",
            *tiny_flags(tiny_models),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--max-question-length" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.csv").exists()


def test_score_shows_stage_bars(two_rows, tiny_models, tmp_path, capsys):
    assert (
        main(
            ["score", str(two_rows), "-o", str(tmp_path / "out.csv"), "--no-cache", *tiny_flags(tiny_models)]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "Q² responses" in err and "Q² 2/6 questions" in err and "inputs" in err


def test_ray_run_prints_no_ray_log_lines(rows, tiny_models, tmp_path):
    pytest.importorskip("ray.data")
    data = write_csv(tmp_path / "in.csv", rows[:2])
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "score",
            str(data),
            "-o",
            str(tmp_path / "out.csv"),
            "--summary",
            str(tmp_path / "summary.json"),
            "--no-cache",
            "--no-progress",
            "--ray",
            "--workers",
            "1",
            *tiny_flags(tiny_models),
            "--max-question-length",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == "", run.stderr[-3000:]  # no "max_restarts > 0", no execution plan, no token notice
    summary = strict_json((tmp_path / "summary.json").read_text())
    assert summary["num_rows"] == 2 and not any(
        isinstance(v, float) and math.isnan(v) for v in summary.values()
    )


BIN = Path(sys.executable).parent


def write_rows(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["response", "knowledge"])
        writer.writeheader()
        writer.writerows([{"response": r["response"], "knowledge": r["knowledge"]} for r in rows])
    return path


def test_score_tiny_on_ones_own_file(tiny_env, rows, tmp_path, capsys):
    """`q2 score --tiny`: scores, a signature naming the tiny models, and the meaningless note; a
    repeated pair is accounted for in the 'Scored' line."""
    data = write_rows(tmp_path / "mine.csv", [rows[0], rows[1], rows[0]])
    assert (
        main(["score", str(data), "-o", str(tmp_path / "out.csv"), "--tiny", "--no-cache", "--no-progress"])
        == 0
    )
    out = capsys.readouterr().out
    assert (
        f"Scored 3/3 rows (2 now, 0 from the cache) -> {tmp_path / 'out.csv'}\n1 row repeats the (response, "
        "knowledge) pair of an earlier row and gets its score (each pair is scored once)."
    ) in out
    assert "|qg:tiny-random-" in out and "|qa:tiny-random-" in out and "|nli:tiny-random-" in out
    assert "These scores are meaningless" in out and "nan" not in out.lower().split()
    assert (
        main(
            [
                "score",
                str(data),
                "-o",
                str(tmp_path / "out2.csv"),
                "--tiny",
                "--no-cache",
                "--quiet",
                "--format",
                "json",
                "--short",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["signature_short"].split("|")[1] == "models:tiny-random"
    assert "meaningless" in summary["note"]


def test_score_in_a_log_has_no_carriage_returns(tiny_env, rows, tmp_path):
    data = write_rows(tmp_path / "in.csv", rows[:2])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "Q2_TINY_MODELS": str(tiny_env)}
    res = subprocess.run(
        [str(BIN / "q2"), "score", str(data), "-o", str(tmp_path / "out.csv"), "--tiny", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stderr
    assert "Q² responses: 1/2 done" in res.stderr and "Q² responses: 2/2 done" in res.stderr
    assert re.search(r"^Q² 2/6 questions: \d+ model inputs in \d+\.\d s$", res.stderr, flags=re.M), res.stderr


def test_long_text_warning_hidden_under_quiet(tmp_path, tiny_config):
    from transformers import AutoTokenizer

    limit = AutoTokenizer.from_pretrained(tiny_config.qa_model).model_max_length
    long = " ".join(["Paris is a big city in France."] * (limit // 4 + 50))
    data = tmp_path / "in.csv"
    data.write_text(HEADER + f"Paris is big.,{long}\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "score",
            str(data),
            "-o",
            str(tmp_path / "o.csv"),
            "--no-cache",
            "--quiet",
            *tiny_flags(tiny_config, "--max-question-length", "8", "--no-progress"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout == ""  # --quiet: only errors (before, seven lines: figures, signature, note)


def test_cli_reports_bad_rows_by_line_and_exits_3(tmp_path, tiny_config, capsys):
    from q2_metric.cli import main

    path = write(
        tmp_path,
        HEADER + 'Paris is big.,Paris is big.\n"Rome is old.,Rome is old.\n'
        'Berlin",Berlin is cold.\nOslo is far.,Oslo is far.\n',
    )
    rc = main(
        [
            "score",
            str(path),
            "-o",
            str(tmp_path / "out.jsonl"),
            "--no-cache",
            "--no-progress",
            "--qg-model",
            tiny_config.qg_model,
            "--qa-model",
            tiny_config.qa_model,
            "--nli-model",
            tiny_config.nli_model,
            "--decoding",
            "greedy",
            "--device",
            "cpu",
            "--no-multiline",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 3
    ours = [line for line in captured.err.splitlines() if line.startswith("q2: ")]  # not the loading bars
    assert ours == [
        f"q2: {path}: line 3: {STRAY.format(end=4)}; row skipped",
        f"q2: {path}: line 4: {BARE}; row skipped",
    ]
    assert captured.out.startswith(f"Scored 2/4 rows (2 now, 0 from the cache) -> {tmp_path / 'out.jsonl'}\n")
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [o["q2"] is None for o in out] == [False, True, True, False]


def test_qg_decoder_fast_asks_the_reference_path_s_questions(rows, tiny_models, tmp_path):
    """The default (the reference path: 3.2's beam search, each batch alone), `--qg-decoder
    reference` and the opt-in `fast` write the same questions, answers and scores for every row
    (`--steps`), on rows whose scores differ; the signature names the path that ran (`qgdec:ref`
    by default). Expected values: the reference path's own run (itself checked against
    transformers 3.2's recorded beams)."""
    data = write_csv(tmp_path / "in.csv", rows[:12])
    runs = {}
    for decoder in ("default", "reference", "fast"):
        steps, summary = tmp_path / f"steps-{decoder}.csv", tmp_path / f"summary-{decoder}.json"
        args = ["score", str(data), "-o", str(tmp_path / f"out-{decoder}.csv"), "--steps", str(steps)]
        args += ["--summary", str(summary), "--no-cache", *tiny_flags(tiny_models)]
        args += [] if decoder == "default" else ["--qg-decoder", decoder]
        assert main(args) == 0
        with open(tmp_path / f"out-{decoder}.csv", newline="", encoding="utf-8") as f:
            scores = [row["q2"] for row in csv.DictReader(f)]
        runs[decoder] = (
            steps.read_text(encoding="utf-8"),
            scores,
            json.loads(summary.read_text())["signature"],
        )
    default, reference, fast = runs["default"], runs["reference"], runs["fast"]
    assert len(set(reference[1])) >= 3 and reference[0].count("\n") > 12  # scores differ; questions written
    assert default[:2] == reference[:2] == fast[:2]
    assert "|qgdec:ref|" in default[2] and "|qgdec:ref|" in reference[2] and "|qgdec:fast|" in fast[2]


def test_the_summary_counts_a_response_past_spacys_limit_by_its_own_reason(tiny_env, rows, tmp_path, capsys):
    """A response longer than spaCy parses is one unscored row whose reason says so; the summary
    counted it "with an empty response or knowledge" (its row was right): now by the row's reason."""
    long = "Bob Ross painted. " * 55_561  # 1,000,098 characters
    data = write_rows(tmp_path / "long.csv", [rows[0], {"response": long, "knowledge": rows[0]["knowledge"]}])
    out_csv = tmp_path / "out.csv"
    assert main(["score", str(data), "-o", str(out_csv), "--tiny", "--no-cache", "--no-progress"]) == 0
    out = capsys.readouterr().out
    csv.field_size_limit(2_000_000)  # the long response is in the output too
    with open(out_csv, newline="", encoding="utf-8") as f:
        reasons = [r["reason"] for r in csv.DictReader(f)]
    assert (
        reasons[1] == "Not scored: the response has 1,000,098 characters, above the 1,000,000 spaCy parses."
    )
    assert "; 1 past spaCy's length limit, left out;" in out and "empty" not in out, out
