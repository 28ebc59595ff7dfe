"""Reading a tab-separated table: as BEGIN publishes it (one line a row, no quoting), or, when the
file quotes its fields, as CSV with tabs (what pandas, Excel and Python's csv module write)."""

from __future__ import annotations

from pathlib import Path

from q2_metric.io.csv import check_unique_columns, csv_rows
from q2_metric.io.formats import Row, read_text


def quotes_its_fields(lines: list[str]) -> bool:
    """Whether a TSV quotes its fields, told by the file: some field begins with a double quote.
    An unquoted TSV (BEGIN's) has quotes inside its texts, never at a field's start; a quoting
    writer puts one there for every field holding a quote, a tab or a line break.

    >>> quotes_its_fields(["id\\tresponse", "1\\tsaid 'hi'"]), quotes_its_fields(["1\\t'a'", '2\\t"b\\tc"'])
    (False, True)
    """
    return any(field.startswith('"') for line in lines for field in line.split("\t"))


def _read_tsv(path: Path, encoding: str, multiline: bool = True) -> tuple[list[Row], list[str] | None]:
    """The rows of a `.tsv` file (any case; a byte-order mark is dropped by `read_text`); a row
    whose number of fields differs from the header's gets an error naming its line. A file that
    quotes its fields (`quotes_its_fields`) is read as CSV with tabs, its quotes taken off as that
    writer meant them (never scored with its quote characters in the text); a field it cannot read
    that way is a bad row naming its line."""
    text = read_text(path, encoding)
    lines = text.splitlines()
    if quotes_its_fields(lines):
        return csv_rows(path, text, multiline, sep="\t")
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
