"""Reading response/knowledge tables (CSV, JSONL, a `datasets` dataset on disk) strictly, and
writing a set of outputs all-or-nothing.

Reading: one record of the file is one row, whatever bytes it holds (CSV follows RFC 4180: CR, LF
and CRLF inside a quoted field are data, and so is a CR not followed by LF anywhere). A row that
cannot be read as written (malformed quoting, a wrong number of fields, a missing or non-text
field) is reported by its line in the file and left unscored; the other rows are read on. Problems that concern the whole file (it is missing, cannot be decoded, lacks a
column, has no data rows) raise `Q2InputError` before any work.

Writing: `commit_outputs` writes every file of a set to a temporary file in its target folder,
then records the set in a manifest and renames the files into place. A run killed before the
manifest is complete leaves the old set (its temporary files are removed by the next run); one
killed after it leaves a manifest that the next run (`recover_outputs`) completes, giving the new
set. Files are created with the user's umask.
"""

from __future__ import annotations

from pathlib import Path

from q2_metric.errors import Q2InputError
from q2_metric.io.commit import (  # noqa: F401 (re-exported: the one reader and writers of the package)
    MANIFEST_SUFFIX,
    TEMP_MARK,
    atomic_write,
    commit_outputs,
    commit_report,
    locked,
    pause_point,
    recover_outputs,
)
from q2_metric.io.csv import _read_csv
from q2_metric.io.formats import (  # noqa: F401 (re-exported: the one reader and writers of the package)
    MAX_INPUT_BYTES,
    TABLE_SUFFIXES,
    Row,
    input_format,
    max_input_bytes,
    read_text,
)
from q2_metric.io.jsonl import _read_jsonl
from q2_metric.io.parquet import _read_dataset, _read_parquet
from q2_metric.io.tsv import _read_tsv
from q2_metric.io.writers import (  # noqa: F401 (re-exported: the one reader and writers of the package)
    check_table_suffix,
    parquet_writer,
    table_writer,
    write_table,
)
from q2_metric.validation import knowledge_text

# -- reading --------------------------------------------------------------------------------------


def read_rows(
    path: str | Path,
    response_col: str = "response",
    knowledge_col: str = "knowledge",
    *,
    encoding: str = "utf-8",
    allow_empty: bool = False,
    multiline: bool = True,
) -> list[Row]:
    """Read every row of a table (`read_table`'s formats) with a response and a knowledge column.

    A malformed row gets `error` (naming its line and field) and the rest is read on. A CSV is read
    as RFC 4180; `multiline=False` declares one-line rows, so that a quoted field running over lines
    is reported as a stray quote instead of merging lines into one row.

    Args:
        path: a CSV, TSV, JSONL or Parquet file, or a folder of Parquet parts or `save_to_disk`.
        response_col: the response column.
        knowledge_col: the knowledge column.
        encoding: the text encoding (UTF-16/32 with a byte-order mark are told apart by it).
        allow_empty: a table without data rows is not an error.

    Returns:
        One `Row` per data row, with its fields and, for a bad row, its `error`.

    Raises:
        Q2InputError: the file is missing or cannot be decoded, a column is missing from the whole
            file, or there is no data row (unless `allow_empty`).
    """
    path = Path(path)
    if not path.exists():
        raise Q2InputError(f"The input file '{path}' does not exist; check the path.")
    if response_col == knowledge_col:
        raise Q2InputError(
            f"The response and knowledge columns are both '{response_col}'; name two different "
            "columns with --response-col and --knowledge-col."
        )
    rows, columns = read_table(path, encoding, multiline)
    if not rows and not allow_empty:
        raise Q2InputError(
            f"The input file '{path}' has no data rows; pass --allow-empty "
            "(allow_empty=True) to write an empty output anyway."
        )
    needed = [response_col, knowledge_col]
    if columns is None and rows:  # JSONL: a column is missing when no object has it
        present = {k for row in rows for k in row.fields}
        if all(row.error for row in rows):
            present = set(needed)  # nothing readable: the per-row errors say why
        columns = [c for c in needed if c in present] + sorted(present - set(needed))
    if columns is not None:
        missing = [c for c in needed if c not in columns]
        if missing:
            flag = "--response-col" if missing[0] == response_col else "--knowledge-col"
            shown = ", ".join(f"'{c}'" for c in columns[:20]) or "none"
            raise Q2InputError(
                f"The input file '{path}' has no column '{missing[0]}' (its columns: "
                f"{shown}); name the right one with {flag}."
            )
    for row in rows:
        if row.error:
            continue
        where = f"row {row.line}" if path.is_dir() else f"line {row.line}"
        if knowledge_col in row.fields:  # a list of passages: one knowledge text (`knowledge_text`)
            value = row.fields[knowledge_col]
            row.fields[knowledge_col] = knowledge_text(value)
            if row.fields[knowledge_col] is not value:
                row.given[knowledge_col] = value  # written back as given (a list stays a list)
        for col in needed:
            value = row.fields.get(col)
            if col not in row.fields:
                row.error = f"{where}: field '{col}' is missing"
            elif not isinstance(value, str):
                kind = "empty" if value is None else type(value).__name__
                row.error = f"{where}: field '{col}' must be text, got {kind}"
            if row.error:
                break
    return rows


def read_table(
    path: str | Path, encoding: str = "utf-8", multiline: bool = True
) -> tuple[list[Row], list[str] | None]:
    """The rows of a CSV, TSV, JSONL or Parquet file or a datasets folder, its format told by the
    content (`input_format`), and its columns (None for JSONL, whose objects each have their own
    keys). The one reader of every table: each front-end reads through it or `read_rows`.

    Raises:
        Q2InputError: the whole input cannot be read (missing, too large, compressed, undecodable,
            a bad header); a bad row gets its `error` instead and the rest is read on.
    """
    path = Path(path)
    kind = input_format(path)
    if kind == "parquet":
        return _read_parquet(path)
    if kind == "dataset":
        return _read_dataset(path)
    if kind == "jsonl":
        return _read_jsonl(path, encoding), None
    if kind == "tsv":
        return _read_tsv(path, encoding, multiline)
    return _read_csv(path, encoding, multiline)


def read_jsonl(path: str | Path, encoding: str = "utf-8") -> list[Row]:
    """The rows of a JSON-lines file whatever its name (RAGTruth's files, a spans file), through the
    reader's checks on the whole file (no pipe or device, no archive, the size limit
    `Q2_MAX_INPUT_BYTES`); a line that is not a JSON object, has a key twice or is nested too deep
    is a bad row whose `error` names its line, and the rest is read on.

    Raises:
        Q2InputError: the whole file cannot be read (too large, compressed, Parquet, undecodable).
    """
    path = Path(path)
    if input_format(path) == "parquet":
        raise Q2InputError(
            f"The input file '{path}' is Parquet, not JSON lines; write one JSON object per line."
        )
    return _read_jsonl(path, encoding)


def table_columns(rows: list[Row], columns: list[str] | None) -> list[str]:
    """`read_table`'s columns, with a JSONL file's keys in the order they first appear."""
    return list(dict.fromkeys(k for r in rows for k in r.fields)) if columns is None else columns
