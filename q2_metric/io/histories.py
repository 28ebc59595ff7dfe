"""The dialogue histories of a table's rows (`q2 score --history-col`, lm-eval's `q2_dialogue`)."""

from __future__ import annotations

from pathlib import Path

from q2_metric.display import history_separator, history_turns
from q2_metric.errors import Q2InputError
from q2_metric.io import Row


def read_histories(input_path: str | Path, rows: list[Row], column: str) -> dict[int, list[str]]:
    """Each good row's dialogue history from `column`: turns joined by `coref.HISTORY_SEPARATOR`
    (" ||| ") in a text cell, or a list of texts (JSONL, Parquet). A row with another value gets an error."""
    good = [r for r in rows if r.error is None]
    if good and not any(column in r.fields for r in good):
        raise Q2InputError(
            f"The input file '{input_path}' has no column '{column}'; name the history column "
            f"with --history-col."
        )
    out: dict[int, list[str]] = {}
    for r in good:
        value = r.fields.get(column)
        if value is None or value == "":
            out[r.number] = []
        elif isinstance(value, str):
            out[r.number] = history_turns(value)
        elif isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
            out[r.number] = list(value)
        else:
            r.error = (
                f"line {r.line}: field '{column}' must be text (turns joined by '{history_separator()}') "
                f"or a list of texts, got {type(value).__name__}"
            )
    return out
