"""Any metric's scores beside Q² in `q2 meta-eval`: `--scores NAME=FILE[:COLUMN][:lower][:LO..HI]`.

A score file (CSV, JSONL or Parquet) gives one score per annotated response. Each row is bound to
its response by identity, never by its position in the file (a re-sorted file scores the same):
- with an `id` column: by the id of the template that `q2 meta-eval --write-template DIR` writes
  (one row per distinct response/knowledge pair: of the annotated set, ids 1..N in its fixed order;
  of `--dataset` files, `NAME:ROW` of the pair's first row, valid in any `--dataset` order); any
  `response`/`knowledge` column beside it must hold the id's text;
- else with `response` and `knowledge` columns: by that exact text pair; rows for other pairs are
  ignored;
- else with one of them: by that text where it names one annotated pair; a text shared by several
  pairs is refused as ambiguous;
- a file with none of these columns is refused.

The file is checked whole before anything is computed: a missing column, an empty, non-numeric,
non-finite or out-of-range score (default range [0, 1]; declare another with `:LO..HI`), a pair
scored twice, or an annotated response left unscored is one sentence naming the file, the column
and the row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
        return (
            f"{self.path}:{self.column}"
            + (" (lower = more consistent)" if self.lower else "")
            + ("" if (self.low, self.high) == (0.0, 1.0) else f", range [{self.low:g}, {self.high:g}]")
        )


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
        raise ScoreFileError(
            f"--scores '{text}': the name '{name}' must start with a letter and hold only "
            "letters, digits, '_' and '-'."
        )
    if name in RESERVED:
        raise ScoreFileError(
            f"--scores '{text}': '{name}' is a built-in metric or row; give yours another name."
        )
    tokens = rest.split(":")
    lower, bounds = False, None
    while len(tokens) > 1 and (tokens[-1] == "lower" or _RANGE.match(tokens[-1])):
        last = tokens.pop()
        if last == "lower":
            lower = True
        else:
            m = _RANGE.match(last)
            assert m is not None  # the loop's condition matched it
            bounds = (float(m.group(1)), float(m.group(2)))
    column = "score"
    if len(tokens) > 1 and not Path(":".join(tokens)).exists() and not re.search(r"[/\\]", tokens[-1]):
        column = tokens.pop()
    path = ":".join(tokens)
    if not path or not column:
        raise ScoreFileError(f"--scores '{text}': expected {SPEC_FORM}.")
    low, high = bounds or (0.0, 1.0)
    if not low < high:
        raise ScoreFileError(
            f"--scores '{text}': the range {low:g}..{high:g} is empty; write LO..HI with LO < HI."
        )
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
        raise ScoreFileError(
            f"{head} holds {raw}, outside [{spec.low:g}, {spec.high:g}], at {where}"
            + (
                "."
                if (spec.low, spec.high) != (0.0, 1.0)
                else f"; declare the metric's range with {spec.name}=FILE:COLUMN:LO..HI."
            )
        )
    return value


def read_scores(
    spec: ScoreSpec, keys: Sequence[Key], where: Mapping[Key, str], ids: Mapping[str, Key] | None = None
) -> np.ndarray:
    """The scores of `keys` (the template's rows, in order) from the spec's file; `where[key]`
    names an annotated row holding the key, for the message when it is not scored. `ids` maps
    every id the template may hold to its pair (default: the row numbers 1..len(keys)).

    A row binds to its pair by identity, never by its position: by its `id`, else by its
    `response` and/or `knowledge` text; a text that fits several pairs, an id and a text that
    disagree, or a file with neither is refused."""
    rows, columns = _rows(spec.path)
    if spec.column not in columns:
        shown = ", ".join(f"'{c}'" for c in columns[:20]) or "none"
        raise ScoreFileError(
            f"{spec.path}: column '{spec.column}' is missing (its columns: {shown}); "
            f"name the right one with {spec.name}={spec.path}:COLUMN."
        )
    texts: list[str] = [c for c in ("response", "knowledge") if c in columns]
    if "id" not in columns and not texts:
        raise ScoreFileError(
            f"{spec.path}: no column says which response each row scores (column "
            f"'{spec.column}'); keep the template's 'id' column, or its 'response' and 'knowledge' "
            "columns, since rows are never matched by their order."
        )
    ids = {str(i): k for i, k in enumerate(keys, 1)} if ids is None else ids
    return _bind(spec, rows, "id" in columns, texts, keys, where, ids)


def _ident(raw: Any) -> str | None:
    """An id cell as text: 3, 3.0 and '3' are the same id; None when empty or not an id."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, float):
        return str(int(raw)) if raw.is_integer() else None
    text = str(raw).strip()
    return re.sub(r"\.0\Z", "", text) if re.fullmatch(r"\d+\.0", text) else (text or None)


def _bind(
    spec: ScoreSpec,
    rows: list,
    by_id: bool,
    texts: list[str],
    keys: Sequence[Key],
    where: Mapping[Key, str],
    ids: Mapping[str, Key],
) -> np.ndarray:
    index = {key: i for i, key in enumerate(keys)}
    pick = [("response", "knowledge").index(c) for c in texts]
    by_text: dict[tuple, list[Key]] = {}
    for key in keys:
        by_text.setdefault(tuple(key[i] for i in pick), []).append(key)
    values = np.full(len(keys), np.nan)
    first_row: dict[Key, int] = {}
    for row in rows:
        found = tuple(row.fields.get(c) for c in texts)
        for col, text in zip(texts, found):
            if not isinstance(text, str):
                raise ScoreFileError(
                    f"{spec.path}: column '{col}' is not text at row {row.number}; "
                    "it is the key that matches the row to an annotated response."
                )
        if by_id:
            raw = row.fields.get("id")
            ident = _ident(raw)
            if ident is None or ident not in ids:
                example = next(iter(ids), "")
                raise ScoreFileError(
                    f"{spec.path}: column 'id' holds {raw!r} at row {row.number}, which is no id "
                    f"of the template (its ids look like {example!r}); score the template that "
                    "`q2 meta-eval --write-template DIR` writes for these inputs."
                )
            key = ids[ident]
            if texts and found != tuple(key[i] for i in pick):
                col = texts[0] if found[0] != key[pick[0]] else texts[-1]
                raise ScoreFileError(
                    f"{spec.path}: row {row.number} has id {ident!r}, which is the response "
                    f"{_short(key[0])}, but its '{col}' column does not hold that text; the id "
                    "and the text must name the same response."
                )
        elif len(texts) == 2:
            key = found
        else:
            fits = by_text.get(found, [])
            if len(fits) > 1:
                raise ScoreFileError(
                    f"{spec.path}: the {texts[0]} {_short(found[0])} at row {row.number} belongs "
                    f"to {len(fits)} annotated responses, so the row's score is ambiguous; add the "
                    f"'{'knowledge' if texts[0] == 'response' else 'response'}' column or the "
                    "template's 'id'."
                )
            if not fits:
                continue
            key = fits[0]
        value = _score(spec, row.fields.get(spec.column), row.number, row.line)
        if key in first_row:
            raise ScoreFileError(
                f"{spec.path}: rows {first_row[key]} and {row.number} both score the response "
                f"{_short(key[0])} with the same knowledge (column '{spec.column}'); keep one row "
                "per response/knowledge pair."
            )
        first_row[key] = row.number
        if key in index:
            values[index[key]] = value
    missing = [k for k, v in zip(keys, values) if np.isnan(v)]
    if missing:
        raise ScoreFileError(
            f"{spec.path}: column '{spec.column}' has no score for {len(missing)} of the "
            f"{len(keys)} annotated responses, the first {_short(missing[0][0])} "
            f"({where[missing[0]]}); score every row of `q2 meta-eval --write-template DIR`."
        )
    return values


def check_names(specs: Sequence[ScoreSpec]) -> None:
    """Each `--scores NAME` once: a second file under one name would be used while the first is
    named as the source."""
    names = [spec.name for spec in specs]
    for name in names:
        if names.count(name) > 1:
            raise ScoreFileError(f"--scores: the name '{name}' is given twice.")


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def write_template(directory: str | Path, records: Sequence[Mapping[str, Any]]) -> Path:
    """`DIR/meta_eval_template.csv`: id (a record's own `id`, else its 1-based row number),
    response, knowledge, message."""
    from q2_metric.io import write_table

    path = Path(directory) / TEMPLATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(path, [{"id": i, **r} for i, r in enumerate(records, 1)], TEMPLATE_COLUMNS)
    return path
