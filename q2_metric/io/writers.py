"""Checking output suffixes before any work, and writing tables (CSV, JSONL, Parquet). The output
paths themselves are checked by the one guard, `io.paths.check_run`."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from q2_metric.errors import OutputPathError
from q2_metric.io.commit import atomic_write
from q2_metric.io.formats import TABLE_SUFFIXES

if TYPE_CHECKING:
    pass


def check_table_suffix(path: str | Path, flag: str = "-o/--output") -> None:
    """Refuse a table output whose extension names a format that is not written (.xlsx, .txt,
    .tsv, none): it would get CSV under a misleading name."""
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        what = f"the extension '{Path(path).suffix}'" if suffix else "no extension"
        raise OutputPathError(
            f"The output path '{path}' ({flag}) has {what}; tables are written as .csv, "
            ".jsonl (or .json: one object per line) or .parquet, so name one of those."
        )


def table_writer(
    path: str | Path, records: Iterable[dict[str, Any]], columns: list[str]
) -> Callable[[TextIO], None]:
    """A `write(f)` for a CSV, JSONL when the name ends in .jsonl/.json, Parquet for .parquet."""
    records = list(records)
    check_table_suffix(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return parquet_writer(records, columns)
    if suffix in (".jsonl", ".json"):
        return lambda f: f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)

    def write_csv(f: TextIO) -> None:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: _csv_cell(v) for k, v in r.items()} for r in records)

    return write_csv


def _csv_cell(value: Any) -> Any:
    """A nested value (a Parquet or JSONL list or struct) in a CSV cell: as JSON, which reads back."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value


def _text(value: Any) -> str:
    """A value of a mixed column as text: a list or struct as JSON (as in a CSV cell), else `str`."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else str(value)


def write_table(path: str | Path, records: Iterable[dict[str, Any]], columns: list[str]) -> None:
    """CSV, JSONL (.jsonl/.json) or Parquet (.parquet); atomically."""
    atomic_write(path, table_writer(path, records, columns))


def parquet_writer(records: list[dict[str, Any]], columns: list[str]) -> Callable[[Any], None]:
    """A binary `write(f)` of a Parquet table; a column of mixed types is stored as text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for col in columns:
        values = [r.get(col) for r in records]
        try:
            arrays[col] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays[col] = pa.array([None if v is None else _text(v) for v in values], pa.string())

    def write(f: BinaryIO) -> None:
        pq.write_table(pa.table(arrays), f)

    write.binary = True  # type: ignore[attr-defined]  # the writer's flag for io.commit: it writes bytes
    return write
