"""Reading a JSONL table strictly, line by line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from q2_metric.io.formats import Row, read_text
from q2_metric.validation import clean_text
from q2_metric.errors import Q2InputError


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

