"""JSONL rows nested too deeply (`q2_metric.io.jsonl`): a bad row naming its line, never a RecursionError,
and the rows around it read on. The depths are counted by hand on the lines written here."""

from __future__ import annotations

import pytest
from support.files import read_csv

from q2_metric.io import read_rows
from q2_metric.io.jsonl import MAX_JSON_DEPTH

GOOD = '{"response": "Paris is big.", "knowledge": "Paris is big."}'


def _nested(levels: int, open_: str = "[", close: str = "]") -> str:
    """A row object whose field `x` holds `levels - 1` containers inside each other (`levels` in all)."""
    return '{"response": "a", "knowledge": "b", "x": ' + open_ * (levels - 1) + close * (levels - 1) + "}"


@pytest.mark.parametrize(
    "line",
    [
        "[" * 100_000 + "]" * 100_000,  # 100,000 nested arrays, the whole line
        _nested(100_001),  # inside a field
        '{"response": "a", "knowledge": "b", "x": '
        + '{"y": ' * 100_000
        + "1"
        + "}" * 100_000
        + "}",  # objects
        _nested(MAX_JSON_DEPTH + 1),  # one level past the limit: json reads it, the reader refuses it
    ],
)
def test_deeply_nested_json_is_a_bad_row_naming_its_line(tmp_path, line):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([GOOD, line, GOOD]) + "\n")
    rows = read_rows(path)
    assert [r.line for r in rows] == [1, 2, 3]
    assert rows[0].error is None and rows[2].error is None
    assert rows[1].error == (
        f"line 2: the JSON is nested more than {MAX_JSON_DEPTH} levels deep (arrays or "
        "objects inside each other); flatten it"
    )


def test_nesting_up_to_the_limit_is_read(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(_nested(MAX_JSON_DEPTH) + "\n")
    (row,) = read_rows(path)
    value, depth = row.fields["x"], 2  # the row object, then x's outermost array
    while value:
        value, depth = value[0], depth + 1
    assert row.error is None and depth == MAX_JSON_DEPTH


def test_a_deep_row_is_reported_and_the_others_are_scored(tmp_path):

    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([GOOD, "[" * 100_000 + "]" * 100_000]) + "\n")
    from q2_metric.corpus.files import score_file
    from q2_metric.testing.scripted import scripted_scorer

    report = score_file(scripted_scorer(), path, tmp_path / "out.csv", cache_dir=None)
    assert report.bad_rows == [
        f"line 2: the JSON is nested more than {MAX_JSON_DEPTH} levels deep (arrays or "
        "objects inside each other); flatten it"
    ]
    out = read_csv(tmp_path / "out.csv", encoding="utf-8")
    assert [r["response"] for r in out if r["q2"]] == ["Paris is big."]
