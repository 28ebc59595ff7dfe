"""`q2 score --spans`: one JSON line per row with its spans at offsets in the response as read."""

import csv
import json

import pytest
from support.files import read_jsonl

from q2_metric.corpus.files import score_file
from q2_metric.errors import OutputPathError
from q2_metric.testing.scripted import scripted_scorer

# "😀 Zoë met Zoë at  Oslo." : Zoë 2-5 and 10-13, Oslo 18-22 (counted by hand in tests/unit/steps/test_spans.py)
ROWS = [
    {"response": "😀 Zoë met Zoë at  Oslo.", "knowledge": "Zoë lives in Bergen."},
    {"response": "Ada sang.", "knowledge": ""},  # empty knowledge: not scored, with a reason
    {"response": "Ada sang.", "knowledge": "Ada sang well."},
]


def _write(path):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["response", "knowledge"])
        w.writeheader()
        w.writerows(ROWS)


def test_spans_file_one_line_per_row(tmp_path):
    _write(tmp_path / "in.csv")
    score_file(
        scripted_scorer(),
        tmp_path / "in.csv",
        tmp_path / "out.csv",
        spans_path=tmp_path / "spans.jsonl",
        cache_dir=None,
    )
    lines = read_jsonl(tmp_path / "spans.jsonl", encoding="utf-8")
    assert [(x["row"], x["q2"]) for x in lines] == [(1, 2 / 3), (2, None), (3, 1.0)]  # rows count from 1
    assert [(s["start"], s["end"], s["text"], s["supported"]) for s in lines[0]["spans"]] == [
        (2, 5, "Zoë", True),
        (10, 13, "Zoë", True),
        (18, 22, "Oslo", False),
    ]
    assert [(s["start"], s["end"]) for s in lines[0]["unsupported_spans"]] == [(18, 22)]
    assert "knowledge" in lines[1]["reason"] and lines[1]["spans"] == []
    for row, line in zip(ROWS, lines):
        for s in line["spans"]:
            assert row["response"][s["start"] : s["end"]] == s["text"]


def test_scores_unchanged_by_spans_and_old_cache_entries_rescored(tmp_path):
    _write(tmp_path / "in.csv")
    score_file(scripted_scorer(), tmp_path / "in.csv", tmp_path / "a.csv", cache_dir=None)
    # a cache written before spans existed: its entries lack "spans"; strip them from a fresh cache
    score_file(scripted_scorer(), tmp_path / "in.csv", tmp_path / "b.csv", cache_dir=tmp_path / "cache")
    for f in (tmp_path / "cache").rglob("*.jsonl"):
        lines = read_jsonl(f)
        for x in lines:
            for v in x.values():
                if isinstance(v, dict):
                    v.pop("spans", None)
        f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = score_file(
        scripted_scorer(),
        tmp_path / "in.csv",
        tmp_path / "c.csv",
        cache_dir=tmp_path / "cache",
        spans_path=tmp_path / "spans.jsonl",
    )
    assert report.num_cached == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "c.csv").read_text()
    assert read_jsonl(tmp_path / "spans.jsonl")[0]["spans"][2]["text"] == "Oslo"


def test_spans_path_checked_before_work(tmp_path):
    _write(tmp_path / "in.csv")
    with pytest.raises(OutputPathError, match=r"--spans.*\.jsonl"):
        score_file(
            scripted_scorer(),
            tmp_path / "in.csv",
            tmp_path / "out.csv",
            spans_path=tmp_path / "s.csv",
            cache_dir=None,
        )
    with pytest.raises(OutputPathError, match="--spans"):  # the path guard: never the input
        score_file(
            scripted_scorer(),
            tmp_path / "in.csv",
            tmp_path / "out.csv",
            spans_path=tmp_path / "in.csv",
            cache_dir=None,
        )
    assert not (tmp_path / "out.csv").exists()


def test_bad_rows_have_a_line_with_their_error(tmp_path):
    from support.files import write_bad_jsonl

    write_bad_jsonl(tmp_path / "in.jsonl")
    score_file(
        scripted_scorer(),
        tmp_path / "in.jsonl",
        tmp_path / "out.jsonl",
        spans_path=tmp_path / "s.jsonl",
        cache_dir=None,
    )
    lines = read_jsonl(tmp_path / "s.jsonl")
    assert len(lines) == 5 and [x["error"] for x in lines[2:4]] == [
        "line 3: field 'knowledge' must be text, got empty",
        "line 4: field 'knowledge' is missing",
    ]
