"""transformers sequence-classification backend of `NLIClassifier`.

A pair longer than the model's window (the fallback's whole knowledge text can be) is not cut:
the premise is split into windows that fit beside the hypothesis, each window is classified, and
the labels are combined by `combine_window_labels` (entailment if any window entails, else
contradiction if any contradicts, else neutral).

A model written by `q2 convert-nli` (the paper's AllenNLP archive) instead receives the ids AllenNLP
1.0 fed it (`allennlp_input.allennlp_pair_ids`: no windows, a long pair cut to its first 512 ids).
When the hypothesis leaves the premise no room (under 16 tokens) the pair is cut to the window too.
Either cut is reported (`reading(...).cut`).

With `long_inputs="windows"` (a departure) every model reads a long premise in windows whatever
the hypothesis's length: a hypothesis longer than half the window is read in parts of its sentences,
each beside every premise window; a part's label combines its windows (`combine_window_labels`),
the pair's combines its parts (`combine_part_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from q2_metric.components import NLIReading, combine_part_labels, combine_window_labels
from q2_metric.config import Q2Config
from q2_metric.errors import ModelCheckError
from q2_metric.models.batching import configured, device_limits, map_batched
from q2_metric.models.checks import nli_labels
from q2_metric.models.loading import (
    load_pretrained,
    model_revision,
    resolve_device,
    resolve_dtype,
    uses_segment_ids,
)
from q2_metric.models.paper.allennlp_input import (
    ALLENNLP,
    allennlp_pair_ids,
    is_allennlp_converted,
    template_parts,
)
from q2_metric.models.speed.cpu_matmul import OneDNNLinears
from q2_metric.models.speed.kernels import model_kernels
from q2_metric.models.speed.precision import check_precision, quantize_encoder


def nli_label_map(id2label: Mapping[int, str]) -> dict[int, str]:
    """Map a model's label ids to entailment/neutral/contradiction by their names (the rule of
    the pre-flight check, `checks.nli_labels`).

    >>> nli_label_map({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"})
    {0: 'entailment', 1: 'neutral', 2: 'contradiction'}
    """
    mapping = nli_labels(id2label)
    if mapping is None:
        raise ModelCheckError(
            f"The NLI model's labels {dict(id2label)} do not name entailment, neutral and contradiction; "
            "set id2label in the model config."
        )
    return mapping


def hypothesis_parts(text: str, ids: list[int], budget: int, tok: Any) -> list[tuple[str, list[int]]]:
    """A long hypothesis as parts of whole sentences (`steps.questions.sentence_bounds`) of at most
    `budget` tokens each, a sentence longer than that in slices of `budget` tokens: each part's
    text and ids (`tok`: the model's tokenizer; `ids`: the whole hypothesis's)."""
    from q2_metric.steps.questions import sentence_bounds

    def encode(piece: str) -> list[int]:
        return list(tok(piece, add_special_tokens=False)["input_ids"])

    parts: list[tuple[str, list[int]]] = []
    start, end = -1, -1
    current: list[int] = []
    for s, e in sentence_bounds(text):
        sentence = encode(text[s:e])
        if len(sentence) > budget:  # a sentence longer than a part: in slices
            if current:
                parts.append((text[start:end], current))
                current = []
            slices = [sentence[i : i + budget] for i in range(0, len(sentence), budget)]
            parts += [(tok.decode(piece), piece) for piece in slices]
            continue
        joined = encode(text[start:e]) if current else sentence
        if current and len(joined) > budget:
            parts.append((text[start:end], current))
            current, joined = [], sentence
        if not current:
            start = s
        end, current = e, joined
    if current:
        parts.append((text[start:end], current))
    return parts or [(text, ids)]


class HFNLIClassifier:
    """Batched premise/hypothesis classification; label names are read from the model config."""

    tokenization = "hf"  # transformers' own pair encoding; "allennlp10" for a `q2 convert-nli` model

    def __init__(self, config: Q2Config) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_id = config.nli_model
        self.config = config
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.nli_model)
        self.model = (
            load_pretrained(
                AutoModelForSequenceClassification,
                config.nli_model,
                dtype=resolve_dtype(config.dtype, self.device),
            )
            .to(self.device)
            .eval()
        )
        self.labels = nli_label_map(self.model.config.id2label)
        if config.quantize == "int8":  # a fast mode (in the signature): the encoder's Linear layers in int8
            check_precision(config.dtype, config.quantize, self.device)
            quantize_encoder(self.model)
        self.linears = OneDNNLinears(self.model)  # `cpu_matmul` (what float32 Linear layers are left)
        self.max_length = min(self.tokenizer.model_max_length, 512)
        self.tokens_processed = 0
        self.device_limits = device_limits("nli", self.device)  # the options' limits: per call
        if is_allennlp_converted(self.model.config):
            self.tokenization = ALLENNLP

            tok = self.tokenizer
            a, b = (tok(t, add_special_tokens=False)["input_ids"] for t in ("a", "b"))
            self._pair = template_parts(tok("a", "b")["input_ids"], [a, b])
            self._single = template_parts(tok("a")["input_ids"], [a])

    @property
    def batch_size(self) -> int:
        """Most inputs per batch in this call (`nli_batch_size`, else the device's)."""
        return configured(self.config, "nli", self.device_limits)[0]

    @property
    def max_tokens(self) -> int:
        """Padded tokens per batch in this call (`nli_max_tokens`, else the device's)."""
        return configured(self.config, "nli", self.device_limits)[1]

    def _allennlp_ids(self, premise: str, hypothesis: str) -> list[int]:
        tok = self.tokenizer
        return allennlp_pair_ids(
            tok(premise, add_special_tokens=False)["input_ids"],
            tok(hypothesis, add_special_tokens=False)["input_ids"],
            self._pair,
            self._single,
        )

    def _premise_windows(self, p_ids: list[int], room: int) -> list[str]:
        """The premise's windows of `room` tokens, overlapping by a quarter (decoded to text)."""
        step = max(1, room - room // 4)
        starts = range(0, max(1, len(p_ids) - room + step), step)
        return [self.tokenizer.decode(p_ids[s : s + room]) for s in starts]

    def _plan(self, premise: str, hypothesis: str) -> tuple[list[list[tuple[str, str]]], bool]:
        """Per hypothesis part, its (premise window, part) pairs, and whether the pair is cut.

        `long_inputs="cut"` (the default): one part, the whole hypothesis; the pair itself when it
        fits, else premise windows (overlapping by a quarter) beside it, except where the
        hypothesis leaves under 16 tokens of room: then the one pair, cut to the window. AllenNLP's
        input is never split (it reads the first 512 ids). `"windows"`: every model reads windows,
        and a hypothesis longer than half the window is read in parts (`hypothesis_parts`)."""
        tok = self.tokenizer
        special = tok.num_special_tokens_to_add(pair=True)
        p_ids = tok(premise, add_special_tokens=False)["input_ids"]
        h_ids = tok(hypothesis, add_special_tokens=False)["input_ids"]
        fits = len(p_ids) + len(h_ids) + special <= self.max_length
        if fits:
            return [[(premise, hypothesis)]], False
        if self.config.long_inputs != "windows":
            room = self.max_length - special - len(h_ids)
            if self.tokenization == ALLENNLP or room < 16:
                return [[(premise, hypothesis)]], True
            return [[(w, hypothesis) for w in self._premise_windows(p_ids, room)]], False
        half = (self.max_length - special) // 2
        parts = hypothesis_parts(hypothesis, h_ids, half, tok) if len(h_ids) > half else [(hypothesis, h_ids)]
        plan = []
        for text, ids in parts:
            room = self.max_length - special - len(ids)
            if len(p_ids) <= room:
                plan.append([(premise, text)])
            else:
                plan.append([(w, text) for w in self._premise_windows(p_ids, room)])
        return plan, False

    def _split(self, premise: str, hypothesis: str) -> list[tuple[str, str]]:
        """Every (premise window, hypothesis part) pair the pair is read as."""
        return [pair for part in self._plan(premise, hypothesis)[0] for pair in part]

    def reading(self, premise: str, hypothesis: str) -> NLIReading:
        """How the pair is read: premise windows (the most over the hypothesis's parts), parts, and
        whether it is cut to the model's window."""
        plan, cut = self._plan(premise, hypothesis)
        return NLIReading(windows=max(len(part) for part in plan), parts=len(plan), cut=cut)

    def windows(self, premise: str, hypothesis: str) -> int:
        """How many premise windows the pair is read in (1 when it fits)."""
        return self.reading(premise, hypothesis).windows

    def _run(self, pairs: list[tuple[str, str]]) -> list[str]:
        """The label of each (premise, hypothesis) pair, in one padded batch."""
        return self._collect(self._launch(pairs))

    @torch.inference_mode()
    def _launch(self, pairs: list[tuple[str, str]]) -> torch.Tensor:
        """Queue one padded batch; its predicted label ids (on the device)."""
        if self.tokenization == ALLENNLP:
            return self._launch_ids([self._allennlp_ids(p, h) for p, h in pairs])
        enc = self.tokenizer(
            [p for p, _ in pairs],
            [h for _, h in pairs],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_token_type_ids=uses_segment_ids(self.model),
        )
        self.tokens_processed += int(enc["input_ids"].numel())
        with model_kernels(self.linears, self.config.cpu_matmul, self.device, self.model):
            return self.model(**enc.to(self.device)).logits.argmax(dim=-1)

    @torch.inference_mode()
    def _launch_ids(self, ids: list[list[int]]) -> torch.Tensor:
        width = max(len(x) for x in ids)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
        self.tokens_processed += int(input_ids.numel())
        with model_kernels(self.linears, self.config.cpu_matmul, self.device, self.model):
            return self.model(
                input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device)
            ).logits.argmax(dim=-1)

    def _collect(self, predicted: torch.Tensor) -> list[str]:
        return [self.labels[int(i)] for i in predicted.tolist()]

    def _lengths(self, flat: list[tuple[str, str]]) -> list[int]:
        if self.tokenization == ALLENNLP:
            return [len(self._allennlp_ids(p, h)) for p, h in flat]
        return [
            len(ids)
            for ids in self.tokenizer(
                [p for p, _ in flat], [h for _, h in flat], truncation=True, max_length=self.max_length
            )["input_ids"]
        ]

    def classify(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        plans = [self._plan(p, h)[0] for p, h in zip(premises, hypotheses)]
        flat = [w for plan in plans for part in plan for w in part]
        lengths = self._lengths(flat)
        labels = map_batched(flat, lengths, self.batch_size, self.max_tokens, self._launch, self._collect)
        out, i = [], 0
        for plan in plans:
            parts = []
            for windows in plan:
                parts.append(
                    labels[i] if len(windows) == 1 else combine_window_labels(labels[i : i + len(windows)])
                )
                i += len(windows)
            out.append(parts[0] if len(parts) == 1 else combine_part_labels(parts))
        return out

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
