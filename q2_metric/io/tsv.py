"""Reading a tab-separated table: as BEGIN publishes it (one line a row, no quoting), or, when the
file quotes its fields, as CSV with tabs (what pandas, Excel and Python's csv module write)."""

from __future__ import annotations

import re
from pathlib import Path

from q2_metric.errors import Q2InputError
from q2_metric.io.csv import check_unique_columns, csv_rows
from q2_metric.io.formats import Row, read_text, split_lines

# A whole field as a quoting writer writes it: quotes around, any quote inside doubled.
_WHOLE_QUOTED = re.compile(r'"(?:[^"]|"")*"')


def quotes_its_fields(lines: list[str]) -> bool:
    """Whether a TSV may quote its fields: some field begins with a double quote. Only a hint:
    BEGIN's unquoted texts may begin with a quote too (`_read_tsv` decides by reading both ways).

    >>> quotes_its_fields(["id\\tresponse", "1\\tsaid 'hi'"]), quotes_its_fields(["1\\t'a'", '2\\t"b\\tc"'])
    (False, True)
    """
    return any(field.startswith('"') for line in lines for field in line.split("\t"))


def _bad(rows: list[Row]) -> int:
    return sum(row.error is not None for row in rows)


def _read_tsv(path: Path, encoding: str, multiline: bool = True) -> tuple[list[Row], list[str] | None]:
    """The rows of a `.tsv` file (any case; a byte-order mark is dropped by `read_text`); a row
    whose number of fields differs from the header's gets an error naming its line. Lines end at
    LF or CRLF only (`split_lines`).

    A file whose fields may be quoted (`quotes_its_fields`) is read as CSV with tabs (its quotes
    taken off as that writer meant them; a field it cannot read that way is a bad row naming its
    line) when every field that begins with a quote is a whole quoted field, as a quoting writer
    writes it, or when CSV reads it with fewer bad rows (quoted fields running over lines). So one
    unquoted text that begins with a quote (BEGIN has them) never turns a whole file into CSV."""
    text = read_text(path, encoding)
    lines = split_lines(text)
    plain = _plain_rows(path, lines)
    if not quotes_its_fields(lines):
        return plain
    try:
        quoted = csv_rows(path, text, multiline, sep="\t")
    except Q2InputError:
        return plain  # its header cannot be read as quoted CSV: it is not one
    whole = all(_WHOLE_QUOTED.fullmatch(f) for line in lines for f in line.split("\t") if f.startswith('"'))
    if whole or _bad(quoted[0]) < _bad(plain[0]):
        return quoted
    return plain


def _plain_rows(path: Path, lines: list[str]) -> tuple[list[Row], list[str] | None]:
    """The rows of an unquoted TSV: one line a row, fields split at tabs."""
    numbered = [(i, line) for i, line in enumerate(lines, 1) if line.strip()]
    if not numbered:
        return [], None
    header = numbered[0][1].split("\t")
    check_unique_columns(path, header)
    rows: list[Row] = []
    for line, text_line in numbered[1:]:
        fields = text_line.split("\t")
        row = Row(len(rows) + 1, line, dict(zip(header, fields)))
        if len(fields) != len(header):
            row.error = (
                f"line {line}: {len(fields)} field(s) but the header has {len(header)} "
                "(a tab inside a field, or a missing one?)"
            )
        rows.append(row)
    return rows, header
