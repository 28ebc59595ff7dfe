"""Spans: every answer candidate occurrence located in the user's response, with its question,
answers and span scores (after "response scores"; no model).

The candidates' offsets come from the parser (spaCy's `start_char`/`end_char`) in the text parsed.
Without coreference that text is the response as given. With `coref=True` it is the resolved
response: offsets are carried back through the replacements (`CorefTrace.replacements`, whose
offsets are in the response as given); a span that touches a replaced stretch grows to cover the
whole mention as written (see `results.Span`).

Which spans are unsupported is decided by the span score alone (`results.Span`): below 1 (with
NLI when on); no score changes here.

What a reader sees, the same in every front-end: each span trimmed of the whitespace around it
(its offsets moved so that `response[start:end] == text` still holds; the candidate, which the
models read, is left as it was), and the spans in the order of the response (by start, then end;
the spans of one occurrence keep their questions' order; spans without offsets last).
"""

from __future__ import annotations

from collections.abc import Sequence

from q2_metric.results import Pair, Span
from q2_metric.steps.coref import Replacement, apply_replacements


def to_original(start: int, end: int, replacements: Sequence[Replacement]) -> tuple[int, int, bool]:
    """Offsets [start, end) in a resolved text -> offsets in the text before resolution, and whether
    the span touches a replacement (then it covers that mention as written).

    >>> reps = [Replacement(14, 16, "It", "coffee")]   # "I had coffee. It was hot." -> "... coffee was hot."
    >>> to_original(14, 20, reps), to_original(21, 24, reps), to_original(6, 12, reps)
    ((14, 16, True), (17, 20, False), (6, 12, False))
    """
    delta, new_start, new_end, touched = 0, None, None, False
    for r in sorted(replacements, key=lambda r: r.start):
        rs = r.start + delta  # where the replacement lies in the resolved text
        re_ = rs + len(r.replacement)
        if new_start is None and start < re_:
            if start >= rs:  # begins inside the replaced stretch
                new_start, touched = r.start, True
            else:
                new_start = start - delta
        if new_end is None and end <= rs:
            new_end = end - delta
        elif new_end is None and end <= re_:  # ends inside the replaced stretch
            new_end, touched = r.end, True
        if new_start is not None and rs < end and start < re_:
            touched = True
        delta += len(r.replacement) - (r.end - r.start)
    return (
        start - delta if new_start is None else new_start,
        end - delta if new_end is None else new_end,
        touched,
    )


def response_spans(
    original: str,
    candidates: Sequence[str],
    offsets: Sequence,
    questions: Sequence,
    replacements: Sequence[Replacement] | None = None,
) -> list[Span]:
    """The spans of one response: per candidate occurrence, one span per valid question (its
    scores set), or one unchecked span when it has none.

    Args:
        original: the response as the user gave it.
        candidates: the candidates as scored; `offsets`: theirs in the text parsed (None: unknown).
        questions: the response's `QuestionTrace`s.
        replacements: coreference's replacements (offsets in `original`), None without coref.
    """
    from q2_metric.results import VALID

    out: list[Span] = []
    for j, (cand, at) in enumerate(zip(candidates, offsets)):
        if at is None:
            start = end = None
            text, replaced = cand, False
        elif replacements:
            start, end, replaced = to_original(at[0], at[1], replacements)
            text = original[start:end]
        else:
            (start, end), replaced = at, False
            text = original[start:end]
        start, end, text = trimmed(start, end, text)
        valid = [t for t in questions if t.occurrence == j and t.status == VALID]
        if not valid:
            out.append(Span(start, end, text, cand, j, replaced=replaced))
        for t in valid:
            out.append(
                Span(
                    start,
                    end,
                    text,
                    cand,
                    j,
                    question=t.question,
                    response_answer=t.response_answer,
                    knowledge_answer=t.knowledge_answer,
                    knowledge_has_answer=t.knowledge_has_answer,
                    f1=t.f1,
                    nli_label=t.nli_label,
                    score=t.score,
                    score_no_nli=t.score_no_nli,
                    supported=None if t.score is None else t.score >= 1.0,
                    replaced=replaced,
                )
            )
    out.sort(key=lambda s: (s.start is None, s.start or 0, s.end or 0))  # stable: questions' order kept
    return out


def trimmed(start: int | None, end: int | None, text: str) -> tuple[int | None, int | None, str]:
    """A span's offsets and text without the whitespace around it (a span of whitespace only is
    left as it is); offsets None stay None.

    >>> trimmed(3, 13, " the show ")
    (4, 12, 'the show')
    >>> trimmed(None, None, "Oslo\\n"), trimmed(0, 2, "  ")
    ((None, None, 'Oslo'), (0, 2, '  '))
    """
    inner = text.strip()
    if not inner or inner == text:
        return start, end, text
    lead = len(text) - len(text.lstrip())
    if start is None or end is None:
        return start, end, inner
    return start + lead, start + lead + len(inner), inner


def locate_spans(pairs: Sequence[Pair]) -> None:
    """Set `spans` of every pair's `ResponseScore` (after the response scores)."""
    for p in pairs:
        r, trace = p.result, p.result.coref
        replacements = None
        original = p.response
        if trace is not None:
            original = trace.original
            replacements = trace.replacements
            if apply_replacements(original, replacements) != trace.resolved:  # never, by coref.resolve_step
                raise RuntimeError("coreference's trace does not rebuild the resolved response")
        r.spans = response_spans(
            original,
            r.candidates,
            r.candidate_offsets or [None] * len(r.candidates),
            r.questions,
            replacements,
        )
