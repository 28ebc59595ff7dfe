"""Span-level evaluation: Q²'s unsupported spans against gold spans of unsupported text.

Gold comes in either of two JSON-lines shapes, one object per response, offsets in characters of
the response (Python string indices, end exclusive):
- RAGTruth (`response.jsonl`): `{"response": ..., "labels": [{"start": s, "end": e, ...}, ...]}`;
- LettuceDetect (its RAGTruth preprocessing, one sample per line): `{"prompt": ..., "answer": ...,
  "labels": [{"start": s, "end": e, "label": ...}, ...]}`.

Q²'s spans come from `q2 score --spans` run on that same file (its `row` numbers are the gold
file's rows; each span's text is checked against the gold response at its offsets, so a spans file
made from another file is refused). A predicted span is one of the row's `unsupported_spans`
(span score below 1; `results.Span`).

Figures, over every response with gold and a Q² score (`evaluate_spans`):
- character level: the characters inside a predicted span vs those inside a gold span, summed
  over responses: precision = |P ∩ G| / |P|, recall = |P ∩ G| / |G|, F1 their harmonic mean;
- span level: precision = predicted spans that overlap a gold span (by at least one character) /
  predicted spans; recall = gold spans overlapped by a predicted span / gold spans;
- response level: a response is flagged when it has a predicted span, hallucinated when it has a
  gold span; precision/recall/F1 of flagging the hallucinated responses.
A figure whose denominator is 0 is None (undefined), never 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from q2_metric.errors import Q2InputError

SHAPES = ("ragtruth", "lettucedetect")
RESPONSE_FIELD = {"ragtruth": "response", "lettucedetect": "answer"}
Offsets = tuple[int, int]


@dataclass
class SpanCase:
    """One response: its text, its gold spans and Q²'s unsupported spans (offsets in the text)."""

    row: int
    response: str
    gold: list[Offsets]
    predicted: list[Offsets] = field(default_factory=list)


def ratio(num: int, den: int) -> float | None:
    """num / den, None when den is 0.

    >>> ratio(1, 4), ratio(0, 0)
    (0.25, None)
    """
    return num / den if den else None


def prf(tp: int, predicted: int, gold: int) -> dict[str, Any]:
    """Precision, recall and F1 from counts (None where undefined).

    >>> round(prf(2, 4, 3)["f1"], 4)  # P 1/2, R 2/3: 2 * (1/2 * 2/3) / (1/2 + 2/3) = 4/7
    0.5714
    """
    p, r = ratio(tp, predicted), ratio(tp, gold)
    f1 = None if p is None or r is None else (0.0 if p + r == 0 else 2 * p * r / (p + r))
    return {"precision": p, "recall": r, "f1": f1, "tp": tp, "predicted": predicted, "gold": gold}


def _chars(spans: Sequence[Offsets]) -> set[int]:
    return {i for s, e in spans for i in range(s, e)}


def _overlaps(a: Offsets, b: Offsets) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def evaluate_spans(cases: Sequence[SpanCase]) -> dict[str, Any]:
    """Character-, span- and response-level precision/recall/F1 of the predicted spans (see the
    module's docstring). Predicted spans are de-duplicated by offsets (`multi` mode gives one span
    per valid question of an occurrence)."""
    char_tp = char_pred = char_gold = 0
    span_pred_hit = span_pred = span_gold_hit = span_gold = 0
    resp_tp = resp_pred = resp_gold = 0
    for case in cases:
        pred = sorted(set(case.predicted))
        gold = sorted(set(case.gold))
        p_chars, g_chars = _chars(pred), _chars(gold)
        char_tp += len(p_chars & g_chars)
        char_pred += len(p_chars)
        char_gold += len(g_chars)
        span_pred += len(pred)
        span_pred_hit += sum(any(_overlaps(p, g) for g in gold) for p in pred)
        span_gold += len(gold)
        span_gold_hit += sum(any(_overlaps(g, p) for p in pred) for g in gold)
        resp_pred += bool(pred)
        resp_gold += bool(gold)
        resp_tp += bool(pred) and bool(gold)
    p, r = ratio(span_pred_hit, span_pred), ratio(span_gold_hit, span_gold)
    span = {
        "precision": p,
        "recall": r,
        "f1": None if p is None or r is None else (0.0 if p + r == 0 else 2 * p * r / (p + r)),
        "predicted": span_pred,
        "gold": span_gold,
        "predicted_overlapping": span_pred_hit,
        "gold_overlapped": span_gold_hit,
    }
    return {
        "responses": len(cases),
        "character": prf(char_tp, char_pred, char_gold),
        "span": span,
        "response": prf(resp_tp, resp_pred, resp_gold),
    }


def gold_shape(fields: dict[str, Any], shape: str = "auto") -> str:
    """The gold shape of a row: `shape`, or told by its fields ("answer" without "response":
    LettuceDetect; else RAGTruth)."""
    if shape != "auto":
        return shape
    return "lettucedetect" if "answer" in fields and "response" not in fields else "ragtruth"


def offsets_problem(start: Any, end: Any, length: int) -> str | None:
    """None when `start`/`end` are character offsets of a span of a text of `length` characters
    (integers, not booleans, 0 <= start < end <= length), else why not. The one rule of gold
    labels and predicted spans.

    >>> offsets_problem(0, 3, 48), offsets_problem(True, 3, 48) is not None, offsets_problem(2, 4700, 48) is not None
    (None, True, True)
    """
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end))
    if ints and 0 <= start < end <= length:
        return None
    return f"must have integer 'start' < 'end' within the response ({length} characters), got start={start!r}, end={end!r}"


def _gold_offsets(where: str, labels: Any, response: str) -> list[Offsets]:
    if labels is None:
        return []
    if not isinstance(labels, list):
        raise Q2InputError(
            f"{where}: field 'labels' must be a list of {{start, end}} objects, got {type(labels).__name__}."
        )
    out: list[Offsets] = []
    for k, label in enumerate(labels):
        s = label.get("start") if isinstance(label, dict) else None
        e = label.get("end") if isinstance(label, dict) else None
        problem = offsets_problem(s, e, len(response))
        if problem is not None:
            raise Q2InputError(f"{where}: label {k} {problem}.")
        out.append(cast(Offsets, (s, e)))  # integers: offsets_problem said so
    return out


def read_cases(
    gold_path: str | Path, spans_path: str | Path, shape: str = "auto"
) -> tuple[list[SpanCase], dict]:
    """The gold file's responses with their gold spans, joined by row to the rows of a `q2 score
    --spans` file made from it; returns the cases (rows with a Q² score) and counts of the rows left
    out (`unscored`: empty, bad or unscored by Q²)."""
    from q2_metric.io import read_table

    if shape not in ("auto", *SHAPES):
        raise Q2InputError(f"--span-shape must be one of auto, {', '.join(SHAPES)}; got '{shape}'.")
    gold_rows, _ = read_table(gold_path)
    pred_rows, _ = read_table(spans_path)
    for rows, path in ((gold_rows, gold_path), (pred_rows, spans_path)):
        for row in rows:
            if row.error:
                raise Q2InputError(f"{path}: {row.error}.")
    pred: dict[Any, dict[str, Any]] = {}
    for r in pred_rows:
        number = r.fields.get("row")
        if number in pred:
            raise Q2InputError(
                f"{spans_path}: line {r.line}: row {number!r} appears twice; make the spans with "
                f"`q2 score {gold_path} --spans ...` on the gold file, once."
            )
        pred[number] = r.fields
    if len(pred) != len(gold_rows) or set(pred) != set(range(1, len(gold_rows) + 1)):
        raise Q2InputError(
            f"The spans file '{spans_path}' has {len(pred_rows)} rows, the gold file '{gold_path}' "
            f"{len(gold_rows)}: make the spans with `q2 score {gold_path} --spans ...` on this file."
        )
    cases, unscored = [], 0
    for row in gold_rows:
        kind = gold_shape(row.fields, shape)
        col = RESPONSE_FIELD[kind]
        where = f"{gold_path}: line {row.line}"
        response = row.fields.get(col)
        if not isinstance(response, str):
            raise Q2InputError(
                f"{where}: field '{col}' ({kind} shape) must be text, got {type(response).__name__}."
            )
        gold = _gold_offsets(where, row.fields.get("labels"), response)
        got = pred[row.number]
        if got.get("q2") is None:
            unscored += 1
            continue
        predicted: list[Offsets] = []
        spans, unsupported = got.get("spans") or [], got.get("unsupported_spans") or []
        for k, s in enumerate([*unsupported, *spans]):  # every span checked against the gold text
            where = (
                f"{spans_path}: row {row.number}: span {k if k < len(unsupported) else k - len(unsupported)}"
            )
            field_name = "unsupported_spans" if k < len(unsupported) else "spans"
            if not isinstance(s, dict):
                raise Q2InputError(f"{where} of '{field_name}' must be an object, got {type(s).__name__}.")
            start, end = s.get("start"), s.get("end")
            problem = offsets_problem(start, end, len(response))
            if problem is not None and offsets_problem(start, end, end if isinstance(end, int) else 0):
                raise Q2InputError(f"{where} of '{field_name}' {problem}.")  # no span's offsets at all
            if problem is not None or response[start:end] != s.get("text"):  # past the end: another text
                raise Q2InputError(
                    f"{spans_path}: row {row.number}: the span {s.get('text')!r} is not at "
                    f"{start}-{end} of the gold response ({len(response)} characters): the spans "
                    "file was made from another file (or other columns)."
                )
            if k < len(unsupported):
                predicted.append(cast(Offsets, (start, end)))
        cases.append(SpanCase(row.number, response, gold, predicted))
    return cases, {"rows": len(gold_rows), "unscored": unscored}


def span_report(gold_path: str | Path, spans_path: str | Path, shape: str = "auto") -> dict[str, Any]:
    """`evaluate_spans` over the two files, with where it came from."""
    cases, counts = read_cases(gold_path, spans_path, shape)
    return {"gold": str(gold_path), "spans": str(spans_path), **counts, **evaluate_spans(cases)}


def render_span_markdown(report: dict[str, Any]) -> str:
    """The three levels as a Markdown table."""

    from q2_metric.display import figure
    from q2_metric.progress import plural

    def f(value: float | None) -> str:
        return figure(value, 3)

    lines = [
        f"Q² unsupported spans vs gold ({plural(report['responses'], 'response')} scored, "
        f"{report['unscored']} of {plural(report['rows'], 'row')} unscored)",
        "",
        "| level | precision | recall | F1 |",
        "|---|---|---|---|",
    ]
    for level in ("character", "span", "response"):
        r = report[level]
        lines.append(f"| {level} | {f(r['precision'])} | {f(r['recall'])} | {f(r['f1'])} |")
    return "\n".join(lines) + "\n"


def write_span_report(out: Path, report: dict[str, Any]) -> None:
    """span_eval.json and span_eval.md into `out`, all or nothing."""
    from q2_metric.io import commit_report
    from q2_metric.options import json_safe

    markdown = render_span_markdown(report)
    commit_report(
        out,
        [
            ("span_eval.json", lambda fh: json.dump(json_safe(report), fh, indent=2)),
            ("span_eval.md", lambda fh: fh.write(markdown)),
        ],
        {},
    )
