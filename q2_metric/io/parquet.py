"""Reading a Parquet table (a file or a folder of parts, size-checked first) or a datasets folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.io.formats import Row, _too_big, max_input_bytes


def _read_parquet(path: Path) -> tuple[list[Row], list[str]]:
    """A Parquet file, or a folder of Parquet part files; `line` is the row number."""
    import pyarrow.parquet as pq

    try:
        # a folder: the very files its reading opens (every one not hidden, whatever its name), each
        # measured before any is decoded
        dataset = pq.ParquetDataset(path) if path.is_dir() else None
        files = [Path(f) for f in dataset.files] if dataset is not None else [path]
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise Q2InputError(
            f"The input '{path}' cannot be read as Parquet ({str(err).splitlines()[0]})."
        ) from None
    _check_parquet_size(path, files)
    try:
        table = dataset.read() if dataset is not None else pq.read_table(path)
    except (OSError, ValueError) as err:
        raise Q2InputError(
            f"The input '{path}' cannot be read as Parquet ({str(err).splitlines()[0]})."
        ) from None
    return [Row(i, i, record) for i, record in enumerate(table.to_pylist(), 1)], list(table.column_names)


def _check_parquet_size(path: Path, files: list[Path]) -> None:
    """Refuse a Parquet input whose table is above `max_input_bytes()` once decoded, one row group
    at a time: a row group's uncompressed size comes from the metadata (before any decompression),
    and dictionary-encoded columns (where a small file can expand a thousandfold) are read still
    encoded and measured as they would be decoded. `files`: those that reading `path` opens."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    limit, total = max_input_bytes(), 0
    for file in files:
        try:
            pf = pq.ParquetFile(file)
            # text columns read still dictionary-encoded; nested ones (lists, structs) as they are
            flat = [f.name for f in pf.schema_arrow if _is_text(f.type)]
            pf = pq.ParquetFile(file, read_dictionary=flat)
        except (OSError, ValueError) as err:
            raise Q2InputError(
                f"The input '{file}' cannot be read as Parquet ({str(err).splitlines()[0]})."
            ) from None
        for i in range(pf.metadata.num_row_groups):
            group = pf.metadata.row_group(i)
            stored = max(
                group.total_byte_size,
                sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)),
            )
            if total + stored > limit:
                raise _too_big(path, total + stored, "a Parquet table of at least")
            for column in pf.read_row_group(i).columns:
                for chunk in column.chunks:
                    if pa.types.is_dictionary(chunk.type):
                        values = chunk.dictionary
                        if _is_text(values.type):
                            lengths = pc.binary_length(values).take(chunk.indices.fill_null(0))
                            total += int(pc.sum(lengths).as_py() or 0) + 8 * len(chunk)
                        else:
                            total += chunk.indices.nbytes * 2
                    else:
                        total += chunk.nbytes
                if total > limit:
                    raise _too_big(path, total, "a Parquet table of at least")


def _is_text(kind: Any) -> bool:  # a pyarrow DataType
    import pyarrow as pa

    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def _read_dataset(path: Path) -> tuple[list[Row], list[str]]:
    import datasets

    _check_dataset_files(path)
    try:
        data = datasets.load_from_disk(str(path))
    except FileNotFoundError:
        raise Q2InputError(
            f"The input folder '{path}' is not a dataset saved by save_to_disk(); "
            "pass a CSV or JSONL file, or a dataset folder."
        ) from None
    if isinstance(data, datasets.DatasetDict):
        raise Q2InputError(
            f"The input folder '{path}' holds several splits ({', '.join(data)}); "
            "point at one split's folder."
        )
    return [Row(i, i, dict(record)) for i, record in enumerate(data, 1)], list(data.column_names)


def _check_dataset_files(path: Path) -> None:
    """Before `load_from_disk` opens anything: a folder of several splits is refused, and so is a
    data file named in `state.json` that is not inside the folder (an absolute name, or `..`),
    which the folder's size limit (`input_format`) would not have counted."""
    import json

    from q2_metric.io.paths import relation

    splits_file, state_file = path / "dataset_dict.json", path / "state.json"
    splits, names = None, []
    try:
        if splits_file.is_file():
            splits = json.loads(splits_file.read_text(encoding="utf-8")).get("splits") or []
        elif state_file.is_file():
            state = json.loads(state_file.read_text(encoding="utf-8"))
            names = [f.get("filename") for f in state.get("_data_files", [])]
    except (OSError, ValueError, AttributeError, RecursionError):
        return  # not readable as a dataset: load_from_disk says so
    if splits is not None:
        raise Q2InputError(
            f"The input folder '{path}' holds several splits ({', '.join(map(str, splits))}); "
            "point at one split's folder."
        )
    for name in names:
        if not isinstance(name, str) or relation(path / name, path) != "lies inside":
            raise Q2InputError(
                f"The input folder '{path}' names a data file outside itself ('{name}' in its "
                "state.json); point at a dataset folder that holds its own files."
            )
