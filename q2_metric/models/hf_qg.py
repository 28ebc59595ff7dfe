"""transformers seq2seq backend of the `QuestionGenerator` interface (T5 in the paper)."""

from __future__ import annotations

import contextlib
from typing import Sequence

import torch

from q2_metric.config import Q2Config
from q2_metric.models.batching import map_batched
from q2_metric.models.cpu_matmul import OneDNNLinears, linear_kernels
from q2_metric.models.loading import load_pretrained, model_revision, resolve_device, resolve_dtype
from q2_metric.models.reference_tokenization import HF, REFERENCE, load_reference_tokenizer
from q2_metric.models.t5_cross_bias import attach_cross_attention_bias
from q2_metric.models.t5_shared_cross import attach_shared_cross_attention

QG_PROMPT = "answer: {answer}  context: {context} </s>"


def qg_input(answer: str, context: str) -> str:
    """The released code's input string (two spaces before `context:`, a literal `</s>`)."""
    return QG_PROMPT.format(answer=answer, context=context)


def clean_question(text: str) -> str:
    """Remove the `question: ` prefix the model writes: the released code removes the first
    `question: ` of the decoded text, wherever it is."""
    return text.replace("question: ", "", 1)


class HFQuestionGenerator:
    """Batched, padded beam search (or greedy decoding) over (answer, context) pairs.

    A T5 with a SentencePiece vocabulary (the paper's) is fed the ids transformers 3.2's slow
    tokenizer gave the released code and its questions are decoded as 3.2 decoded them
    (`reference_tokenization`); a checkpoint saved by transformers 3.x with the cross-attention
    relative bias runs with it (`t5_cross_bias`). `reference=False` (for comparisons) and any
    other model use transformers' own tokenizer.
    """

    def __init__(self, config: Q2Config, reference: bool = True) -> None:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.model_id = config.qg_model
        self.config = config
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.qg_model)
        self.reference = load_reference_tokenizer(config.qg_model) if reference else None
        self.model = load_pretrained(
            AutoModelForSeq2SeqLM, config.qg_model, dtype=resolve_dtype(config.dtype, self.device)
        )
        self.cross_bias = attach_cross_attention_bias(self.model, config.qg_model) if reference else False
        self.model = self.model.to(self.device).eval()
        # beam search computes each input's cross-attention keys and values once (same values)
        self.shared_cross = attach_shared_cross_attention(self.model)
        self.linears = OneDNNLinears(self.model)  # `cpu_matmul`
        self.tokens_processed = 0

    @property
    def tokenization(self) -> str:
        """The signature's name of the tokenization path (`ref32` or `hf`), `+xbias` when the
        checkpoint's 3.x cross-attention bias is applied."""
        return (REFERENCE if self.reference is not None else HF) + ("+xbias" if self.cross_bias else "")

    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        """The encoder input ids of each prompt (no padding)."""
        limit = self.config.qg_max_input_tokens
        if self.reference is not None:
            return [self.reference.t5_input(p, limit) for p in prompts]
        return self.tokenizer(list(prompts), truncation=True, max_length=limit)["input_ids"]

    def decode(self, ids: Sequence[int]) -> str:
        """A generated question's text, without the model's `question: ` prefix."""
        if self.reference is not None:
            return clean_question(self.reference.decode(ids, skip_special_tokens=True))
        return clean_question(self.tokenizer.decode(ids, skip_special_tokens=True))

    def _generation_kwargs(self) -> dict:
        c = self.config
        if c.decoding == "greedy":
            return {"max_length": c.max_question_length, "num_beams": 1, "do_sample": False}
        return {
            "max_length": c.max_question_length,
            "num_beams": c.num_beams,
            "num_return_sequences": c.num_return_sequences,
            "no_repeat_ngram_size": c.no_repeat_ngram_size,
            "early_stopping": c.early_stopping,
            "do_sample": False,
        }

    @torch.inference_mode()
    def _run(self, inputs: list[list[int]]) -> list[list[list[int]]]:
        width = max(len(ids) for ids in inputs)
        pad = self.tokenizer.pad_token_id or 0
        # right padding, masked: each input's encoder states are those of the input alone
        ids = torch.tensor([x + [pad] * (width - len(x)) for x in inputs], device=self.device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in inputs], device=self.device)
        self.tokens_processed += int(ids.numel())
        kwargs = self._generation_kwargs()
        sharing = self.shared_cross.sharing(kwargs["num_beams"]) if self.shared_cross else contextlib.nullcontext()
        with sharing, linear_kernels(self.linears, self.config.cpu_matmul, self.device):
            out = self.model.generate(input_ids=ids, attention_mask=mask, **kwargs).tolist()
        k = self.config.questions_per_candidate
        return [out[i * k:(i + 1) * k] for i in range(len(inputs))]

    def generate_ids(self, prompts: Sequence[str]) -> list[list[list[int]]]:
        """The generated ids of each prompt's questions (best first)."""
        if not prompts:
            return []
        c = self.config
        inputs = self.encode(prompts)
        beams = 1 if c.decoding == "greedy" else c.num_beams
        # beam search runs `beams` copies of every input: budget the expanded batch
        lengths = [beams * len(ids) for ids in inputs]
        return map_batched(inputs, lengths, c.qg_batch_size, c.qg_max_tokens, self._run)

    def generate(self, answers: Sequence[str], contexts: Sequence[str]) -> list[list[str]]:
        prompts = [qg_input(a, c) for a, c in zip(answers, contexts)]
        return [[self.decode(ids) for ids in beams] for beams in self.generate_ids(prompts)]

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
