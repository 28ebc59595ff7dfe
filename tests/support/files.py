"""Test inputs and the checks of what a run wrote: small tables, strict JSON, checksums of folders."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

from q2_metric.io import MANIFEST_SUFFIX, TEMP_MARK

HEADER = "response,knowledge\n"
ROWS = "Paris is big.,Paris is big.\nRome is old.,Rome is very old.\n"
PAIRS = [
    {"response": "Paris is big.", "knowledge": "Paris is big."},
    {"response": "Rome is old.", "knowledge": "Rome is very old."},
]
PERSON_ROWS = [
    {"id": i, "response": f"Person{i} visited City{i}.", "knowledge": f"Person{i} visited City{i} twice."}
    for i in range(10)
]

# what the reader says about a stray double quote (--no-multiline) and a bare one
STRAY = (
    "a quoted field opened on this line runs on to line {end} (a stray double quote?) while "
    "--no-multiline says the rows of this file are one line each; fix the quote, or leave out "
    "--no-multiline if fields really span lines"
)
BARE = (
    "field 'response' holds a double quote without being quoted; quote the whole field and double the "
    "quote inside it"
)


def write(tmp_path, text, name="in.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def write_csv(path, rows, columns=None):
    """`rows` (dicts) as a CSV file with the header `columns` (default: the first row's keys)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns or rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_bad_jsonl(path, rows=PERSON_ROWS):
    """Two good rows around three bad ones (lines 2-4: not JSON, null knowledge, no knowledge)."""
    with open(path, "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
        f.write("{not json\n")
        f.write(json.dumps({"response": "Paris.", "knowledge": None}) + "\n")
        f.write(json.dumps({"response": "Rome."}) + "\n")
        f.write(json.dumps(rows[1]) + "\n")


def strict_json(text):
    """json.loads that refuses NaN and infinities, as a strict JSON reader does."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def snapshot(*paths: Path) -> dict[str, tuple]:
    """Every file and folder under `paths`: its kind, and a SHA-256 of its bytes (files) or target (links)."""
    out: dict[str, tuple] = {}
    for root in map(Path, paths):
        items = [root, *sorted(root.rglob("*"))] if root.is_dir() and not root.is_symlink() else [root]
        for p in items:
            if p.is_symlink():
                out[str(p)] = ("link", os.readlink(p))
            elif p.is_dir():
                out[str(p)] = ("dir",)
            elif p.is_file():
                out[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            elif p.exists():
                out[str(p)] = ("special", p.stat().st_mode)
    return out


def leftovers(folder: Path) -> list[str]:
    """Temporary files and manifests a run left in `folder` (not below it)."""
    return sorted(p.name for p in folder.iterdir() if TEMP_MARK in p.name or p.name.endswith(MANIFEST_SUFFIX))


def read_jsonl(path: Path, encoding: str = "utf-8") -> list:
    """The records of a JSON Lines file (the file closed again)."""
    with open(path, encoding=encoding) as f:
        return [json.loads(line) for line in f]


def read_json(path: Path) -> object:
    """A JSON file's value (the file closed again)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_csv(path: Path, encoding: str = "utf-8") -> list[dict]:
    """A CSV file's rows as dicts (the file closed again)."""
    with open(path, newline="", encoding=encoding) as f:
        return list(csv.DictReader(f))
