"""Reading a tab-separated table as BEGIN publishes it: one line a row, no quoting."""

from __future__ import annotations

from pathlib import Path

from q2_metric.io.csv import check_unique_columns
from q2_metric.io.formats import Row, read_text


def _read_tsv(path: Path, encoding: str) -> tuple[list[Row], list[str] | None]:
    """The rows of a `.tsv` file (any case; a byte-order mark is dropped by `read_text`); a row
    whose number of fields differs from the header's gets an error naming its line."""
    lines = read_text(path, encoding).splitlines()
    numbered = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    if not numbered:
        return [], None
    header = numbered[0][1].split("\t")
    check_unique_columns(path, header)
    rows: list[Row] = []
    for line, text in numbered[1:]:
        fields = text.split("\t")
        row = Row(len(rows) + 1, line, dict(zip(header, fields)))
        if len(fields) != len(header):
            row.error = (
                f"line {line}: {len(fields)} field(s) but the header has {len(header)} "
                "(a tab inside a field, or a missing one?)"
            )
        rows.append(row)
    return rows, header
