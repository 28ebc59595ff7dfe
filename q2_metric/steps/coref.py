"""Coreference preprocessing of the first arXiv version of the paper (App. A, "Handling pronouns").

For each dialogue: resolve the opening turn; append the next turn to the *resolved* text and
resolve again; continue turn by turn through the response. Resolving a text replaces every mention
of each entity by the text of its first mention. The scored response is the resolved response
(the part of the last resolved text that the response became); the knowledge is unchanged.

Everything here is a pure function over texts and mention clusters; the model that finds the
clusters is a `CorefResolver` (`q2_metric.models.hf_coref`, or `ScriptedCoref` in tests), called
once per turn step over every dialogue still running (`resolve_dialogues`).

Rules fixed here (the paper does not spell them out; AllenNLP's `replace_corefs`, which the paper's
model came with, is the model for the first two):
- the first mention of a cluster is the one that starts first (the longest on a tie); every other
  mention is replaced by the first mention's text (itself resolved where it holds a replaced mention);
- a possessive pronoun (`POSSESSIVES`) becomes the first mention plus "'s" ("its" -> "caffeine's");
- a cluster whose first mention is a pronoun (`PRONOUNS`) is not replaced (a departure from
  AllenNLP's `replace_corefs`, which would write "He" over a later "Paul");
- of overlapping mentions to replace, the outer (then the earlier) one wins and the mentions inside
  it are left as they are; a mention inside a first mention is replaced (the first mention is kept);
- mentions that cross the boundary between the history and the response are not replaced;
- a mention whose replacement equals its text is not reported;
- a text the model cannot read whole (longer than it reads: the resolver answers None for it) is
  left as written, and the trace says why (`CorefTrace.skipped`), so that an explanation does not
  read as if the model had found nothing to replace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

Span = tuple[int, int]  # character offsets [start, end)
Clusters = list[list[Span]]

# Possessive determiners that AllenNLP tags PRP$ without ambiguity ("her" may be an object: left out).
POSSESSIVES = frozenset({"his", "its", "their", "our", "my", "your", "whose"})
# A cluster whose first mention is one of these is left alone: a pronoun adds nothing to the mentions
# after it, and would overwrite a name ("He ... Paul" -> "He ... He") or make "our" into "We's".
PRONOUNS = frozenset(
    {
        "i",
        "me",
        "my",
        "mine",
        "you",
        "your",
        "yours",
        "we",
        "us",
        "our",
        "ours",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "it",
        "its",
        "they",
        "them",
        "their",
        "theirs",
    }
)
# How turns are joined into the text resolved at each step.
TURN_JOINER = " "


@runtime_checkable
class CorefResolver(Protocol):
    """Coreference clusters of each text: lists of character spans, one list per entity."""

    def clusters(self, texts: Sequence[str]) -> list[Clusters | None]:
        """For each text, its clusters of mention spans (each cluster at least two mentions), or
        None for a text the model could not read whole (too long for it). A resolver may say how
        much it reads in `max_tokens` (an int), which the explanation then names."""


@dataclass(frozen=True)
class Replacement:
    """One mention replaced: its offsets in the text before resolution, its text and what it became."""

    start: int
    end: int
    original: str
    replacement: str


@dataclass
class CorefTrace:
    """What coreference did to one response (shown in explanations)."""

    original: str
    resolved: str
    replacements: list[Replacement] = field(default_factory=list)  # offsets in `original`
    history_turns: int = 0  # 0: resolved within the response alone
    skipped: str | None = None  # why nothing was resolved (the text was too long for the model)

    @property
    def changed(self) -> bool:
        return self.resolved != self.original


def _clean(clusters: Clusters, length: int) -> Clusters:
    out = []
    for cluster in clusters:
        spans = sorted(
            {(int(s), int(e)) for s, e in cluster if 0 <= s < e <= length}, key=lambda sp: (sp[0], -sp[1])
        )
        if len(spans) > 1:
            out.append(spans)
    return out


def replacement_text(mention: str, first: str) -> str:
    """What a mention becomes: the first mention's text, with "'s" for a possessive pronoun.

    >>> replacement_text("its", "caffeine"), replacement_text("They", "The Beatles")
    ("caffeine's", 'The Beatles')
    """
    if mention.lower() in POSSESSIVES and not first.endswith(("'s", "s'")):
        return first + "'s"
    return first


def plan_replacements(text: str, clusters: Clusters, keep_from: int = 0) -> list[Replacement]:
    """The replacements first-mention resolution makes in `text`, left to right, without overlaps.
    Only mentions lying wholly before or wholly after `keep_from` (a turn boundary) are replaced."""
    wanted: list[tuple[Span, Span]] = []  # (mention, its first mention)
    for cluster in _clean(clusters, len(text)):
        fs, fe = cluster[0]
        if text[fs:fe].lower() in PRONOUNS:
            continue
        for s, e in cluster[1:]:
            if s < keep_from < e or (
                s < fe and fs < e
            ):  # crosses the boundary, or overlaps the first mention
                continue
            wanted.append(((s, e), (fs, fe)))
    wanted.sort(key=lambda w: (w[0][0] - w[0][1], w[0][0]))  # outer mentions claim their span first
    taken: dict[Span, Span] = {}
    for span, first in wanted:
        if not any(span[0] < e and s < span[1] for s, e in taken):
            taken[span] = first

    def first_text(first: Span) -> str:
        # a first mention with replaced mentions inside reads resolved ("His band" -> "Simon's band");
        # those mentions' own first mentions end before them, so this recursion ends
        inner = sorted((s, e) for s, e in taken if first[0] <= s and e <= first[1])
        parts, pos = [], first[0]
        for s, e in inner:
            parts += [text[pos:s], replacement_text(text[s:e], first_text(taken[(s, e)]))]
            pos = e
        return "".join(parts) + text[pos : first[1]]

    plan = [
        Replacement(s, e, text[s:e], replacement_text(text[s:e], first_text(first)))
        for (s, e), first in taken.items()
    ]
    return sorted((r for r in plan if r.replacement != r.original), key=lambda r: r.start)


def apply_replacements(text: str, replacements: Sequence[Replacement]) -> str:
    """`text` with each (non-overlapping, sorted) replacement made.

    >>> apply_replacements("I had coffee. It was hot.", [Replacement(14, 16, "It", "coffee")])
    'I had coffee. coffee was hot.'
    """
    out, pos = [], 0
    for r in replacements:
        out.append(text[pos : r.start])
        out.append(r.replacement)
        pos = r.end
    out.append(text[pos:])
    return "".join(out)


def shift(offset: int, replacements: Sequence[Replacement]) -> int:
    """Where `offset` (not inside a replaced span) lands once the replacements are made."""
    return offset + sum(len(r.replacement) - (r.end - r.start) for r in replacements if r.end <= offset)


def join_turn(resolved_so_far: str | None, turn: str) -> tuple[str, int]:
    """The text of the next step and where `turn` starts in it.

    >>> join_turn("Hi.", "It is.")
    ('Hi. It is.', 4)
    """
    if not resolved_so_far:
        return turn, 0
    return resolved_so_far + TURN_JOINER + turn, len(resolved_so_far) + len(TURN_JOINER)


def resolve_step(text: str, clusters: Clusters, turn_start: int) -> tuple[str, int, list[Replacement]]:
    """One step: the resolved text, where the last turn starts in it, and the replacements made in
    the last turn (offsets relative to the turn as written)."""
    plan = plan_replacements(text, clusters, keep_from=turn_start)
    resolved = apply_replacements(text, plan)
    in_turn = [
        Replacement(r.start - turn_start, r.end - turn_start, r.original, r.replacement)
        for r in plan
        if r.start >= turn_start
    ]
    return resolved, shift(turn_start, plan), in_turn


TOO_LONG = "the text was too long for the coreference model"


def too_long_reason(resolver: CorefResolver) -> str:
    """`TOO_LONG`, with how much the model reads where the resolver says (`max_tokens`).

    >>> class R: max_tokens = 4096
    >>> too_long_reason(R())
    'the text was too long for the coreference model (it reads at most 4096 tokens)'
    """
    limit = getattr(resolver, "max_tokens", None)
    return f"{TOO_LONG} (it reads at most {limit} tokens)" if isinstance(limit, int) else TOO_LONG


def resolve_dialogues(
    histories: Sequence[Sequence[str]], responses: Sequence[str], resolver: CorefResolver
) -> list[CorefTrace]:
    """The paper's procedure for every dialogue at once: step t resolves, in one resolver call, the
    dialogues that have a t-th text (history turns, then the response). Empty turns are skipped."""
    dialogues = [[t for t in history if t.strip()] + [resp] for history, resp in zip(histories, responses)]
    resolved: list[str | None] = [None] * len(dialogues)
    traces = [CorefTrace(resp, resp, [], len(d) - 1) for resp, d in zip(responses, dialogues)]
    for step in range(max((len(d) for d in dialogues), default=0)):
        todo = [i for i, d in enumerate(dialogues) if step < len(d)]
        joined = {i: join_turn(resolved[i], dialogues[i][step]) for i in todo}
        found = resolver.clusters([joined[i][0] for i in todo]) if todo else []
        for i, clusters in zip(todo, found):
            text, start = joined[i]
            replaced: list[Replacement]
            if clusters is None:  # not read: this step's text goes on as written
                now, new_start, replaced = text, start, []
            else:
                now, new_start, replaced = resolve_step(text, clusters, start)
            resolved[i] = now
            if step == len(dialogues[i]) - 1:
                traces[i] = CorefTrace(
                    responses[i],
                    now[new_start:],
                    replaced,
                    len(dialogues[i]) - 1,
                    skipped=too_long_reason(resolver) if clusters is None else None,
                )
    return traces


def resolve_pairs(pairs: Sequence, histories: Sequence[Sequence[str]], resolver: CorefResolver) -> None:
    """Stage "coreference" (with `coref=True`): each pair's response becomes its resolved response, and its
    `ResponseScore.coref` records the replacements (`histories` indexed by the response's index)."""
    traces = resolve_dialogues(
        [histories[p.result.index] for p in pairs], [p.response for p in pairs], resolver
    )
    for p, trace in zip(pairs, traces):
        p.response = trace.resolved
        p.result.coref = trace
