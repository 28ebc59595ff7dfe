"""`q2 agree`: the input read through `io.read_rows`, options through `build_config`, outputs
guarded by `check_run`; on the tiny models (their scores vary by text)."""

from __future__ import annotations

import csv
import json

from support.data import sample_rows

from q2_metric.cli import main


def write_input(path, n=4):
    rows = sample_rows()[:n]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge", "label"])
        for i, r in enumerate(rows):
            w.writerow([r["response"], r["knowledge"], i % 2])
    return rows


def test_agree_int8_on_tiny_models_writes_report_and_rows(tiny_env, tmp_path, capsys):
    src = tmp_path / "in.csv"
    rows = write_input(src)
    before = src.read_bytes()
    out, per = tmp_path / "report.json", tmp_path / "per.csv"
    code = main(
        [
            "agree",
            str(src),
            "--fast",
            "quantize=int8",
            "--tiny",
            "--device",
            "cpu",
            "--decoding",
            "greedy",
            "--label-col",
            "label",
            "-o",
            str(out),
            "--per-response",
            str(per),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    assert src.read_bytes() == before
    report = json.loads(out.read_text())
    assert report["num_responses"] == len(rows)
    assert set(report["stages"]) == {
        "questions",
        "response answers",
        "knowledge answers",
        "span NLI labels",
        "fallback NLI labels",
    }
    assert report["stages"]["questions"]["differ"] == 0  # QG is not quantized
    assert "quant:int8" in report["fast_signature"] and "quant:" not in report["base_signature"]
    assert set(report["labels"]) == {"base", "fast"} and report["num_labelled"] == len(rows)
    with open(per, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert [r["line"] for r in table] == ["2", "3", "4", "5"]
    assert "Speed: base" in text and "fast: q2:" in text


def test_agree_errors_are_one_sentence_before_models(tmp_path, capsys):
    src = tmp_path / "in.csv"
    write_input(src, 2)
    assert main(["agree", str(src), "--tiny"]) == 2
    assert "at least one --fast" in capsys.readouterr().err
    assert main(["agree", str(src), "--fast", "dtype=float8", "--tiny"]) == 2
    assert "--fast dtype='float8'" in capsys.readouterr().err
    assert main(["agree", str(src), "--fast", "quantize=int8", "--tiny", "-o", str(src)]) == 2
    assert "input" in capsys.readouterr().err


def test_agree_bad_row_is_named_counted_and_the_others_compared(tiny_env, tmp_path, capsys):
    rows = sample_rows()[:3]
    src = tmp_path / "in.jsonl"
    items = [
        {"response": rows[0]["response"], "knowledge": rows[0]["knowledge"]},
        {"response": 7, "knowledge": rows[1]["knowledge"]},  # line 2: not text
        {"response": rows[2]["response"], "knowledge": rows[2]["knowledge"]},
    ]
    src.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    out, per = tmp_path / "report.json", tmp_path / "per.jsonl"
    code = main(
        [
            "agree",
            str(src),
            "--fast",
            "use_nli=false",
            "--tiny",
            "--device",
            "cpu",
            "-o",
            str(out),
            "--per-response",
            str(per),
        ]
    )
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert "line 2" in captured.err and "row skipped" in captured.err
    report = json.loads(out.read_text())
    assert report["num_responses"] == 2 and report["num_bad_rows"] == 1
    assert report["num_scored"] + report["num_skipped"] == 2
    assert [b["line"] for b in report["bad_rows"]] == [2] and "response" in report["bad_rows"][0]["error"]
    table = [json.loads(line) for line in per.read_text().splitlines()]
    assert [r["line"] for r in table] == [1, 2, 3]
    assert table[1]["error"] and table[1]["base_q2"] is None
    assert table[0]["error"] is None and table[2]["error"] is None
