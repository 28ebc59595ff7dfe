"""A benchmark scored with tiny random models says so (issue 36): its JSON, Markdown, LaTeX and
leaderboard carry the meaningless note and Q²'s signature (short form `models:tiny-random`)."""

import csv
import json

import pytest

from q2_metric.cli import main
from q2_metric.display import tiny_note

pytestmark = pytest.mark.slow
K = "The Eiffel Tower, in Paris, was finished in 1889."


def test_tiny_benchmark_reports_say_meaningless(tmp_path):
    src = tmp_path / "mine.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["grounding", "generated_text", "label"])
        w.writerows(
            [
                (K, "it was finished in 1889.", 1),
                (K, "it was finished in 1925.", 0),
                (K, "it is in paris.", 1),
                (K, "it is in lyon.", 0),
            ]
        )
    out = tmp_path / "out"
    assert (
        main(
            [
                "meta-eval",
                "--tiny",
                "--dataset",
                f"mine={src}",
                "--no-bertscore",
                "--bootstrap",
                "5",
                "--no-cache",
                "--no-progress",
                "--device",
                "cpu",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    note = tiny_note(always=True)
    report = json.loads((out / "benchmark.json").read_text())
    assert report["meaningless"] == note and note in report["notes"]
    assert "models:tiny-random" in report["signature_short"] and "tiny-random-" in report["signature"]
    md = (out / "benchmark.md").read_text()
    assert (
        md.splitlines()[2] == f"**{note}**" and report["signature_short"] in md and report["signature"] in md
    )
    tex = (out / "benchmark.tex").read_text()
    assert "These scores are meaningless" in tex and "models:tiny-random" in tex
    with open(out / "leaderboard.csv", newline="") as f:
        board = {r["metric"]: r for r in csv.DictReader(f)}
    assert board["q2"]["signature"] == board["q2_no_nli"]["signature"] == report["signature_short"]
    assert board["overlap"]["signature"] == ""
