"""The Space's explanation of one score: the response's spans highlighted by span score, and one
table row per generated question (the one-sentence reason line is `display.reason_line`)."""

from __future__ import annotations

import html

from q2_metric.results import ResponseScore

TABLE_COLUMNS = [
    "span",
    "question",
    "status",
    "answer (response)",
    "answer (knowledge)",
    "F1",
    "NLI",
    "score",
]


def _color(score: float) -> str:
    """Red (0) through yellow to green (1)."""
    return f"hsl({round(120 * max(0.0, min(1.0, score)))}, 75%, 78%)"


def span_segments(response: str, res: ResponseScore) -> list[tuple[str, str | None, float | None]]:
    """The response cut into (text, status, span score) segments at the offsets of `res.spans`
    (`steps.spans`): each answer candidate occurrence is `valid` with its span score (multi mode:
    the mean of its valid questions') or `no valid question` (score None); the text between them
    has status None. Of overlapping occurrences the earlier candidate is shown."""
    by_occurrence: dict[int, list] = {}
    for s in res.spans:
        if s.start is not None:
            by_occurrence.setdefault(s.occurrence, []).append(s)
    taken: list[tuple[int, int, str, float | None]] = []
    for _, spans in sorted(by_occurrence.items()):  # candidate order (`res.spans` is the response's)
        start, end = spans[0].start, spans[0].end
        if any(start < e and s < end for s, e, _, _ in taken):
            continue
        scores = [s.score if s.score is not None else 0.0 for s in spans if s.question is not None]
        score = sum(scores) / len(scores) if scores else None
        taken.append((start, end, "valid" if scores else "no valid question", score))
    segments: list[tuple[str, str | None, float | None]] = []
    pos = 0
    for start, end, status, score in sorted(taken):
        if start > pos:
            segments.append((response[pos:start], None, None))
        segments.append((response[start:end], status, score))
        pos = end
    if pos < len(response):
        segments.append((response[pos:], None, None))
    return segments


def highlighted_html(response: str, res: ResponseScore) -> str:
    """The response as HTML: each span with a valid question in a `<mark>` coloured by its span score
    (red 0, green 1) with the score after it; other answer candidates in grey."""
    out = []
    for text, status, score in span_segments(response, res):
        if status is None:
            out.append(html.escape(text))
            continue
        if score is None:
            style, tip, tail = "background:#e5e7eb;color:#444", "no valid question", ""
        else:
            style, tip = f"background:{_color(score)};color:#111", f"span score {score:.2f}"
            tail = f'<sub style="font-size:70%"> {score:.2f}</sub>'
        data = f' data-score="{score:.2f}"' if score is not None else ""
        out.append(
            f'<mark class="q2-span" data-status="{status}"{data} title="{tip}" '
            f'style="{style};padding:0 2px;border-radius:3px">{html.escape(text)}{tail}</mark>'
        )
    return f'<div class="q2-response" style="font-size:1.1em;line-height:1.8">{"".join(out)}</div>'


def _num(value: float | None) -> float | None:
    return None if value is None or value != value else round(value, 3)


def question_rows(res: ResponseScore) -> list[list]:
    """One row per generated question (`TABLE_COLUMNS`)."""
    return [
        [
            t.candidate,
            t.question,
            t.status,
            ""
            if t.response_answer is None
            else (t.response_answer if t.response_has_answer else "(no answer)"),
            ""
            if t.knowledge_answer is None
            else (t.knowledge_answer if t.knowledge_has_answer else "(no answer)"),
            _num(t.f1),
            t.nli_label or "",
            _num(t.score),
        ]
        for t in res.questions
    ]
