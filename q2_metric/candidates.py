"""Step 1, text -> answer candidates: named entities, then new noun chunks, minus "i"."""

from __future__ import annotations

from typing import Iterable

from q2_metric.components import ParsedText


def answer_candidates(parsed: ParsedText, drop: Iterable[str] = ("i",)) -> list[str]:
    """Named entities, then noun chunks whose lower-cased text is not already a candidate;
    candidates equal (case-insensitively) to a word in `drop` are removed.

    >>> answer_candidates(ParsedText(entities=["Bob Ross"], noun_chunks=["bob ross", "I", "the show"]))
    ['Bob Ross', 'the show']
    """
    candidates = list(parsed.entities)
    seen = {c.lower() for c in candidates}
    for chunk in parsed.noun_chunks:
        if chunk.lower() not in seen:
            candidates.append(chunk)
            seen.add(chunk.lower())
    dropped = {d.lower() for d in drop}
    return [c for c in candidates if c.lower() not in dropped]
