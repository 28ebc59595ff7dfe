"""A very wide header (`q2_metric.io.csv`, `io.tsv`) is read in linear time: asserted by counting the work,
never by timing it. Two counts: the comparisons between column names (a column-name type that counts its
`==`; a duplicate check by `list.count` makes n² of them), and the Python lines run by the whole read
(`sys.settrace`), which grows by the factor the number of columns does (4), not its square (16)."""

from __future__ import annotations

import sys

import pytest

from q2_metric import io
from q2_metric.errors import Q2InputError

COMPARISONS = [0]


class Name(str):
    """A column name that counts the times it is compared for equality."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        COMPARISONS[0] += 1
        return str.__eq__(self, other)


def _write(tmp_path, n: int, sep: str) -> object:
    path = tmp_path / f"wide{n}.{'tsv' if sep == chr(9) else 'csv'}"
    path.write_text(
        sep.join(["response", "knowledge"] + [f"c{i}" for i in range(n)])
        + "\n"
        + sep.join(["Paris is big.", "Paris is big."] + ["x"] * n)
        + "\n"
    )
    return path


def _counting_header(monkeypatch, sep: str) -> None:
    """Make the reader's column names `Name`s, at the point each format splits its header."""
    if sep == ",":
        scan = io.csv._scan_csv

        def scan_named(text, multiline, sep=","):
            for line, fields, problem in scan(text, multiline, sep):
                yield line, [Name(f) for f in fields] if fields else fields, problem

        monkeypatch.setattr(io.csv, "_scan_csv", scan_named)
    else:

        class Line(str):
            def split(self, *args):
                return [Name(f) for f in str.split(self, *args)]

        split_lines = io.tsv.split_lines
        monkeypatch.setattr(io.tsv, "split_lines", lambda text: [Line(line) for line in split_lines(text)])


@pytest.mark.parametrize("sep", [",", "\t"])
def test_a_wide_header_makes_a_linear_number_of_name_comparisons(tmp_path, monkeypatch, sep):
    _counting_header(monkeypatch, sep)
    for n in (500, 2000):
        path = _write(tmp_path, n, sep)
        COMPARISONS[0] = 0
        rows = io.read_rows(path)
        assert len(rows[0].fields) == n + 2 and rows[0].error is None
        assert COMPARISONS[0] <= 4 * (n + 2), (n, COMPARISONS[0])  # the n² check made ~n² of them


@pytest.mark.parametrize("sep", [",", "\t"])
def test_the_lines_run_to_read_a_wide_header_grow_linearly(tmp_path, sep):
    def lines_run(path) -> int:
        count = [0]

        def tracer(frame, event, arg):
            if event == "line":
                count[0] += 1
            return tracer

        sys.settrace(tracer)
        try:
            io.read_rows(path)
        finally:
            sys.settrace(None)
        return count[0]

    small, large = (lines_run(_write(tmp_path, n, sep)) for n in (1000, 4000))
    assert large < 4.5 * small, (small, large)


@pytest.mark.parametrize("sep", [",", "\t"])
def test_a_column_named_twice_is_still_refused(tmp_path, sep):
    path = tmp_path / ("d.tsv" if sep == "\t" else "d.csv")
    path.write_text(
        sep.join(["response", "knowledge", "b", "a", "b", "a"]) + "\nx" + sep + "y" + sep * 4 + "\n"
    )
    with pytest.raises(Q2InputError, match="names column 'a' twice; give every column its own name"):
        io.read_table(path)
