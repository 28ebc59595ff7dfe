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


def test_agree_refuses_json_under_another_name_before_models(tmp_path, capsys):
    src = tmp_path / "in.csv"
    write_input(src, 2)
    out = tmp_path / "report.csv"
    assert main(["agree", str(src), "--fast", "use_nli=false", "--tiny", "-o", str(out)]) == 2
    assert "(-o/--output) must end in .json: the report is written as JSON" in capsys.readouterr().err
    assert not out.exists()


def test_agree_reads_labels_as_the_benchmark_reader_does(tiny_env, tmp_path, capsys):
    """A BEGIN file's label outside BEGIN's three is a bad row, as `q2 meta-eval --dataset` refuses
    it (before: counted as labelled, inconsistent); labels of one class only say why the ROC AUC
    is n/a (the sample's own 'consistent'/'inconsistent' under --label-col label: consistent iff
    '1', so every response is inconsistent)."""
    rows = sample_rows()[:3]
    src = tmp_path / "begin.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["knowledge", "response", "begin_label"])
        for r, label in zip(rows, ["Fully attributable", "Maybe", "Generic"]):
            w.writerow([r["knowledge"], r["response"], label])
    args = ["--fast", "use_nli=false", "--tiny", "--device", "cpu", "--decoding", "greedy"]
    assert main(["agree", str(src), "--label-col", "begin_label", *args]) == 3
    captured = capsys.readouterr()
    assert (
        "line 3: field 'begin_label' (--label-col) holds 'Maybe', not one of 'Fully attributable', "
        "'Generic', 'Not fully attributable'; row skipped"
    ) in captured.err
    sample = tmp_path / "sample.csv"
    with open(sample, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge", "label"])
        w.writerows([[r["response"], r["knowledge"], r["label"]] for r in rows])
    assert {r["label"] for r in rows} <= {"consistent", "inconsistent"}
    assert main(["agree", str(sample), "--label-col", "label", *args]) == 0
    assert (
        "ROC AUC n/a: every one of its 3 responses is inconsistent (consistent iff 'label' is '1'), so "
        "no ROC AUC can be computed; check the label column and --consistent-label."
    ) in capsys.readouterr().out
    assert (
        main(["agree", str(sample), "--label-col", "label", "--consistent-label", "consistent", *args]) == 0
    )
    assert "every one of its 3 responses is consistent" in capsys.readouterr().out  # the sample's first 3
