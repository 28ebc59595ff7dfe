"""Stage "candidates", text -> answer candidates: named entities, then new noun chunks, minus "i"."""

from __future__ import annotations

from typing import Iterable, Sequence

from q2_metric.components import ParsedText, Parser
from q2_metric.results import Pair
from q2_metric.steps.unique import unique_call


def answer_candidates(parsed: ParsedText, drop: Iterable[str] = ("i",)) -> list[str]:
    """Every named entity in order (repeats kept: each occurrence is scored), then each noun chunk
    whose lower-cased text equals no candidate so far; candidates equal (case-insensitively) to a
    word in `drop` are removed last.

    >>> answer_candidates(ParsedText(entities=["Miami", "Miami"], noun_chunks=["miami", "I", "the city"]))
    ['Miami', 'Miami', 'the city']
    """
    candidates = list(parsed.entities)
    seen = {c.lower() for c in candidates}
    for chunk in parsed.noun_chunks:
        if chunk.lower() not in seen:
            candidates.append(chunk)
            seen.add(chunk.lower())
    dropped = {d.lower() for d in drop}
    return [c for c in candidates if c.lower() not in dropped]


def find_candidates(pairs: Sequence[Pair], parser: Parser, drop: Iterable[str]) -> None:
    """Stage "candidates": parse each distinct response once and set `candidates` of every pair.

    Args:
        pairs: the batch's (response, knowledge) pairs, each with the `ResponseScore` it fills.
        parser: the spaCy backend (one call over the distinct responses).
        drop: candidates removed, compared case-insensitively (the paper's: "i").
    """
    parsed = unique_call([p.response for p in pairs], parser.parse)
    for p in pairs:
        p.result.candidates = answer_candidates(parsed[p.response], drop)
