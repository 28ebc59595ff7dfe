"""Reading response/knowledge tables (CSV, JSONL, Parquet, a `datasets` dataset on disk) and writing
outputs atomically."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable


@dataclass
class Row:
    """One input row: where it came from, its fields, and why it is bad (None when fine)."""

    number: int  # 1-based data row
    line: int  # line in the file where the row starts (row number for datasets)
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def read_rows(path: str | Path, response_col: str = "response", knowledge_col: str = "knowledge") -> list[Row]:
    """Read every row; a malformed row gets `error` (naming its line and field) instead of failing."""
    path = Path(path)
    if path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet"))):
        rows = _read_parquet(path)
    elif path.is_dir():
        rows = _read_dataset(path)
    elif path.suffix in (".jsonl", ".json"):
        rows = _read_jsonl(path)
    else:
        rows = _read_csv(path)
    for row in rows:
        if row.error:
            continue
        for col in (response_col, knowledge_col):
            value = row.fields.get(col)
            if col not in row.fields:
                row.error = f"line {row.line}: field '{col}' is missing"
            elif not isinstance(value, str):
                kind = "empty" if value is None else type(value).__name__
                row.error = f"line {row.line}: field '{col}' must be text, got {kind}"
            if row.error:
                break
    return rows


def _read_csv(path: Path) -> list[Row]:
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        start = reader.line_num + 1
        for number, record in enumerate(reader, 1):
            row = Row(number, start, {k: v for k, v in record.items() if k is not None})
            if None in record:  # more cells than the header
                row.error = f"line {start}: {len(record[None])} cell(s) more than the header has"
            elif any(v is None for v in record.values()):
                missing = next(k for k, v in record.items() if v is None)
                row.error = f"line {start}: field '{missing}' is missing (too few cells)"
            rows.append(row)
            start = reader.line_num + 1
    return rows


def _read_jsonl(path: Path) -> list[Row]:
    rows = []
    with open(path, encoding="utf-8") as f:
        number = 0
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            number += 1
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                rows.append(Row(number, line_no, record))
            except ValueError as err:
                rows.append(Row(number, line_no, error=f"line {line_no}: not a JSON object ({err})"))
    return rows


def _read_dataset(path: Path) -> list[Row]:
    import datasets

    data = datasets.load_from_disk(str(path))
    if isinstance(data, datasets.DatasetDict):
        raise ValueError(f"{path} holds several splits ({', '.join(data)}); point at one split's folder")
    return [Row(i, i, dict(record)) for i, record in enumerate(data, 1)]


def _read_parquet(path: Path) -> list[Row]:
    """A Parquet file, or a folder of Parquet part files; `line` is the row number."""
    import pyarrow.parquet as pq

    return [Row(i, i, record) for i, record in enumerate(pq.read_table(path).to_pylist(), 1)]


def atomic_write(path: str | Path, write, binary: bool = False) -> None:
    """Write through a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="", encoding="utf-8")) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(path: str | Path, records: Iterable[dict[str, Any]], columns: list[str]) -> None:
    """CSV, or JSONL when the name ends in .jsonl/.json, or Parquet for .parquet; atomically."""
    records = list(records)
    if Path(path).suffix == ".parquet":
        _write_parquet(path, records, columns)
        return
    if Path(path).suffix in (".jsonl", ".json"):
        atomic_write(path, lambda f: f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        return

    def write_csv(f):
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(records)

    atomic_write(path, write_csv)


def _write_parquet(path: str | Path, records: list[dict[str, Any]], columns: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for col in columns:
        values = [r.get(col) for r in records]
        try:
            arrays[col] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types in one column: keep them as text
            arrays[col] = pa.array([None if v is None else str(v) for v in values], pa.string())
    atomic_write(path, lambda f: pq.write_table(pa.table(arrays), f), binary=True)
