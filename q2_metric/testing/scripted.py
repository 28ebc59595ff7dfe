"""Scripted components: deterministic stand-ins for the models, for tests, examples and docs.

Each records its calls (`calls`: the number of inputs of each call) so a test can check that the
engine makes one call per stage, not one per example.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from q2_metric.components import ENTAILMENT, NEUTRAL, NO_ANSWER, Answer, ParsedText
from q2_metric.config import Q2Config
from q2_metric.steps.normalize import normalize_answer

if TYPE_CHECKING:
    from q2_metric.scorer import Q2Scorer

_CAPS = re.compile(r"\b[A-Z][\w']*(?:\s+[A-Z][\w']*)*")
_WHAT = re.compile(r"^what about (.+)\?$", re.IGNORECASE)


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[int] = []

    def describe(self) -> str:
        return f"scripted-{type(self).__name__}"


class ScriptedParser(_Recorder):
    """Entities = runs of capitalised words (or `parses[text]`); tokens are (word, "dep")
    unless `parses` scripts them."""

    def __init__(self, parses: Mapping[str, ParsedText] | None = None) -> None:
        super().__init__()
        self.parses = dict(parses or {})

    def parse(self, texts: Sequence[str]) -> list[ParsedText]:
        self.calls.append(len(texts))
        out = []
        for text in texts:
            if text in self.parses:
                out.append(self.parses[text])
            else:
                found = list(_CAPS.finditer(text))
                out.append(
                    ParsedText(
                        entities=[m.group() for m in found],
                        tokens=[(w, "dep") for w in text.split()],
                        entity_offsets=[m.span() for m in found],
                        noun_chunk_offsets=[],
                    )
                )
        return out


class ScriptedQG(_Recorder):
    """Questions from `questions[(answer, context)]`, else one: "what about {answer}?"."""

    def __init__(self, questions: Mapping[tuple[str, str], list[str]] | None = None) -> None:
        super().__init__()
        self.questions = dict(questions or {})

    def generate(self, answers: Sequence[str], contexts: Sequence[str]) -> list[list[str]]:
        self.calls.append(len(answers))
        return [list(self.questions.get((a, c), [f"what about {a}?"])) for a, c in zip(answers, contexts)]


class ScriptedQA(_Recorder):
    """Answers from `answers[(question, context)]` (None = no answer); else, for
    "what about X?", X as written in the context when the context contains it."""

    def __init__(self, answers: Mapping[tuple[str, str], str | None] | None = None) -> None:
        super().__init__()
        self.answers = dict(answers or {})

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[Answer]:
        self.calls.append(len(questions))
        out = []
        for q, c in zip(questions, contexts):
            if (q, c) in self.answers:
                text = self.answers[(q, c)]
                out.append(NO_ANSWER if text is None else Answer(text))
                continue
            m = _WHAT.match(q)
            asked = m.group(1) if m else None
            pos = c.lower().find(asked.lower()) if asked is not None else -1
            out.append(Answer(c[pos : pos + len(asked)]) if asked is not None and pos >= 0 else NO_ANSWER)
        return out


class ScriptedNLI(_Recorder):
    """Labels from `labels[(premise, hypothesis)]`, else `rule(premise, hypothesis)`; the default
    rule says entailment when the normalised hypothesis occurs in the premise, else neutral."""

    def __init__(
        self,
        labels: Mapping[tuple[str, str], str] | None = None,
        rule: Callable[[str, str], str] | None = None,
    ) -> None:
        super().__init__()
        self.labels = dict(labels or {})
        self.rule = rule or (
            lambda p, h: ENTAILMENT if normalize_answer(h) in normalize_answer(p) else NEUTRAL
        )

    def classify(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        self.calls.append(len(premises))
        return [self.labels.get((p, h)) or self.rule(p, h) for p, h in zip(premises, hypotheses)]


def scripted_scorer(config: Q2Config | None = None, **components: Any) -> Q2Scorer:
    """A `Q2Scorer` whose components are all scripted (override any by keyword)."""
    from q2_metric.scorer import Q2Scorer

    parts: dict[str, Any] = {
        "parser": ScriptedParser(),
        "qg": ScriptedQG(),
        "qa": ScriptedQA(),
        "nli": ScriptedNLI(),
    }
    parts.update(components)
    return Q2Scorer(config, **parts)


class ScriptedCoref(_Recorder):
    """Coreference clusters from `clusters[text]` (character spans), else, for each group of
    `groups` (phrases of one entity), every whole-word, case-insensitive occurrence of its phrases
    (a cluster when there are two or more). Records each text it is asked about in `seen`."""

    def __init__(
        self,
        groups: Sequence[Sequence[str]] = (),
        clusters: Mapping[str, list[list[tuple[int, int]]]] | None = None,
    ) -> None:
        super().__init__()
        self.groups = [list(g) for g in groups]
        self.scripted = dict(clusters or {})
        self.seen: list[str] = []

    def clusters(self, texts: Sequence[str]) -> list[list[list[tuple[int, int]]]]:
        self.calls.append(len(texts))
        self.seen.extend(texts)
        out = []
        for text in texts:
            if text in self.scripted:
                out.append(self.scripted[text])
                continue
            found = []
            for group in self.groups:
                spans = sorted(
                    {
                        (m.start(), m.end())
                        for phrase in group
                        for m in re.finditer(rf"\b{re.escape(phrase)}\b", text, re.IGNORECASE)
                    }
                )
                if len(spans) > 1:
                    found.append(spans)
            out.append(found)
        return out
