"""spaCy backend of the `Parser` interface."""

from __future__ import annotations

from collections.abc import Sequence
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

    def describe(self) -> str:
        return f"spacy:{self.nlp.meta.get('lang', 'xx')}_{self.nlp.meta.get('name')}@{self.nlp.meta.get('version')}"
