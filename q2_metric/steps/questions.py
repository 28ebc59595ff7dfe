"""Stage "questions", answer candidates -> questions: ranked questions for every candidate occurrence.

A response longer than question generation reads (`qg_max_input_tokens`, 512 tokens of the
input `answer: A  context: RESPONSE </s>`) is cut to that limit by default (the engine's reading of
the released code), and every cut input is counted on the response (`ResponseScore.qg_cut`). With
`long_inputs="windows"` (a departure) such an input's context is instead the window of the
response's whole sentences around the candidate that fits (`ResponseScore.qg_windows`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from q2_metric.components import QuestionGenerator
from q2_metric.results import UNUSED, Pair, QuestionTrace
from q2_metric.steps.unique import unique_call

# a sentence ends at ., ! or ? (and any closing quotes or brackets) followed by white space
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")

Measure = Callable[[Sequence[str], Sequence[str]], list[int]]


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence of `text`, white space between them left out.

    >>> text = "Bob Ross painted. He hosted a show! Yes."
    >>> [text[s:e] for s, e in sentence_bounds(text)]
    ['Bob Ross painted.', 'He hosted a show!', 'Yes.']
    """
    bounds, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start() + len(m.group().rstrip())
        if text[start:end].strip():
            bounds.append((start, end))
        start = m.end()
    if text[start:].strip():
        bounds.append((start, len(text.rstrip())))
    return bounds or [(0, len(text))]


def sentence_window(
    text: str,
    candidate: str,
    at: tuple[int, int] | None,
    measure: Measure,
    limit: int,
) -> tuple[str, bool]:
    """The context of `candidate`'s QG input from a long `text`: the sentence holding it (at `at`,
    else where the candidate is first found, else the first), then the next and the previous
    sentences in turn while the input fits in `limit` tokens (`measure`: the generator's count of
    an input's tokens). Returns the window and whether it fits (False: one sentence is too long,
    and the generator cuts it)."""
    bounds = sentence_bounds(text)
    where = at[0] if at is not None else max(text.find(candidate), 0)
    i = next((k for k, (s, e) in enumerate(bounds) if s <= where < e), 0)
    lo = hi = i

    def window(a: int, b: int) -> str:
        return text[bounds[a][0] : bounds[b][1]]

    if measure([candidate], [window(lo, hi)])[0] > limit:
        return window(lo, hi), False
    grow_next, grow_prev = hi + 1 < len(bounds), lo > 0
    while grow_next or grow_prev:
        if grow_next:
            if measure([candidate], [window(lo, hi + 1)])[0] <= limit:
                hi += 1
                grow_next = hi + 1 < len(bounds)
            else:
                grow_next = False
        if grow_prev:
            if measure([candidate], [window(lo - 1, hi)])[0] <= limit:
                lo -= 1
                grow_prev = lo > 0
            else:
                grow_prev = False
    return window(lo, hi), True


def generate_questions(
    pairs: Sequence[Pair], qg: QuestionGenerator, limit: int | None = None, long_inputs: str = "cut"
) -> None:
    """Stage "questions": one generation per distinct (candidate, context); every occurrence of a
    candidate gets its own traces (status `unused` until the question filter examines them).

    Args:
        pairs: the batch, with `candidates` (and their offsets) set.
        qg: the question generator (one call over the distinct inputs). One that can count an
            input's tokens (`input_lengths(answers, contexts)`) has its cuts counted and, with
            `long_inputs="windows"`, a long response read in windows of its sentences.
        limit: the generator's input limit in tokens (`qg_max_input_tokens`); None: not measured.
        long_inputs: "cut" (the default: a longer input is cut by the generator, and counted) or
            "windows".
    """
    measure: Measure | None = getattr(qg, "input_lengths", None) if limit else None
    contexts = {id(p): [p.response] * len(p.result.candidates) for p in pairs}
    if measure is not None and limit is not None:
        keys = [(cand, p.response) for p in pairs for cand in p.result.candidates]
        distinct = list(dict.fromkeys(keys))  # counted once each; a tokenizer's count, no model input
        lengths = (
            dict(zip(distinct, measure([a for a, _ in distinct], [c for _, c in distinct])))
            if distinct
            else {}
        )
        windows: dict[tuple[str, str, int], tuple[str, bool]] = {}
        for p in pairs:
            r, offsets = p.result, p.result.candidate_offsets
            r.qg_cut = r.qg_windows = 0
            for j, cand in enumerate(r.candidates):
                if lengths[(cand, p.response)] <= limit:
                    continue
                if long_inputs != "windows":
                    r.qg_cut += 1
                    continue
                at = offsets[j] if j < len(offsets) else None
                key = (cand, p.response, at[0] if at is not None else -1)
                if key not in windows:
                    windows[key] = sentence_window(p.response, cand, at, measure, limit)
                contexts[id(p)][j], fits = windows[key]
                r.qg_windows += 1
                r.qg_cut += not fits
    keys = [(cand, ctx) for p in pairs for cand, ctx in zip(p.result.candidates, contexts[id(p)])]
    generated = unique_call(keys, lambda ks: qg.generate([a for a, _ in ks], [c for _, c in ks]))
    for p in pairs:
        p.result.questions = [
            QuestionTrace(cand, q, rank, UNUSED, occurrence=j)
            for j, (cand, ctx) in enumerate(zip(p.result.candidates, contexts[id(p)]))
            for rank, q in enumerate(generated[(cand, ctx)])
        ]
