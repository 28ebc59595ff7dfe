"""spaCy backend of the `Parser` interface."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from q2_metric.components import ParsedText
from q2_metric.config import Q2Config
from q2_metric.errors import ModelNotAvailable
from q2_metric.models.checks import default_spacy_model, option_name


def load_spacy(name: str | None = None) -> Any:  # a spaCy Language
    """Load a spaCy pipeline (default: `default_spacy_model()`), one sentence when it is missing."""
    import spacy

    name = name or default_spacy_model()
    try:
        return spacy.load(name)
    except OSError as err:
        raise ModelNotAvailable(
            f"The spaCy model '{name}' is not installed: install its package "
            f"or pass an installed model name or directory as {option_name('spacy_model')}."
        ) from err


# Components that set no dependency label and that nothing the parser reads depends on; left out
# of the questions' parse only when they end the pipeline (so no later component reads their work).
# en_core_web_sm's NER has its own tok2vec; its attribute ruler, which does set DEP (whitespace
# tokens), stays.
DEPENDENCY_FREE = frozenset({"ner", "lemmatizer"})
# spaCy's factories that annotate tokens but never merge, split or replace them: a pipeline of
# these alone has the tokenizer's tokens (the merge_* and retokenizing components are left out).
TOKEN_KEEPING = frozenset(
    {
        "tok2vec",
        "transformer",
        "tagger",
        "morphologizer",
        "trainable_lemmatizer",
        "lemmatizer",
        "parser",
        "beam_parser",
        "senter",
        "sentencizer",
        "attribute_ruler",
        "ner",
        "beam_ner",
        "entity_ruler",
    }
)


def trailing_skippable(pipe_names: Sequence[str]) -> list[str]:
    """The trailing components of a pipeline that the dependency labels do not need.

    >>> trailing_skippable(["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner"])
    ['lemmatizer', 'ner']
    >>> trailing_skippable(["tok2vec", "parser", "ner", "merge_entities"])
    []
    """
    names = list(pipe_names)
    cut = len(names)
    while cut and names[cut - 1] in DEPENDENCY_FREE:
        cut -= 1
    return names[cut:]


class SpacyParser:
    """Named entities, noun chunks and dependency labels from one spaCy pipeline, loaded once."""

    def __init__(self, config: Q2Config) -> None:
        self.config = config
        self.model_name = config.spacy_model or default_spacy_model()
        self.nlp = load_spacy(self.model_name)

    def parse(self, texts: Sequence[str]) -> list[ParsedText]:
        return [
            ParsedText(
                entities=[ent.text for ent in doc.ents],
                noun_chunks=[chunk.text for chunk in doc.noun_chunks],
                tokens=[(tok.text, tok.dep_) for tok in doc],
                entity_offsets=[(ent.start_char, ent.end_char) for ent in doc.ents],
                noun_chunk_offsets=[(chunk.start_char, chunk.end_char) for chunk in doc.noun_chunks],
            )
            for doc in self.nlp.pipe(texts, batch_size=self.config.spacy_batch_size)
        ]

    def dependencies(
        self, texts: Sequence[str], words: Collection[str] | None = None
    ) -> list[list[tuple[str, str]]]:
        """Each text's (token, dependency label) pairs: `parse(texts)[i].tokens`, with the
        pipeline's trailing named-entity recognizer and lemmatizer left out (they read nothing the
        parser wrote back and write no dependency label), and no entities or noun chunks built.

        `words` (lower case): a text none of whose tokens is one of them, by the tokenizer alone,
        is not parsed, and its tokens come with the label "". This holds only where no component
        of the pipeline can change the tokenizer's tokens (`keeps_tokens`); otherwise every text is
        parsed.
        """
        skip = trailing_skippable(self.nlp.pipe_names)
        docs = [self.nlp.make_doc(text) for text in texts]
        wanted = set(words) if words is not None and self.keeps_tokens else None
        keep = [wanted is None or any(t.text.lower() in wanted for t in d) for d in docs]
        # a Doc passed to `pipe` skips the tokenizer; `pipe` yields the docs in order, lazily
        parsed = self.nlp.pipe(
            [d for d, k in zip(docs, keep) if k], batch_size=self.config.spacy_batch_size, disable=skip
        )
        # an unparsed doc's labels are ""
        return [[(t.text, t.dep_) for t in (next(parsed) if k else d)] for d, k in zip(docs, keep)]

    @property
    def keeps_tokens(self) -> bool:
        """Whether every component of the pipeline leaves the tokenizer's tokens as they are."""
        return all(self.nlp.get_pipe_meta(name).factory in TOKEN_KEEPING for name in self.nlp.pipe_names)

    def describe(self) -> str:
        return f"spacy:{self.nlp.meta.get('lang', 'xx')}_{self.nlp.meta.get('name')}@{self.nlp.meta.get('version')}"
