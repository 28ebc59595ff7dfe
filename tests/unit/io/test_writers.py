"""Output formats: the extensions the writers cannot write are refused; the others in any case."""

from __future__ import annotations

from support.cli import refused
from support.files import HEADER, ROWS, read_jsonl

from q2_metric.corpus.files import score_file
from q2_metric.io import read_rows
from q2_metric.testing.scripted import scripted_scorer


def test_output_extensions_it_cannot_write_are_refused(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    for name in ("x.xlsx", "x.txt", "x.tsv", "x"):
        refused(
            capsys,
            ["score", str(data), "-o", str(tmp_path / name), "--no-cache"],
            "tables are written as .csv, .jsonl",
        )
        assert not (tmp_path / name).exists()
    refused(
        capsys,
        ["score", str(data), "-o", str(tmp_path / "o.csv"), "--steps", str(tmp_path / "s.txt"), "--no-cache"],
        "(--steps)",
    )
    score_file(scripted_scorer(), data, tmp_path / "x.JSONL", cache_dir=None)
    score_file(scripted_scorer(), data, tmp_path / "x.Parquet", cache_dir=None)
    assert [r["response"] for r in read_jsonl(tmp_path / "x.JSONL")] == [
        "Paris is big.",
        "Rome is old.",
    ]
    assert [r.fields["response"] for r in read_rows(tmp_path / "x.Parquet", allow_empty=True)] == [
        "Paris is big.",
        "Rome is old.",
    ]
