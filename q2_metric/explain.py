"""Explanations that read at a glance: the one-sentence reason for a response's score (every
front-end shows this one: the engine writes it into `ResponseScore.reason`, hence `q2 score`'s
`reason` column, `evaluate`'s details, ParlAI's explain file, Inspect's explanation, `q2 demo` and
the Space), its spans highlighted by span score, and one table row per generated question."""

from __future__ import annotations

import html
from typing import Any

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL
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

# How a valid question's span score came about, in the order the reason line names them.
VERDICTS = (
    ("same", "answered the same way from the knowledge"),
    ("entailed", "answered differently but entailed (NLI)"),
    ("partly", "partly matched (token F1, NLI neutral)"),
    ("unmatched", "answered with no word in common (token F1 0, NLI neutral)"),
    ("contradicted", "contradicted"),
    ("unanswered", "not answered by the knowledge"),
)


def verdict(trace: Any) -> str:
    """`same`, `entailed`, `partly`, `unmatched`, `contradicted` or `unanswered` for a valid
    question's trace (`unmatched`: neutral, or no span NLI, and a token F1 of 0)."""
    if trace.unanswered:
        return "unanswered"
    if trace.f1 is not None and trace.f1 >= 1.0:
        return "same"
    if trace.nli_label == ENTAILMENT:
        return "entailed"
    if trace.nli_label == CONTRADICTION:
        return "contradicted"
    if not trace.f1:  # neutral, or no span NLI, and not one word in common: nothing matched
        return "unmatched"
    return "partly"  # neutral, or no span NLI: the score is the token F1


NOT_SCORED = "Not scored: "


def reason_line(res: ResponseScore) -> str:
    """Why the response scored what it did, in one sentence, e.g. "3 of 4 questions answered the
    same way from the knowledge; 1 contradicted."; "No valid question (...); end-to-end NLI: the
    knowledge entails the response."; "Not scored: empty response."; with coreference, what it
    replaced (`coref_note`).

    The engine calls it once per response and stores the sentence as `res.reason`; called again on
    such a finished result it gives the same sentence."""
    if not res.scored and res.reason is not None and res.reason.startswith(NOT_SCORED):
        return res.reason  # already the sentence (the cause it names is gone from the fields)
    return _score_reason(res) + coref_note(res)


def coref_note(res: ResponseScore) -> str:
    """With `coref=True`: the spans replaced and the resolved response that was scored, e.g.
    ` Coreference (1 earlier turn): "it" -> "the caffeine"; scored: "Yes, the caffeine ..."`."""
    trace = res.coref
    if trace is None:
        return ""
    turns = trace.history_turns
    where = (
        f"{turns} earlier turn{'s' * (turns != 1)}"
        if turns
        else "within the response alone: no history given"
    )
    if getattr(trace, "skipped", None):
        return f" Coreference ({where}): nothing replaced, {trace.skipped}; scored as written."
    if not trace.replacements:
        return f" Coreference ({where}): nothing replaced."
    spans = "; ".join(f'"{r.original}" -> "{r.replacement}"' for r in trace.replacements)
    return f' Coreference ({where}): {spans}; scored: "{trace.resolved}".'


def _score_reason(res: ResponseScore) -> str:
    if not res.scored:
        return f"{NOT_SCORED}{res.reason}."
    valid = res.valid_questions
    if not valid:
        asked = len(res.questions)
        why = (
            f"none of the {asked} generated questions was answered by the response with its own span"
            if asked
            else "the response has no answer candidate"
        )
        label = {
            ENTAILMENT: "entails",
            NEUTRAL: "neither entails nor contradicts",
            CONTRADICTION: "contradicts",
        }.get(res.fallback_label or "", "was compared with")
        windows = res.fallback_windows
        read = (
            f", read in {windows} knowledge windows (entailment if any window entails, else "
            "contradiction if any contradicts, else neutral)"
            if windows > 1
            else ""
        )
        return f"No valid question ({why}); end-to-end NLI: the knowledge {label} the response{read}."
    counts = {key: 0 for key, _ in VERDICTS}
    for t in valid:
        counts[verdict(t)] += 1
    parts = [(n, text) for key, text in VERDICTS if (n := counts[key])]
    first_n, first_text = parts[0]
    noun = "question" if len(valid) == 1 else "questions"
    head = f"{first_n} of {len(valid)} {noun} {first_text}"
    if first_n == len(valid):
        head = f"{'The' if len(valid) == 1 else 'All'} {len(valid)} {noun} {first_text}".replace(
            "The 1 ", "The "
        )
    return "; ".join([head] + [f"{n} {text}" for n, text in parts[1:]]) + "."


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
    for spans in by_occurrence.values():
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
