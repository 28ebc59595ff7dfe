"""Checking output paths before any work, and writing tables (CSV, JSONL, Parquet)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from q2_metric.errors import OutputPathError
from q2_metric.io.commit import atomic_write
from q2_metric.io.formats import TABLE_SUFFIXES
from q2_metric.io.paths import check_run, relation

if TYPE_CHECKING:
    from q2_metric.config import Q2Config


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_output_paths(
    input_path: str | Path | None,
    outputs: dict[str, str | Path],
    inputs: dict[str, str | Path | None] | None = None,
    *,
    config: Q2Config | None = None,
    folders: dict[str, str | Path | None] | None = None,
) -> None:
    """Raise `OutputPathError` unless every output (by its flag) is a writable file path that is
    neither the input nor another output, does not contain or lie inside an input (the input file
    or folder, and any of `inputs`: name -> path), and is a regular file where it exists (never a
    link, a device or a pipe; see `paths.check_run`); run before any work."""
    named = [(flag, Path(p)) for flag, p in outputs.items()]
    for i, (flag, path) in enumerate(named):
        onto_input = (
            input_path is not None
            and Path(input_path).is_dir()
            and relation(path, input_path) in ("is", "lies inside")
        )
        if path.is_dir() and not onto_input:  # (a folder that is the input: said so below)
            raise OutputPathError(
                f"The output path '{path}' ({flag}) is a directory; name a file in it, "
                f"e.g. {path / 'scores.csv'}."
            )
        if input_path is not None and not Path(input_path).is_dir() and _same(path, Path(input_path)):
            raise OutputPathError(
                f"The output path '{path}' ({flag}) is the input file; write to another "
                "file so that the input is kept."
            )
        for other_flag, other in named[:i]:
            if _same(path, other):
                raise OutputPathError(
                    f"{other_flag} and {flag} name the same file '{path}'; give each output its own file."
                )
        if onto_input:
            break
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise OutputPathError(
                f"The output path '{path}' ({flag}) lies under '{folder}', which is a "
                "file, not a folder; choose another path."
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputPathError(
                f"The folder '{folder}' of the output path '{path}' ({flag}) is not "
                "writable; choose another path."
            )
    writes = {**outputs, **{flag: p for flag, p in (folders or {}).items() if p}}
    check_run({"input": input_path, **(inputs or {})}, writes, config=config, folders=list(folders or {}))


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
            arrays[col] = pa.array([None if v is None else str(v) for v in values], pa.string())

    def write(f: BinaryIO) -> None:
        pq.write_table(pa.table(arrays), f)

    write.binary = True  # type: ignore[attr-defined]  # the writer's flag for io.commit: it writes bytes
    return write
