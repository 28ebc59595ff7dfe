"""Stage "candidates", text -> answer candidates: named entities, then new noun chunks, minus "i".

Each candidate occurrence keeps where it lies in the parsed text (character offsets, from the
parser; `steps.spans` carries them to the user's response)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from q2_metric.components import ParsedText, Parser
from q2_metric.results import Pair
from q2_metric.steps.unique import unique_call

Offsets = tuple[int, int] | None  # [start, end) in the parsed text; None: not found in it


def locate(text: str, pieces: Sequence[str]) -> list[Offsets]:
    """Offsets of `pieces` (in text order, as a parser lists them) found left to right in `text`,
    each search starting after the previous piece; None for a piece not found (the next search
    starts where the last one found ended). For parsers that give no offsets.

    >>> locate("Miami, then Miami again.", ["Miami", "Miami", "Paris"])
    [(0, 5), (12, 17), None]
    """
    out: list[Offsets] = []
    pos = 0
    for piece in pieces:
        at = text.find(piece, pos) if piece else -1
        if at < 0:
            out.append(None)
            continue
        out.append((at, at + len(piece)))
        pos = at + len(piece)
    return out


def candidate_occurrences(
    parsed: ParsedText, text: str = "", drop: Iterable[str] = ("i",)
) -> list[tuple[str, Offsets]]:
    """`answer_candidates` with each occurrence's offsets in `text` (the parser's own, else
    `locate` in `text`).

    >>> candidate_occurrences(ParsedText(entities=["Miami"], noun_chunks=["the city"]), "Miami, the city.")
    [('Miami', (0, 5)), ('the city', (7, 15))]
    """
    ent_at = parsed.entity_offsets if parsed.entity_offsets is not None else locate(text, parsed.entities)
    chunk_at = (
        parsed.noun_chunk_offsets
        if parsed.noun_chunk_offsets is not None
        else locate(text, parsed.noun_chunks)
    )
    candidates = list(zip(parsed.entities, ent_at))
    seen = {c.lower() for c, _ in candidates}
    for chunk, at in zip(parsed.noun_chunks, chunk_at):
        if chunk.lower() not in seen:
            candidates.append((chunk, at))
            seen.add(chunk.lower())
    dropped = {d.lower() for d in drop}
    return [(c, at) for c, at in candidates if c.lower() not in dropped]


def answer_candidates(parsed: ParsedText, drop: Iterable[str] = ("i",)) -> list[str]:
    """Every named entity in order (repeats kept: each occurrence is scored), then each noun chunk
    whose lower-cased text equals no candidate so far; candidates equal (case-insensitively) to a
    word in `drop` are removed last.

    >>> answer_candidates(ParsedText(entities=["Miami", "Miami"], noun_chunks=["miami", "I", "the city"]))
    ['Miami', 'Miami', 'the city']
    """
    return [c for c, _ in candidate_occurrences(parsed, "", drop)]


def find_candidates(pairs: Sequence[Pair], parser: Parser, drop: Iterable[str]) -> None:
    """Stage "candidates": parse each distinct response once and set `candidates` (and their
    offsets in the text parsed, `candidate_offsets`) of every pair.

    Args:
        pairs: the batch's (response, knowledge) pairs, each with the `ResponseScore` it fills.
        parser: the spaCy backend (one call over the distinct responses).
        drop: candidates removed, compared case-insensitively (the paper's: "i").
    """
    parsed = unique_call([p.response for p in pairs], parser.parse)
    for p in pairs:
        found = candidate_occurrences(parsed[p.response], p.response, drop)
        p.result.candidates = [c for c, _ in found]
        p.result.candidate_offsets = [at for _, at in found]


def keep_in_focus(pairs: Sequence[Pair]) -> None:
    """After the candidates stage: a pair with a `focus` keeps only the candidates whose offsets lie
    inside it (a candidate without offsets is dropped); a pair without one is left as it is.

    >>> from q2_metric.results import ResponseScore
    >>> p = Pair("Ann met Bob. Bob left.", "", ResponseScore(0, 0.0, 0.0), focus=(13, 22))
    >>> p.result.candidates, p.result.candidate_offsets = ["Ann", "Bob", "Bob"], [(0, 3), (8, 11), (13, 16)]
    >>> keep_in_focus([p]); p.result.candidates, p.result.candidate_offsets
    (['Bob'], [(13, 16)])
    """
    for p in pairs:
        if p.focus is None:
            continue
        start, end = p.focus
        kept = [
            (c, at)
            for c, at in zip(p.result.candidates, p.result.candidate_offsets)
            if at is not None and start <= at[0] and at[1] <= end
        ]
        p.result.candidates = [c for c, _ in kept]
        p.result.candidate_offsets = [at for _, at in kept]
