"""The narrow interfaces the engine talks to: parsing, QG, QA and NLI.

A backend is any object with these methods; each method takes the *whole* list of inputs of one
pipeline stage and batches internally, so the engine makes one call per stage per `score` call.
The transformers/spaCy backends live in `q2_metric.models`; tests script these protocols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
NLI_LABELS = (ENTAILMENT, NEUTRAL, CONTRADICTION)


@dataclass(frozen=True)
class ParsedText:
    """What the rules need from a linguistic parse of one text."""

    entities: list[str] = field(default_factory=list)
    noun_chunks: list[str] = field(default_factory=list)
    # (token text, dependency label) for every token, in order.
    tokens: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Answer:
    """An extractive answer; `text` is "" and `has_answer` False for "no answer"."""

    text: str
    has_answer: bool = True

    def __post_init__(self) -> None:
        if not self.has_answer and self.text:
            raise ValueError("a no-answer result carries no text")


NO_ANSWER = Answer("", has_answer=False)


@runtime_checkable
class Parser(Protocol):
    def parse(self, texts: Sequence[str]) -> list[ParsedText]:
        """Parse every text (named entities, noun chunks, dependency labels)."""


@runtime_checkable
class QuestionGenerator(Protocol):
    def generate(self, answers: Sequence[str], contexts: Sequence[str]) -> list[list[str]]:
        """For each (answer, context) pair, questions whose answer is `answer`, best first."""


@runtime_checkable
class QuestionAnswerer(Protocol):
    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[Answer]:
        """Extractive answer of each question from its context, or `NO_ANSWER`."""


@runtime_checkable
class NLIClassifier(Protocol):
    def classify(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        """One of `entailment`, `neutral`, `contradiction` for each pair."""


def describe(component: object) -> str:
    """How a component names itself in a signature (`describe()` method, else its class)."""
    fn = getattr(component, "describe", None)
    return fn() if callable(fn) else type(component).__name__
