"""Any metric's scores beside Q² in `q2 meta-eval`: `--scores NAME=FILE[:COLUMN][:lower][:LO..HI]`.

A score file (CSV, JSONL or Parquet) gives one score per annotated response. Its rows are matched
to the annotated set by a key:
- with `response` and `knowledge` columns: by that exact text pair (the annotated files' text);
  rows for other pairs are ignored;
- without them: by row order, row i scoring row i of the template that
  `q2 meta-eval --write-template DIR` writes (one row per distinct response/knowledge pair of the
  four split files and the cross annotation); an `id` column, when present, must match the
  template's.

The file is checked whole before anything is computed: a missing column, an empty, non-numeric,
non-finite or out-of-range score (default range [0, 1]; declare another with `:LO..HI`), a pair
scored twice, or an annotated response left unscored is one sentence naming the file, the column
and the row.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from q2_metric.errors import Q2InputError

Key = tuple[str, str]  # (response, knowledge)
TEMPLATE_FILE = "meta_eval_template.csv"
TEMPLATE_COLUMNS = ["id", "response", "knowledge", "message"]
BUILT_IN = ("q2", "q2_no_nli", "overlap", "bleu", "bertscore", "e2e_nli")
RESERVED = (*BUILT_IN, "n", "valid_questions", "no_answer_share", "coverage")  # Table 2's other rows
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_RANGE = re.compile(r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\.\.(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\Z")
SPEC_FORM = "NAME=FILE[:COLUMN][:lower][:LO..HI]"


class ScoreFileError(Q2InputError):
    """A user-supplied score file or its --scores spec is wrong; the message is one sentence."""


@dataclass(frozen=True)
class ScoreSpec:
    """One `--scores` argument: where the metric's scores are, and how to read them."""

    name: str
    path: Path
    column: str = "score"
    lower: bool = False  # lower scores mean more consistent
    low: float = 0.0
    high: float = 1.0

    def oriented(self, values: np.ndarray) -> np.ndarray:
        """On [0, 1], higher = more consistent (what Table 3's threshold and the ROC AUC read)."""
        unit = (np.asarray(values, float) - self.low) / (self.high - self.low)
        return 1.0 - unit if self.lower else unit

    def describe(self) -> str:
        return (f"{self.path}:{self.column}" + (" (lower = more consistent)" if self.lower else "")
                + ("" if (self.low, self.high) == (0.0, 1.0) else f", range [{self.low:g}, {self.high:g}]"))


def parse_score_spec(text: str) -> ScoreSpec:
    """`NAME=FILE[:COLUMN][:lower][:LO..HI]` -> ScoreSpec (COLUMN defaults to `score`).

    >>> s = parse_score_spec("judge=out/j.jsonl:rating:lower:1..5")
    >>> (s.name, s.path.name, s.column, s.lower, s.low, s.high)
    ('judge', 'j.jsonl', 'rating', True, 1.0, 5.0)
    """
    name, sep, rest = text.partition("=")
    if not sep or not rest:
        raise ScoreFileError(f"--scores '{text}': expected {SPEC_FORM}.")
    if not _NAME.match(name):
        raise ScoreFileError(f"--scores '{text}': the name '{name}' must start with a letter and hold only "
                             "letters, digits, '_' and '-'.")
    if name in RESERVED:
        raise ScoreFileError(f"--scores '{text}': '{name}' is a built-in metric or row; give yours another name.")
    tokens = rest.split(":")
    lower, bounds = False, None
    while len(tokens) > 1 and (tokens[-1] == "lower" or _RANGE.match(tokens[-1])):
        last = tokens.pop()
        if last == "lower":
            lower = True
        else:
            m = _RANGE.match(last)
            bounds = (float(m.group(1)), float(m.group(2)))
    column = "score"
    if len(tokens) > 1 and not Path(":".join(tokens)).exists() and not re.search(r"[/\\]", tokens[-1]):
        column = tokens.pop()
    path = ":".join(tokens)
    if not path or not column:
        raise ScoreFileError(f"--scores '{text}': expected {SPEC_FORM}.")
    low, high = bounds or (0.0, 1.0)
    if not low < high:
        raise ScoreFileError(f"--scores '{text}': the range {low:g}..{high:g} is empty; write LO..HI with LO < HI.")
    return ScoreSpec(name, Path(path), column, lower, low, high)


def _rows(path: Path) -> tuple[list, list[str]]:
    """The file's rows (io.Row) and columns; a row that cannot be read stops here."""
    from q2_metric import io

    if not path.is_file():
        raise ScoreFileError(f"{path}: no such file.")
    rows, columns = io.read_table(path)
    columns = io.table_columns(rows, columns)
    for row in rows:
        if row.error:
            raise ScoreFileError(f"{path}: {row.error}.")
    if not rows:
        raise ScoreFileError(f"{path}: no data rows.")
    return rows, columns


def _score(spec: ScoreSpec, raw: Any, row: int, line: int) -> float:
    """One score as a float within the spec's range, or one sentence naming file, column and row."""
    where = f"row {row}" + (f" (line {line})" if line != row else "")
    head = f"{spec.path}: column '{spec.column}'"
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise ScoreFileError(f"{head} is empty at {where}.")
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw)
    except (TypeError, ValueError):
        raise ScoreFileError(f"{head} holds {raw!r}, not a number, at {where}.") from None
    if not math.isfinite(value) or not spec.low <= value <= spec.high:
        raise ScoreFileError(f"{head} holds {raw}, outside [{spec.low:g}, {spec.high:g}], at {where}"
                             + ("." if (spec.low, spec.high) != (0.0, 1.0) else
                                f"; declare the metric's range with {spec.name}=FILE:COLUMN:LO..HI."))
    return value


def read_scores(spec: ScoreSpec, keys: Sequence[Key], where: Mapping[Key, str]) -> np.ndarray:
    """The scores of `keys` (the template's rows, in order) from the spec's file; `where[key]`
    names an annotated row holding the key, for the message when it is not scored."""
    rows, columns = _rows(spec.path)
    if spec.column not in columns:
        shown = ", ".join(f"'{c}'" for c in columns[:20]) or "none"
        raise ScoreFileError(f"{spec.path}: column '{spec.column}' is missing (its columns: {shown}); "
                             f"name the right one with {spec.name}={spec.path}:COLUMN.")
    if "response" in columns and "knowledge" in columns:
        return _by_key(spec, rows, keys, where)
    return _by_order(spec, rows, columns, keys)


def _by_key(spec: ScoreSpec, rows: list, keys: Sequence[Key], where: Mapping[Key, str]) -> np.ndarray:
    index = {key: i for i, key in enumerate(keys)}
    values = np.full(len(keys), np.nan)
    first_row: dict[Key, int] = {}
    for row in rows:
        key = (row.fields.get("response"), row.fields.get("knowledge"))
        for col, text in zip(("response", "knowledge"), key):
            if not isinstance(text, str):
                raise ScoreFileError(f"{spec.path}: column '{col}' is not text at row {row.number}; "
                                     "it is the key that matches the row to an annotated response.")
        value = _score(spec, row.fields.get(spec.column), row.number, row.line)
        if key in first_row:
            raise ScoreFileError(f"{spec.path}: rows {first_row[key]} and {row.number} both score the response "
                                 f"{_short(key[0])} with the same knowledge (column '{spec.column}'); keep one row "
                                 "per response/knowledge pair.")
        first_row[key] = row.number
        if key in index:
            values[index[key]] = value
    missing = [k for k, v in zip(keys, values) if np.isnan(v)]
    if missing:
        raise ScoreFileError(f"{spec.path}: column '{spec.column}' has no score for {len(missing)} of the "
                             f"{len(keys)} annotated responses, the first {_short(missing[0][0])} "
                             f"({where[missing[0]]}); score every row of `q2 meta-eval --write-template DIR`.")
    return values


def _by_order(spec: ScoreSpec, rows: list, columns: list[str], keys: Sequence[Key]) -> np.ndarray:
    if len(rows) != len(keys):
        raise ScoreFileError(f"{spec.path}: {len(rows)} rows but the template has {len(keys)}; without "
                             "'response' and 'knowledge' columns, row i scores row i of "
                             f"`q2 meta-eval --write-template DIR` (column '{spec.column}').")
    for i, row in enumerate(rows, 1):
        if "id" in columns and str(row.fields.get("id", "")).strip() not in (str(i), f"{i}.0"):
            raise ScoreFileError(f"{spec.path}: column 'id' holds {row.fields.get('id')!r} at row {row.number}, "
                                 f"where the template's row {i} has id {i}; keep the template's row order.")
    return np.array([_score(spec, row.fields.get(spec.column), row.number, row.line) for row in rows])


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def write_template(directory: str | Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """`DIR/meta_eval_template.csv`: id (1-based row number), response, knowledge, message."""
    from q2_metric.io import write_table

    path = Path(directory) / TEMPLATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(path, [{"id": i, **r} for i, r in enumerate(records, 1)], TEMPLATE_COLUMNS)
    return path
