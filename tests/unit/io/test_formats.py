"""`q2_metric.io.formats.split_lines`, and every text format of the one reader splitting records at
LF and CRLF only: U+2028, U+0085 and a form feed inside a field or a JSON string are data."""

from __future__ import annotations

import json

import pytest

from q2_metric.io import read_rows
from q2_metric.io.formats import split_lines

SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("sep", SEPARATORS)
def test_split_lines_splits_at_lf_and_crlf_only(sep):
    assert split_lines(f"a{sep}b\nc\r\nd") == [f"a{sep}b", "c", "d"]
    assert split_lines("a\rb") == ["a", "b"]  # no LF at all: the classic Mac OS line end


def test_csv_and_jsonl_rows_hold_line_separators(tmp_path):
    texts = ["a\u2028b", "c\x85d", "e\u2029f"]
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(
        "response,knowledge\n" + "".join(f"{t},k\n" for t in texts) + "x\x0cy,k\n" + 'bad"row,k\n',
        encoding="utf-8",
    )
    rows = read_rows(csv_path)
    assert [r.fields.get("response") for r in rows[:4]] == [*texts, "x\x0cy"]
    assert rows[4].error.startswith("line 6: ") and len(rows) == 5
    jsonl = tmp_path / "t.jsonl"
    # json.dumps(ensure_ascii=False) writes U+2028 and U+0085 raw, as JSON allows
    jsonl.write_text(
        "".join(json.dumps({"response": t, "knowledge": "k"}, ensure_ascii=False) + "\n" for t in texts)
        + "{oops\n",
        encoding="utf-8",
    )
    rows = read_rows(jsonl)
    assert [r.fields.get("response") for r in rows[:3]] == texts
    assert rows[3].error.startswith("line 4: ") and len(rows) == 4
