"""First-hour points of `q2 score`: singular and plural in the progress and summary lines, one line
per engine stage for the whole run off a terminal (not one per stage per chunk), and every option of
`q2 score --help` showing its default."""

import argparse
import csv
import dataclasses
import re

from q2_metric.cli.score import add_parser, done_line
from q2_metric.corpus.files import score_file
from q2_metric.display import figures_text
from q2_metric.progress import STAGES, StageTotals, plural
from q2_metric.testing.scripted import scripted_scorer


def write_rows(path, n):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["response", "knowledge"])
        w.writeheader()
        w.writerows(
            {"response": f"Person{i} visited City{i}.", "knowledge": f"Person{i} visited City{i} twice."}
            for i in range(n)
        )


def test_one_is_singular():
    assert [plural(1, "model input"), plural(2, "model input"), plural(0, "row")] == [
        "1 model input",
        "2 model inputs",
        "0 rows",
    ]
    lines = []
    totals = StageTotals("Q²", write=lines.append)
    totals("questions", 0, 1)
    totals("questions", 1, 1)
    totals("done", 1, 1)
    totals.close()
    assert lines[0].startswith("Q² 2/6 questions: 1 model input in ") and lines[1].startswith(
        "Q²: 1 stage done in "
    )


def test_one_row_summary_lines(tmp_path, capsys):
    write_rows(tmp_path / "in.csv", 1)
    report = score_file(scripted_scorer(), tmp_path / "in.csv", tmp_path / "out.csv", cache_dir=None)
    assert done_line(report, "out.csv") == "Scored 1/1 row (1 now, 0 from the cache) -> out.csv"
    text = figures_text(report.system)
    assert "over 1 of 1 response;" in text and "1 responses" not in text
    one_valid = dataclasses.replace(report.system, num_valid_questions=1)
    assert "share of the 1 valid question that" in figures_text(one_valid)


def test_one_line_per_stage_off_a_terminal(tmp_path, capsys):
    write_rows(tmp_path / "in.csv", 5)
    score_file(
        scripted_scorer(),
        tmp_path / "in.csv",
        tmp_path / "out.csv",
        cache_dir=None,
        chunk_size=2,
        progress=True,
    )  # chunks of 1, 2, 2; capsys is not a terminal
    lines = capsys.readouterr().err.splitlines()
    stage_lines = [line for line in lines if re.match(r"Q² \d/6 ", line)]
    assert [line.split(":")[0] for line in stage_lines] == [
        f"Q² {i}/6 {name}" for i, name in enumerate(STAGES, 1)
    ]
    assert len([line for line in lines if line.startswith("Q² responses: ")]) == 3  # one per chunk
    assert len(lines) == 3 + 6 + 1  # was 24: 6 stage lines and a "done" line per chunk
    assert lines[-1].startswith("Q²: all 6 stages done in ")


def help_blocks(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's help text (joined over wrapped lines), keyed by its first flag."""
    text = parser.format_help()
    blocks, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^  (-[^ ,]+)", line)
        if m:
            current = m.group(1)
            blocks[current] = line
        elif current and line.startswith("   "):
            blocks[current] += " " + line.strip()
        else:
            current = None
    return blocks


def test_every_score_option_shows_its_default(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    root = argparse.ArgumentParser()
    add_parser(root.add_subparsers())
    [score] = root._subparsers._group_actions[0].choices.values()
    blocks = help_blocks(score)
    assert len(blocks) > 40
    missing = [flag for flag, block in blocks.items() if "default" not in block and flag not in ("-h", "-o")]
    assert missing == []
    assert "(default: 64)" in blocks["--chunk-size"] and "(default: off)" in blocks["--no-cache"]
    assert "(default: empty)" in blocks["--prefix"] and "(default: .q2_cache)" in blocks["--cache-dir"]
    assert "(default: beam)" in blocks["--decoding"] and "(default: auto)" in blocks["--cpu-matmul"]
