"""transformers sequence-classification backend of `NLIClassifier`."""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL
from q2_metric.config import Q2Config
from q2_metric.models.batching import map_batched
from q2_metric.models.loading import load_pretrained, model_revision, resolve_device, resolve_dtype


def nli_label_map(id2label: Mapping[int, str]) -> dict[int, str]:
    """Map a model's label ids to entailment/neutral/contradiction by their names.

    >>> nli_label_map({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"})
    {0: 'entailment', 1: 'neutral', 2: 'contradiction'}
    """
    mapping = {}
    for idx, name in id2label.items():
        low = name.lower()
        for label, stem in ((ENTAILMENT, "entail"), (NEUTRAL, "neutral"), (CONTRADICTION, "contrad")):
            if low.startswith(stem):
                mapping[int(idx)] = label
    if sorted(mapping.values()) != sorted((ENTAILMENT, NEUTRAL, CONTRADICTION)):
        raise ValueError(
            f"NLI model labels {dict(id2label)} do not name entailment, neutral and contradiction; "
            "set id2label in the model config"
        )
    return mapping


class HFNLIClassifier:
    """Batched premise/hypothesis classification; label names are read from the model config."""

    def __init__(self, config: Q2Config) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_id = config.nli_model
        self.config = config
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.nli_model)
        self.model = load_pretrained(
            AutoModelForSequenceClassification, config.nli_model,
            dtype=resolve_dtype(config.dtype, self.device),
        ).to(self.device).eval()
        self.labels = nli_label_map(self.model.config.id2label)

    @torch.inference_mode()
    def _run(self, pairs: list[tuple[str, str]]) -> list[str]:
        enc = self.tokenizer([p for p, _ in pairs], [h for _, h in pairs], return_tensors="pt",
                             padding=True, truncation=True,
                             max_length=min(self.tokenizer.model_max_length, 512))
        logits = self.model(**enc.to(self.device)).logits
        return [self.labels[int(i)] for i in logits.argmax(dim=-1).tolist()]

    def classify(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        pairs = list(zip(premises, hypotheses))
        lengths = [len(p) + len(h) for p, h in pairs]
        return map_batched(pairs, lengths, self.config.nli_batch_size, self._run)

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
