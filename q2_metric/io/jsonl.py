"""Reading a JSONL table strictly, line by line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.io.formats import Row, read_text
from q2_metric.validation import clean_text


def _read_jsonl(path: Path, encoding: str) -> list[Row]:
    text = read_text(path, encoding)
    if text.lstrip().startswith("["):
        raise Q2InputError(
            f"The input file '{path}' holds a JSON array; write one JSON object per line (JSONL) instead."
        )
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
            rows.append(
                Row(
                    number,
                    line_no,
                    error=f"line {line_no}: the key '{_shown(err.key)}' appears twice in "
                    "one JSON object (which value is meant?)",
                )
            )
        except _SurrogateKeys as err:
            rows.append(
                Row(
                    number,
                    line_no,
                    error=f"line {line_no}: the keys '{_shown(err.first)}' and "
                    f"'{_shown(err.second)}' differ only in lone surrogates, "
                    f"which are read as U+FFFD, so both would be the column "
                    f"'{_shown(err.cleaned)}'; rename one",
                )
            )
        except (_TooDeep, RecursionError):  # (json's own recursion limit, about 1,000 levels, comes first)
            rows.append(
                Row(
                    number,
                    line_no,
                    error=f"line {line_no}: the JSON is nested more than {MAX_JSON_DEPTH} "
                    "levels deep (arrays or objects inside each other); flatten it",
                )
            )
        except ValueError as err:
            rows.append(Row(number, line_no, error=f"line {line_no}: not a JSON object ({err})"))
    return rows


# Deeper JSON is a bad row: far more than any table needs, and below Python's recursion limit, so
# that nothing that walks a value later (cleaning, writing it out as JSON) runs out of stack.
MAX_JSON_DEPTH = 100


class _TooDeep(ValueError):
    """A JSON value nested more than `MAX_JSON_DEPTH` levels deep."""


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _SurrogateKeys(ValueError):
    """Two keys of one object that `clean_text` makes equal."""

    def __init__(self, first: str, second: str, cleaned: str) -> None:
        super().__init__(first, second)
        self.first, self.second, self.cleaned = first, second, cleaned


def _shown(key: str) -> str:
    """`key` as it can be printed and written as UTF-8: a lone surrogate as its escape (\\ud800)."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json keeps the last one silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _clean_strings(value: Any, depth: int = 0) -> Any:
    """`clean_text` on every string of a JSON value: JSON may escape lone surrogates, which no
    model and no UTF-8 output can take (CSV, Parquet and datasets cannot hold them). A value nested
    more than `MAX_JSON_DEPTH` levels deep raises `_TooDeep`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (dict, list)) and depth >= MAX_JSON_DEPTH:
        raise _TooDeep()
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        original: dict[str, str] = {}
        for k, v in value.items():
            cleaned = clean_text(k)
            if cleaned in out:  # e.g. \ud800a and \udc00a both read as U+FFFD a: one value would be lost
                raise _SurrogateKeys(original[cleaned], k, cleaned)
            out[cleaned], original[cleaned] = _clean_strings(v, depth + 1), k
        return out
    if isinstance(value, list):
        return [_clean_strings(v, depth + 1) for v in value]
    return value
