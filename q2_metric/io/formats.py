"""What an input is (CSV, JSONL, Parquet, a datasets folder), its size limit, its text, and `Row`."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError


@dataclass
class Row:
    """One input row: where it came from, its fields, and why it is bad (None when fine)."""

    number: int  # 1-based data row
    line: int  # line in the file where the row starts (1-based; row number for datasets)
    fields: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # the values as read, of the fields the reader turned into what the models read (a list of
    # passages joined into one knowledge text): the outputs write these back as given
    given: dict[str, Any] = field(default_factory=dict)


# Input larger than this (the file, or a Parquet table once decoded) is refused before it is read
# whole; Q2_MAX_INPUT_BYTES sets another limit.
MAX_INPUT_BYTES = 2 * 1024**3
TABLE_SUFFIXES = (".csv", ".jsonl", ".json", ".parquet")
# What a file is, by its first bytes, where it is not a table this tool reads.
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed", "decompress it first (gunzip)"),
    (b"BZh", "bzip2-compressed", "decompress it first (bunzip2)"),
    (b"\xfd7zXZ\x00", "xz-compressed", "decompress it first (unxz)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it first (unzstd)"),
    (b"PK\x03\x04", "a ZIP archive (an .xlsx workbook is one)", "export it as CSV, or unzip it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it first"),
)
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def max_input_bytes() -> int:
    """The input size limit: $Q2_MAX_INPUT_BYTES, else `MAX_INPUT_BYTES` (2 GiB)."""
    try:
        return int(os.environ.get("Q2_MAX_INPUT_BYTES") or MAX_INPUT_BYTES)
    except ValueError:
        raise Q2InputError(
            f"Q2_MAX_INPUT_BYTES must be a number of bytes, got {os.environ['Q2_MAX_INPUT_BYTES']!r}."
        ) from None


def _too_big(path: Path, size: int, what: str) -> Q2InputError:
    return Q2InputError(
        f"The input '{path}' is {what} {size:,} bytes, above the limit of {max_input_bytes():,} "
        "bytes; split it, or raise the limit with Q2_MAX_INPUT_BYTES if the memory is there."
    )


def refuse_special(path: Path) -> None:
    """Refuse an input that is neither a regular file nor a folder, in one sentence, before it is
    opened: a pipe (`<(...)`, `/dev/fd/N`, a FIFO) can be read only once, where the format check
    and the reader each read it (rows were lost), and a FIFO with no writer blocks its reader
    forever; a device or a socket is no table. (`os.stat` follows links and never blocks.)"""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the reader's own error names it
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    what = (
        "a pipe (a FIFO, or a shell's <(...) / /dev/fd/N)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
    )
    raise Q2InputError(
        f"The input '{path}' is {what}, not a regular file: it can be read only once, or never ends; "
        "write the rows to a file first (e.g. `cmd > rows.jsonl`) and pass that file."
    )


def input_format(path: Path) -> str:
    """`parquet`, `dataset` (a save_to_disk folder), `jsonl`, `tsv` or `csv`: by the content where it tells
    (Parquet's magic bytes, a first line that is a JSON object), else by the extension, in any case.
    A compressed file or an archive is refused, saying what it is."""
    refuse_special(path)
    if path.is_dir():
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        if size > max_input_bytes():  # Arrow and Parquet files: about their decoded size, or less
            raise _too_big(path, size, "a folder of")
        return "parquet" if any(path.glob("*.parquet")) else "dataset"
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    for magic, what, fix in _MAGIC:
        if head.startswith(magic):
            raise Q2InputError(
                f"The input file '{path}' is {what}, not a CSV, JSONL or Parquet table; {fix}."
            )
    size = path.stat().st_size
    if size > max_input_bytes():
        raise _too_big(path, size, "a file of")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    if suffix == ".parquet":
        return "parquet"  # not Parquet's magic: the reader says the file is damaged
    if suffix == ".tsv":
        return "tsv"
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if suffix != ".csv" and first.startswith(b"{"):
        return "jsonl"  # no (or another) extension, but JSON objects
    return "csv"


_LINE_BREAK = re.compile(r"\r?\n")


def split_lines(text: str) -> list[str]:
    """A file's text split into its lines at LF and CRLF only (a text without any LF, the classic
    Mac OS kind, at CR): never at U+2028, U+0085, a form feed or the other breaks that
    `str.splitlines` also takes, which are data inside a field or a JSON string.

    >>> split_lines("a\\u2028b\\x0cc\\x85d\\r\\ne\\nf"), split_lines("a\\rb")
    (['a\\u2028b\\x0cc\\x85d', 'e', 'f'], ['a', 'b'])
    """
    if "\n" in text or "\r" not in text:
        return _LINE_BREAK.split(text)
    return text.split("\r")


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
            order = (
                "le"
                if head[1::2].count(0) > len(head) // 4
                else "be"
                if head[0::2].count(0) > len(head) // 4
                else None
            )
            if order:
                raise Q2InputError(
                    f"The input file '{path}' looks like UTF-16 text without a byte-order mark "
                    f"(every other byte is NUL); pass --encoding utf-16-{order}."
                )
    try:
        return data.decode(codec)
    except LookupError:
        raise Q2InputError(
            f"Unknown encoding '{encoding}'; pass a Python codec name such as utf-8 or latin-1 to --encoding."
        ) from None
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        hint = "(e.g. --encoding latin-1)"
        if b"\x00" in data[:4096] and codec.startswith("utf-8"):
            hint = "(it holds NUL bytes: UTF-16 without a byte-order mark? e.g. --encoding utf-16-le)"
        raise Q2InputError(
            f"The input file '{path}' is not valid {codec if codec.startswith(('utf-16', 'utf-32')) else encoding}: "
            f"byte 0x{data[err.start]:02x} at offset {err.start} (line {line}) cannot be decoded; pass the file's "
            f"encoding with --encoding {hint}."
        ) from None
