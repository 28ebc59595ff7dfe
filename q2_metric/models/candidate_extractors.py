"""Answer-candidate extractors for languages without the paper's spaCy pipeline, chosen by a spec
list (a model set's `candidates`): the first available one runs, and its `name` (the spec) says
which ran.

- `spacy:NAME`: a spaCy pipeline, available when it is installed (`spacy.util.is_package`, or a
  local folder): its named entities, then its noun chunks where the language has them;
- `token-classification:MODEL`: a transformers token-classification model with BIO labels
  (e.g. `Davlan/xlm-roberta-base-ner-hrl`; `tiny:ner-multilingual`, the tiny random one), available
  when it is a local folder, already in the Hugging Face cache, or a tiny model id: never
  downloaded here (download it first, e.g. `hf download MODEL`); its entities by
  `candidate_rules.bio_spans` from the fast tokenizer's offsets;
- `rules`: numbers and dates by rule (`candidate_rules.numbers_and_dates`), always available.

The spaCy and token-classification extractors add the numbers and dates found by rule that
overlap none of their own candidates (`numbers_and_dates=False` leaves them out). Every
candidate slices its text exactly (`Candidate.text == text[start:end]`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from q2_metric.components import Candidate, CandidateExtractor, ParsedText
from q2_metric.errors import ModelNotAvailable, Q2OptionError
from q2_metric.steps.candidate_rules import (
    ENTITY,
    NOUN_CHUNK,
    bio_spans,
    numbers_and_dates,
    ordered_candidates,
    trimmed,
)

KINDS = ("spacy", "token-classification", "rules")
RULES = "rules"
# Token classification: windows of the model's maximum (at most 512 tokens) overlapping by
# STRIDE tokens; BATCH windows per model call.
STRIDE, BATCH = 64, 32


def parse_spec(spec: str) -> tuple[str, str]:
    """(kind, name) of a spec; `Q2OptionError` in one sentence for one of no known kind.

    >>> parse_spec("token-classification:Davlan/xlm-roberta-base-ner-hrl")
    ('token-classification', 'Davlan/xlm-roberta-base-ner-hrl')
    >>> parse_spec("rules")
    ('rules', '')
    """
    kind, _, name = str(spec).partition(":")
    if (kind == RULES and not name) or (kind in KINDS[:2] and name):
        return kind, name
    raise Q2OptionError(
        f"The candidate extractor '{spec}' is not one of spacy:NAME, token-classification:MODEL or rules."
    )


def spec_available(spec: str) -> bool:
    """Whether the extractor of `spec` can run here without a download (module docstring)."""
    kind, name = parse_spec(spec)
    if kind == RULES:
        return True
    if kind == "spacy":
        import spacy

        return bool(spacy.util.is_package(name)) or (Path(name) / "config.cfg").is_file()
    from q2_metric.models.loading import _is_cached
    from q2_metric.models.tiny import is_tiny_id

    if is_tiny_id(name) or (Path(name) / "config.json").is_file():
        return True
    try:
        return _is_cached(name)
    except ValueError:  # not a Hub id (a missing folder's path)
        return False


class RuleExtractor:
    """Numbers and dates by rule (`candidate_rules.numbers_and_dates`)."""

    name = RULES

    def extract(self, texts: Sequence[str]) -> list[list[Candidate]]:
        return [numbers_and_dates(t) for t in texts]


class SpacyExtractor:
    """A spaCy pipeline's named entities, then its noun chunks (where the language defines them
    and the pipeline parses), then numbers and dates by rule."""

    def __init__(self, pipeline: str, numbers_and_dates: bool = True) -> None:
        from q2_metric.models.spacy_parser import load_spacy

        self.name = f"spacy:{pipeline}"
        self.nlp = load_spacy(pipeline)
        self.rules = numbers_and_dates

    def extract(self, texts: Sequence[str]) -> list[list[Candidate]]:
        out = []
        for text, doc in zip(texts, self.nlp.pipe(list(texts))):
            ents = [trimmed(text, e.start_char, e.end_char, ENTITY) for e in doc.ents]
            try:
                spans = list(doc.noun_chunks)
            except (NotImplementedError, ValueError):  # no syntax iterator, or no parse
                spans = []
            chunks = [trimmed(text, s.start_char, s.end_char, NOUN_CHUNK) for s in spans]
            out.append(
                ordered_candidates(
                    [c for c in ents if c is not None],
                    [c for c in chunks if c is not None],
                    numbers_and_dates(text) if self.rules else (),
                )
            )
        return out


class TokenClassificationExtractor:
    """A token-classification model's entities (BIO labels from its `id2label`), read in windows
    through its fast tokenizer's offsets, then numbers and dates by rule."""

    def __init__(
        self,
        model: str,
        device: str = "cpu",
        numbers_and_dates: bool = True,
        say: Callable[[str], None] = lambda msg: None,
        reads: Mapping[str, Any] | None = None,
    ) -> None:
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        from q2_metric.models.loading import load_pretrained, resolve_device
        from q2_metric.models.tiny import resolve_tiny_id

        self.name = f"token-classification:{model}"
        folder = resolve_tiny_id(model, say=say, reads=reads)
        self.device = resolve_device(device)
        self.tokenizer = load_pretrained(AutoTokenizer, folder)
        if not getattr(self.tokenizer, "is_fast", False):
            raise ModelNotAvailable(
                f"The token-classification model '{model}' has no fast tokenizer (tokenizer.json), "
                "which exact candidate offsets need."
            )
        self.model = load_pretrained(AutoModelForTokenClassification, folder).to(self.device).eval()
        self.labels = {int(i): str(label) for i, label in self.model.config.id2label.items()}
        limits = [
            int(x)
            for x in (
                getattr(self.model.config, "max_position_embeddings", 0),
                self.tokenizer.model_max_length,
            )
            if x and x < 10**6
        ]
        # RoBERTa-style position ids start after the padding index: two fewer usable positions
        self.window = min([512, *limits]) - 2
        self.rules = numbers_and_dates

    def extract(self, texts: Sequence[str]) -> list[list[Candidate]]:
        import torch

        if not texts:
            return []
        enc = self.tokenizer(
            list(texts),
            truncation=True,
            max_length=self.window,
            stride=min(STRIDE, self.window // 4),
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
        )
        names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]
        found: list[dict[tuple[int, int], Candidate]] = [{} for _ in texts]
        for at in range(0, len(enc["input_ids"]), BATCH):
            idx = range(at, min(at + BATCH, len(enc["input_ids"])))
            batch = self.tokenizer.pad([{k: enc[k][i] for k in names} for i in idx], return_tensors="pt")
            with torch.inference_mode():
                predicted = self.model(**{k: v.to(self.device) for k, v in batch.items()}).logits.argmax(-1)
            for row, i in enumerate(idx):
                example = enc["overflow_to_sample_mapping"][i]
                n = len(enc["input_ids"][i])
                labels = [self.labels[int(j)] for j in predicted[row][:n].tolist()]
                offsets = [tuple(o) for o in enc["offset_mapping"][i]]
                for c in bio_spans(texts[example], offsets, labels):  # windows overlap: each span once
                    found[example].setdefault((c.start, c.end), c)
        return [
            ordered_candidates(
                sorted(spans.values(), key=lambda c: (c.start, c.end)),
                (),
                numbers_and_dates(text) if self.rules else (),
            )
            for text, spans in zip(texts, found)
        ]


class ExtractorParser:
    """A `CandidateExtractor` behind the engine's `Parser` interface, so the existing candidates
    stage (`steps.candidates.find_candidates`) runs it unchanged: every candidate as an "entity"
    with its exact offsets, in the extractor's order, no noun chunks and no dependency labels (the
    personal filter, an English rule, then finds no token to drop a question for)."""

    def __init__(self, extractor: CandidateExtractor) -> None:
        self.extractor = extractor
        self.name = extractor.name

    def parse(self, texts: Sequence[str]) -> list[ParsedText]:
        return [
            ParsedText(entities=[c.text for c in found], entity_offsets=[(c.start, c.end) for c in found])
            for found in self.extractor.extract(texts)
        ]

    def describe(self) -> str:
        return self.name


def load_extractor(
    spec: str,
    device: str = "cpu",
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> RuleExtractor | SpacyExtractor | TokenClassificationExtractor:
    """The extractor of one spec (loaded; whether it is available is not asked)."""
    kind, name = parse_spec(spec)
    if kind == RULES:
        return RuleExtractor()
    if kind == "spacy":
        return SpacyExtractor(name)
    return TokenClassificationExtractor(name, device=device, say=say, reads=reads)


def resolve_extractor(
    specs: Sequence[str],
    device: str = "cpu",
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> RuleExtractor | SpacyExtractor | TokenClassificationExtractor:
    """The first available extractor of `specs`, loaded; its `name` is the spec that runs. Every
    spec is checked first (one of no known kind is refused before any loading); none available
    is `ModelNotAvailable` in one sentence.

    >>> resolve_extractor(["spacy:xx_no_such_pipeline", "rules"]).name
    'rules'
    """
    for spec in specs:
        parse_spec(spec)
    for spec in specs:
        if spec_available(spec):
            return load_extractor(spec, device=device, say=say, reads=reads)
    raise ModelNotAvailable(
        f"None of the answer-candidate extractors {', '.join(specs) or '(none given)'} is available: "
        "install the spaCy pipeline, download the model, or add 'rules'."
    )
