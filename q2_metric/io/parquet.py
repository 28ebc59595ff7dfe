"""Reading a Parquet table (a file or a folder of parts, size-checked first) or a datasets folder."""

from __future__ import annotations

from pathlib import Path

from q2_metric.io.formats import Row, _too_big, max_input_bytes
from q2_metric.errors import Q2InputError


def _read_parquet(path: Path) -> tuple[list[Row], list[str]]:
    """A Parquet file, or a folder of Parquet part files; `line` is the row number."""
    import pyarrow.parquet as pq

    _check_parquet_size(path)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise Q2InputError(f"The input '{path}' cannot be read as Parquet ({str(err).splitlines()[0]}).") from None
    return [Row(i, i, record) for i, record in enumerate(table.to_pylist(), 1)], list(table.column_names)


def _check_parquet_size(path: Path) -> None:
    """Refuse a Parquet input whose table is above `max_input_bytes()` once decoded, one row group
    at a time: a row group's uncompressed size comes from the metadata (before any decompression),
    and dictionary-encoded columns (where a small file can expand a thousandfold) are read still
    encoded and measured as they would be decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    limit, total = max_input_bytes(), 0
    files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    for file in files:
        try:
            pf = pq.ParquetFile(file)
            # text columns read still dictionary-encoded; nested ones (lists, structs) as they are
            flat = [f.name for f in pf.schema_arrow if _is_text(f.type)]
            pf = pq.ParquetFile(file, read_dictionary=flat)
        except (OSError, ValueError) as err:
            raise Q2InputError(f"The input '{file}' cannot be read as Parquet "
                               f"({str(err).splitlines()[0]}).") from None
        for i in range(pf.metadata.num_row_groups):
            group = pf.metadata.row_group(i)
            stored = max(group.total_byte_size, sum(group.column(c).total_uncompressed_size
                                                     for c in range(group.num_columns)))
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


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or \
        pa.types.is_large_binary(kind)


def _read_dataset(path: Path) -> tuple[list[Row], list[str]]:
    import datasets

    try:
        data = datasets.load_from_disk(str(path))
    except FileNotFoundError:
        raise Q2InputError(f"The input folder '{path}' is not a dataset saved by save_to_disk(); "
                           "pass a CSV or JSONL file, or a dataset folder.") from None
    if isinstance(data, datasets.DatasetDict):
        raise Q2InputError(f"The input folder '{path}' holds several splits ({', '.join(data)}); "
                           "point at one split's folder.")
    return [Row(i, i, dict(record)) for i, record in enumerate(data, 1)], list(data.column_names)

