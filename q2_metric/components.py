"""The narrow interfaces the engine talks to: parsing, QG, QA and NLI.

A backend is any object with these methods; each method takes the *whole* list of inputs of one
pipeline stage and batches internally, so the engine makes one call per stage per `score` call.
The transformers/spaCy backends live in `q2_metric.models`; tests script these protocols.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
NLI_LABELS = (ENTAILMENT, NEUTRAL, CONTRADICTION)


@dataclass(frozen=True)
class ParsedText:
    """What the rules need from a linguistic parse of one text."""

    entities: list[str] = field(default_factory=list)
    noun_chunks: list[str] = field(default_factory=list)
    # (token text, dependency label) for every token, in order.
    tokens: list[tuple[str, str]] = field(default_factory=list)
    # character offsets [start, end) of each entity and noun chunk in the parsed text, when the
    # parser knows them (spaCy's `start_char`/`end_char`); None: the rules locate them by search.
    entity_offsets: list[tuple[int, int]] | None = None
    noun_chunk_offsets: list[tuple[int, int]] | None = None


@dataclass(frozen=True)
class Candidate:
    """An answer candidate found in a text: `text == source[start:end]` exactly, in every script;
    `kind`: "entity", "noun_chunk", "number" or "date"."""

    text: str
    start: int
    end: int
    kind: str


@runtime_checkable
class CandidateExtractor(Protocol):
    """Answer candidates of whole texts (a spaCy pipeline, a token-classification model or the
    rules for numbers and dates); `name` is the spec that ran (`spacy:NAME`,
    `token-classification:MODEL`, `rules`)."""

    name: str

    def extract(self, texts: Sequence[str]) -> list[list[Candidate]]:
        """Each text's candidates, each occurrence with its exact offsets in that text."""


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
    """A parser may also expose `dependencies(texts, words=None)`: each text's (token, dependency
    label) pairs, the same as `parse(texts)[i].tokens` but cheaper (the personal filter reads only
    these); it may label "" the tokens of a text with none of `words` among them, unparsed."""

    def parse(self, texts: Sequence[str]) -> list[ParsedText]:
        """Parse every text (named entities, noun chunks, dependency labels)."""


def dependency_tokens(
    parser: Parser, texts: Sequence[str], words: Collection[str] | None = None
) -> list[list[tuple[str, str]]]:
    """Each text's (token, dependency label) pairs: the parser's `dependencies` when it has one,
    else the tokens of its full parse. With `words` (lower case), the labels of a text none of
    whose tokens is one of them may be "" (the parser may skip its parse).

    >>> class Words:
    ...     def parse(self, texts):
    ...         return [ParsedText(tokens=[(w, "dep") for w in t.split()]) for t in texts]
    >>> dependency_tokens(Words(), ["do you"])
    [[('do', 'dep'), ('you', 'dep')]]
    """
    fast = getattr(parser, "dependencies", None)
    return list(fast(texts, words)) if fast is not None else [p.tokens for p in parser.parse(texts)]


@runtime_checkable
class QuestionGenerator(Protocol):
    def generate(self, answers: Sequence[str], contexts: Sequence[str]) -> list[list[str]]:
        """For each (answer, context) pair, questions whose answer is `answer`, best first."""


@runtime_checkable
class QuestionAnswerer(Protocol):
    """Extractive QA. An answer may carry the tokenizer's normalisation and, in `reference`
    decoding, special or question tokens; its `cls_text` attribute (default "[CLS]") is the text of
    the model's CLS token, which span NLI refuses to compare."""

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[Answer]:
        """Extractive answer of each question from its context, or `NO_ANSWER`."""


@runtime_checkable
class NLIClassifier(Protocol):
    """NLI. A backend whose window is limited may expose `windows(premise, hypothesis) -> int`,
    the number of premise windows a pair is split into (see `combine_window_labels`), and
    `reading(premise, hypothesis) -> NLIReading`: those windows, the hypothesis's parts and whether
    the pair was cut to the window."""

    def classify(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        """One of `entailment`, `neutral`, `contradiction` for each pair."""


def combine_window_labels(labels: Sequence[str]) -> str:
    """One label for a premise read in windows: entailment if any window entails, else
    contradiction if any contradicts, else neutral.

    >>> combine_window_labels(["neutral", "contradiction", "entailment"])
    'entailment'
    """
    for label in (ENTAILMENT, CONTRADICTION):
        if label in labels:
            return label
    return NEUTRAL


def combine_part_labels(labels: Sequence[str]) -> str:
    """One label for a hypothesis read in parts (each part's label over the premise's windows):
    contradiction if any part is contradicted, else entailment if every part is entailed, else
    neutral.

    >>> combine_part_labels(["entailment", "entailment"]), combine_part_labels(["entailment", "neutral"])
    ('entailment', 'neutral')
    """
    if CONTRADICTION in labels:
        return CONTRADICTION
    return ENTAILMENT if labels and all(label == ENTAILMENT for label in labels) else NEUTRAL


class NLIReading(NamedTuple):
    """How an NLI backend read one pair: premise windows (per hypothesis part, the most), the
    hypothesis's parts, and whether some of the pair was cut away to fit the model's window."""

    windows: int = 1
    parts: int = 1
    cut: bool = False


def cls_text(qa: object) -> str:
    """The CLS token text of a QA component (what `reference` decoding returns for no answer)."""
    return getattr(qa, "cls_text", "[CLS]")


def describe(component: object) -> str:
    """How a component names itself in a signature (`describe()` method, else its class)."""
    fn = getattr(component, "describe", None)
    return fn() if callable(fn) else type(component).__name__
