"""`q2 meta-eval --dataset ragtruth=DIR` with Q² on the tiny models: every kept row is scored or
listed, Q²'s unsupported spans are evaluated under both character definitions, and the report
prints the selection's counts. The tiny models' scores are meaningless: no figure is asserted."""

import json

from support.ragtruth import write_ragtruth

from q2_metric.cli import main


def test_ragtruth_with_q2_spans(tiny_dir, tmp_path, capsys):
    folder = write_ragtruth(tmp_path / "ragtruth")
    out = tmp_path / "bench"
    code = main(
        ["meta-eval", "--tiny", "--no-bertscore", "--no-progress", "--dataset", f"rt={folder}",
         "--bootstrap", "20", "--out-dir", str(out), "--cache-dir", str(tmp_path / "cache")]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Of 10 rows, 4 kept (QA 1, Summary 2, Data2txt 1), 3 bad" in printed
    assert "**RAGTruth's** (character sets" in printed and "**LettuceDetect's** (pairwise" in printed
    assert "| Q² spans | " in printed
    report = json.loads((out / "benchmark.json").read_text())
    rt = report["ragtruth"]["rt"]
    spans = rt["metrics"]["q2 spans"]
    # every kept row is scored or listed as unscored by id; the bad rows are listed by id
    assert spans["responses"] + len(spans["unscored"]) == 4
    assert {"character_ragtruth", "character_lettucedetect", "response"} <= set(spans)
    assert [b.split(": ")[0] for b in rt["bad_rows"]] == [
        "response.jsonl line 7 (id 7)",
        "response.jsonl line 8 (id 8)",
        "response.jsonl line 9 (id 9)",
    ]
    assert (out / "q2" / "rt.spans.jsonl").is_file()
    assert report["published"]["rt"][0]["measured_by"].startswith("Q² (")
