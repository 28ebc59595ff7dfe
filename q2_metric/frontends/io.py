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

import contextlib
import csv
import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TextIO

from q2_metric.frontends.paths import OutputPathError, check_outputs, check_regular_target, relation
from q2_metric.interrupts import uninterruptible
from q2_metric.validation import Q2InputError, clean_text

try:
    import fcntl
except ImportError:  # not POSIX: no locks; a manifest whose writer is alive is then left alone
    fcntl = None  # type: ignore[assignment]

TEMP_MARK = ".q2tmp-"
MANIFEST_SUFFIX = ".q2-manifest.json"


@dataclass
class Row:
    """One input row: where it came from, its fields, and why it is bad (None when fine)."""

    number: int  # 1-based data row
    line: int  # line in the file where the row starts (1-based; row number for datasets)
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


# -- reading --------------------------------------------------------------------------------------

def read_rows(path: str | Path, response_col: str = "response", knowledge_col: str = "knowledge", *,
              encoding: str = "utf-8", allow_empty: bool = False, multiline: bool = True) -> list[Row]:
    """Read every row of a CSV, JSONL or datasets folder.

    A malformed row gets `error` (naming its line and field) and the rest is read on. Raises
    `Q2InputError` when the file is missing or cannot be decoded, a column is missing from the whole
    file, or there is no data row (unless `allow_empty`). A CSV is read as RFC 4180 (see
    `_scan_csv`); `multiline=False` declares one-line rows, so that a quoted field running over
    lines is reported as a stray quote instead of merging lines into one row.
    """
    path = Path(path)
    if not path.exists():
        raise Q2InputError(f"The input file '{path}' does not exist; check the path.")
    if response_col == knowledge_col:
        raise Q2InputError(f"The response and knowledge columns are both '{response_col}'; name two different "
                           "columns with --response-col and --knowledge-col.")
    kind = input_format(path)
    if kind == "parquet":
        rows, columns = _read_parquet(path)
    elif kind == "dataset":
        rows, columns = _read_dataset(path)
    elif kind == "jsonl":
        rows, columns = _read_jsonl(path, encoding), None
    else:
        rows, columns = _read_csv(path, encoding, multiline)
    if not rows and not allow_empty:
        raise Q2InputError(f"The input file '{path}' has no data rows; pass --allow-empty "
                           "(allow_empty=True) to write an empty output anyway.")
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
            raise Q2InputError(f"The input file '{path}' has no column '{missing[0]}' (its columns: "
                               f"{shown}); name the right one with {flag}.")
    for row in rows:
        if row.error:
            continue
        where = f"row {row.line}" if path.is_dir() else f"line {row.line}"
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


# Input larger than this (the file, or a Parquet table once decoded) is refused before it is read
# whole; Q2_MAX_INPUT_BYTES sets another limit.
MAX_INPUT_BYTES = 2 * 1024 ** 3
TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")
# What a file is, by its first bytes, where it is not a table this tool reads.
_MAGIC = ((b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip)"),
          (b"BZh", "bzip2-compressed", "decompress it first (bunzip2)"),
          (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (unxz)"),
          (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (unzstd)"),
          (b"PK\x03\x04", "a ZIP archive (an .xlsx workbook is one)", "export it as CSV, or unzip it first"),
          (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first"))
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe", "utf-16"),
         (b"\xfe\xff", "utf-16"))


def max_input_bytes() -> int:
    """The input size limit: $Q2_MAX_INPUT_BYTES, else `MAX_INPUT_BYTES` (2 GiB)."""
    try:
        return int(os.environ.get("Q2_MAX_INPUT_BYTES") or MAX_INPUT_BYTES)
    except ValueError:
        raise Q2InputError(f"Q2_MAX_INPUT_BYTES must be a number of bytes, got "
                           f"{os.environ['Q2_MAX_INPUT_BYTES']!r}.") from None


def _too_big(path: Path, size: int, what: str) -> Q2InputError:
    return Q2InputError(f"The input '{path}' is {what} {size:,} bytes, above the limit of {max_input_bytes():,} "
                        "bytes; split it, or raise the limit with Q2_MAX_INPUT_BYTES if the memory is there.")


def input_format(path: Path) -> str:
    """`parquet`, `dataset` (a save_to_disk folder), `jsonl` or `csv`: by the content where it tells
    (Parquet's magic bytes, a first line that is a JSON object), else by the extension, in any case.
    A compressed file or an archive is refused, saying what it is."""
    if path.is_dir():
        return "parquet" if any(path.glob("*.parquet")) else "dataset"
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            raise Q2InputError(f"The input file '{path}' is {what}, not a CSV, JSONL or Parquet table; {fix}.")
    size = path.stat().st_size
    if size > max_input_bytes():
        raise _too_big(path, size, "a file of")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix == ".parquet":
        return "parquet"  # not Parquet's magic: the reader says the file is damaged
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if suffix != ".csv" and first.startswith(b"{"):
        return "jsonl"  # no (or another) extension, but JSON objects
    return "csv"


def read_text(path: Path, encoding: str) -> str:
    """The file's text; a decoding failure is one sentence naming the byte offset. A UTF-16 or
    UTF-32 file with its byte-order mark is read as such when the encoding is UTF-8 (the default)."""
    data = path.read_bytes()
    utf8 = encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    codec = "utf-8-sig" if utf8 else encoding
    if utf8:
        codec = next((name for bom, name in _BOMS if data.startswith(bom)), codec)
        head = data[:4096]
        if codec == "utf-8-sig" and len(head) >= 8:  # UTF-16 without a BOM: every other byte NUL
            order = "le" if head[1::2].count(0) > len(head) // 4 else "be" if head[0::2].count(0) > len(head) // 4 \
                else None
            if order:
                raise Q2InputError(f"The input file '{path}' looks like UTF-16 text without a byte-order mark "
                                   f"(every other byte is NUL); pass --encoding utf-16-{order}.")
    try:
        return data.decode(codec)
    except LookupError:
        raise Q2InputError(f"Unknown encoding '{encoding}'; pass a Python codec name such as "
                           "utf-8 or latin-1 to --encoding.") from None
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        hint = "(e.g. --encoding latin-1)"
        if b"\x00" in data[:4096] and codec.startswith("utf-8"):
            hint = "(it holds NUL bytes: UTF-16 without a byte-order mark? e.g. --encoding utf-16-le)"
        raise Q2InputError(
            f"The input file '{path}' is not valid {codec if codec.startswith('utf-16') or codec.startswith('utf-32') else encoding}: "
            f"byte 0x{data[err.start]:02x} at offset {err.start} (line {line}) cannot be decoded; pass the file's "
            f"encoding with --encoding {hint}.") from None


def _read_csv(path: Path, encoding: str, multiline: bool) -> tuple[list[Row], list[str] | None]:
    records = _scan_csv(read_text(path, encoding), multiline)
    header = None
    for line, fields, problem in records:
        if fields == []:
            continue
        if fields is None:
            raise Q2InputError(f"The header on line {line} of '{path}' cannot be read: {problem}.")
        header = fields
        break
    if header is None:
        return [], None
    duplicates = sorted({c for c in header if header.count(c) > 1})
    if duplicates:
        raise Q2InputError(f"The header of '{path}' names column '{duplicates[0]}' twice; "
                           "give every column its own name.")
    rows = []
    for line, fields, problem in records:
        if fields == []:
            continue  # blank line
        row = Row(len(rows) + 1, line)
        if fields is None:
            row.error = f"line {line}: " + re.sub(
                r"field #(\d+)", lambda m: _field_name(header, int(m.group(1)) - 1), problem)
        elif len(fields) != len(header):
            row.fields = dict(zip(header, fields))
            row.error = (f"line {line}: {len(fields)} field(s) but the header has {len(header)} "
                         "(a comma in an unquoted field, or a missing one?)")
        else:
            row.fields = dict(zip(header, fields))
        rows.append(row)
    return rows, header


def _field_name(header: list[str], index: int) -> str:
    return f"field '{header[index]}'" if index < len(header) else f"field {index + 1}"


_QUOTED = re.compile(r'"([^"]*(?:""[^"]*)*)"')
_REQUOTE = "; quote the whole field and double any quote inside it"


def _csv_patterns(text: str) -> tuple[str, re.Pattern, re.Pattern, re.Pattern]:
    """The file's line break, and the patterns of an unquoted field (strict, and with quotes as
    data) and of a record's end. Records end at LF or CRLF; a CR not followed by LF is data (in a
    file without any LF, the classic Mac OS kind, CR ends records)."""
    if "\n" in text or "\r" not in text:
        field = r'(?:[^,"\r\n]|\r(?!\n))*'
        return "\n", re.compile(field), re.compile(field.replace('"', "")), re.compile(r"\r?\n")
    return "\r", re.compile(r'[^,"\r]*'), re.compile(r"[^,\r]*"), re.compile(r"\r")


def _scan_csv(text: str, multiline: bool) -> Iterator[tuple[int, list[str] | None, str]]:
    """(1-based line, fields or None, problem) for each record of RFC 4180 CSV text; a blank line
    gives `[]`.

    A quoted field may hold commas, doubled quotes, CR, LF and CRLF: they are data, so a record is
    one row whatever it holds, and its line is the file's line it starts on. A record that cannot
    be read as written (an unterminated quote, text after a closing quote, a quote inside an
    unquoted field, or, with `multiline` off, a quoted field running over lines) is reported on its
    first line; where its end is unknown, reading starts again on the next line, so one stray quote
    never swallows the rows after it."""
    nl, unquoted, lenient, end = _csv_patterns(text)
    pos, line, n = 0, 1, len(text)
    while pos < n:
        fields: list[str] = []
        problem, resync = "", False
        p = pos
        while True:
            if text.startswith('"', p):
                m = _QUOTED.match(text, p)
                if m is None:
                    problem, resync = "a double quote opened on this line is never closed" + _REQUOTE, True
                    break
                value = m.group(1).replace('""', '"')
                if not multiline and nl in value:
                    last = line + text.count(nl, pos, m.end())
                    problem = (f"a quoted field opened on this line runs on to line {last} (a stray double "
                               "quote?) while --no-multiline says the rows of this file are one line each; "
                               "fix the quote, or leave out --no-multiline if fields really span lines")
                    resync = True
                    break
                p = m.end()
                if p < n and text[p] != "," and not end.match(text, p):
                    problem = "a closing double quote is followed by more text in the same field" + _REQUOTE
                    resync = True
                    break
            else:
                first = p
                p = unquoted.match(text, p).end()
                if text.startswith('"', p):  # the record still ends where it seems to; it is bad
                    problem = problem or (f"field #{len(fields) + 1} holds a double quote without being "
                                          "quoted; quote the whole field and double the quote inside it")
                    p = lenient.match(text, p).end()
                value = text[first:p]
            fields.append(value)
            if text.startswith(",", p):
                p += 1
                continue
            m = end.match(text, p)
            p = m.end() if m else n
            break
        if resync:
            cut = text.find(nl, pos)
            yield line, None, problem
            pos, line = (n if cut < 0 else cut + len(nl)), line + 1
            continue
        blank = fields == [""] and not text.startswith('"', pos)
        yield line, None if problem else [] if blank else fields, problem
        line += text.count(nl, pos, p)
        pos = p


def _read_jsonl(path: Path, encoding: str) -> list[Row]:
    text = read_text(path, encoding)
    if text.lstrip().startswith("["):
        raise Q2InputError(f"The input file '{path}' holds a JSON array; write one JSON object per line "
                           "(JSONL) instead.")
    rows = []
    number = 0
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        number += 1
        try:
            record = json.loads(line, object_pairs_hook=_no_duplicate_keys)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            rows.append(Row(number, line_no, _clean_strings(record)))
        except _DuplicateKey as err:
            rows.append(Row(number, line_no, error=f"line {line_no}: the key '{err.key}' appears twice in one "
                                                   "JSON object (which value is meant?)"))
        except ValueError as err:
            rows.append(Row(number, line_no, error=f"line {line_no}: not a JSON object ({err})"))
    return rows


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json keeps the last one silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _clean_strings(value: Any) -> Any:
    """`clean_text` on every string of a JSON value: JSON may escape lone surrogates, which no
    model and no UTF-8 output can take (CSV, Parquet and datasets cannot hold them)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _clean_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_strings(v) for v in value]
    return value


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
            pf = pq.ParquetFile(file, read_dictionary=pf.schema_arrow.names)
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
                        if pa.types.is_string(values.type) or pa.types.is_binary(values.type) or \
                                pa.types.is_large_string(values.type):
                            lengths = pc.binary_length(values).take(chunk.indices.fill_null(0))
                            total += int(pc.sum(lengths).as_py() or 0) + 8 * len(chunk)
                        else:
                            total += chunk.indices.nbytes * 2
                    else:
                        total += chunk.nbytes
                if total > limit:
                    raise _too_big(path, total, "a Parquet table of at least")


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


# -- writing ----------------------------------------------------------------------------------------

def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_output_paths(input_path: str | Path | None, outputs: dict[str, str | Path],
                       inputs: dict[str, str | Path | None] | None = None) -> None:
    """Raise `OutputPathError` unless every output (by its flag) is a writable file path that is
    neither the input nor another output, does not contain or lie inside an input (the input file
    or folder, and any of `inputs`: name -> path), and is a regular file where it exists (never a
    link, a device or a pipe; see `paths.check_outputs`); run before any work."""
    named = [(flag, Path(p)) for flag, p in outputs.items()]
    for i, (flag, path) in enumerate(named):
        onto_input = input_path is not None and Path(input_path).is_dir() and \
            relation(path, input_path) in ("is", "lies inside")
        if path.is_dir() and not onto_input:  # (a folder that is the input: said so below)
            raise OutputPathError(f"The output path '{path}' ({flag}) is a directory; name a file in it, "
                                  f"e.g. {path / 'scores.csv'}.")
        if input_path is not None and not Path(input_path).is_dir() and _same(path, Path(input_path)):
            raise OutputPathError(f"The output path '{path}' ({flag}) is the input file; write to another "
                                  "file so that the input is kept.")
        for other_flag, other in named[:i]:
            if _same(path, other):
                raise OutputPathError(f"{other_flag} and {flag} name the same file '{path}'; give each "
                                      "output its own file.")
        if onto_input:
            break
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise OutputPathError(f"The output path '{path}' ({flag}) lies under '{folder}', which is a "
                                  "file, not a folder; choose another path.")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputPathError(f"The folder '{folder}' of the output path '{path}' ({flag}) is not "
                                  "writable; choose another path.")
    check_outputs({"input": input_path, **(inputs or {})}, outputs)


def pause_point(point: str) -> None:
    """Test-only hook for the kill tests: when Q2_TEST_PAUSE names `point`, write the file named by
    Q2_TEST_PAUSE_FILE and wait (up to 600 s) until the test removes it, so that a test can signal
    the process exactly here, or let it go on."""
    if os.environ.get("Q2_TEST_PAUSE") == point:
        flag = Path(os.environ["Q2_TEST_PAUSE_FILE"])
        flag.write_text(point)
        deadline = time.monotonic() + 600
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


@contextlib.contextmanager
def locked(path: Path, shared: bool = False) -> Iterator[None]:
    """An advisory lock (`flock`) on `path` (a file or a folder) while the block runs: other q2
    processes wait for it. Where locks are not supported the block runs unlocked."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        except OSError:  # e.g. a file system without locks
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _locked_folders(paths: Iterable[Path]) -> Iterator[None]:
    """Lock every existing folder of `paths`, in a fixed order (no deadlock between two sets)."""
    with contextlib.ExitStack() as stack:
        for folder in sorted({str(p.parent.resolve()) for p in paths}):
            if os.path.isdir(folder):
                stack.enter_context(locked(Path(folder)))
        yield


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_name(path: Path) -> Path:
    return path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _manifest_path(path: Path) -> Path:
    return path.parent / f".{path.name}{MANIFEST_SUFFIX}"


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_new(path: Path, write: Callable[[TextIO], Any], target: Path | None = None) -> None:
    """Create `path` (mode 0666 less the umask, like any new file) and write it durably. An OS
    error (a full disk) names `target`, the file being written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        binary = getattr(write, "binary", False)  # a Parquet writer writes bytes
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="", encoding="utf-8")) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(err.errno, f"{err.strerror} while writing (the earlier outputs are kept)",
                      str(target or path)) from None


def recover_outputs(paths: Iterable[str | Path]) -> None:
    """Finish or undo what a killed run left next to `paths`.

    A manifest means the killed run had written its whole set: its renames are completed. Temporary
    files of runs that are no longer alive are removed (a manifest's files are renamed first). Runs
    the output folders' locks, so that the manifest of a live run (which holds them while it
    commits) is never touched."""
    paths = [Path(p) for p in paths]
    with _locked_folders(paths):
        _recover(paths)


def _recover(paths: list[Path]) -> None:
    for path in paths:
        manifest = _manifest_path(path)
        if not manifest.exists():
            continue
        try:
            body = json.loads(manifest.read_text(encoding="utf-8"))
            pairs, writer = body["files"], body.get("pid")
        except (ValueError, KeyError, OSError):
            pairs, writer = [], None  # a manifest is renamed into place whole, so this is not expected
        if fcntl is None and writer not in (None, os.getpid()) and _alive(writer):
            continue  # no locks here: a live writer may be renaming this set right now
        for tmp, final in pairs:
            if Path(tmp).exists():
                os.replace(tmp, final)
        manifest.unlink(missing_ok=True)
    legacy = {p.parent / p.name: re.compile(re.escape(f".{p.name}.") + r"[a-z0-9_]{8}\.tmp") for p in paths}
    for folder in {p.parent for p in paths}:
        if not folder.is_dir():
            continue
        for stale in folder.iterdir():
            name = stale.name
            if any(folder == target.parent and pattern.fullmatch(name) for target, pattern in legacy.items()):
                stale.unlink(missing_ok=True)  # mkstemp names of earlier versions: no process to ask
                continue
            if not (name.startswith(".") and TEMP_MARK in name):
                continue
            try:
                pid = int(name.rsplit(TEMP_MARK, 1)[1].split("-")[0])
            except ValueError:
                continue
            if pid != os.getpid() and not _alive(pid):
                stale.unlink(missing_ok=True)


def commit_outputs(files: Sequence[tuple[str | Path, Callable[[TextIO], Any]]]) -> None:
    """Write every `(path, write)` of the set so that the set changes all at once or not at all.

    The output folders are locked while the set is written and renamed: two runs writing the same
    outputs take turns (the last one's set is kept whole). SIGINT/SIGTERM wait while the manifest
    and the renames are written."""
    targets = [Path(p) for p, _ in files]
    for target in targets:  # a link, a device or a folder in a target's place is never replaced
        check_regular_target(target, "output")
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    with _locked_folders(targets):
        _recover(targets)
        temps: list[Path] = []
        try:
            for target, (_, write) in zip(targets, files):
                tmp = _temp_name(target)
                temps.append(tmp)
                _write_new(tmp, write, target)
            pause_point("temps-written")
            manifest = _manifest_path(targets[0])
            manifest_tmp = _temp_name(manifest)
            temps.append(manifest_tmp)
            body = json.dumps({"pid": os.getpid(),
                               "files": [[str(t.resolve()), str(p.resolve())] for t, p in zip(temps, targets)]})
            _write_new(manifest_tmp, lambda f: f.write(body), manifest)
        except BaseException:
            for tmp in temps:
                tmp.unlink(missing_ok=True)
            raise
        with uninterruptible():
            os.replace(manifest_tmp, manifest)
            _fsync_dir(manifest.parent)
            # From here on the new set is decided: a kill is completed by the next run's recover_outputs.
            pause_point("manifest-written")
            for i, (tmp, target) in enumerate(zip(temps, targets)):
                os.replace(tmp, target)
                if i == 0:
                    pause_point("first-renamed")
            for folder in {t.parent for t in targets}:
                _fsync_dir(folder)
            manifest.unlink()
            _fsync_dir(manifest.parent)


def atomic_write(path: str | Path, write: Callable[[TextIO], Any]) -> None:
    """Write one file through a temporary file in the same folder: never a half-written file."""
    commit_outputs([(path, write)])


def check_table_suffix(path: str | Path, flag: str = "-o/--output") -> None:
    """Refuse a table output whose extension names a format that is not written (.xlsx, .txt,
    .tsv, none): it would get CSV under a misleading name."""
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        what = f"the extension '{Path(path).suffix}'" if suffix else "no extension"
        raise OutputPathError(f"The output path '{path}' ({flag}) has {what}; tables are written as .csv, "
                              ".jsonl (or .json: one object per line) or .parquet, so name one of those.")


def table_writer(path: str | Path, records: Iterable[dict[str, Any]],
                 columns: list[str]) -> Callable[[TextIO], None]:
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
        writer.writerows(records)

    return write_csv


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

    def write(f) -> None:
        pq.write_table(pa.table(arrays), f)

    write.binary = True  # type: ignore[attr-defined]
    return write
