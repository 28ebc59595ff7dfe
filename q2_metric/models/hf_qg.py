"""transformers seq2seq backend of the `QuestionGenerator` interface (T5 in the paper)."""

from __future__ import annotations

from typing import Sequence

import torch

from q2_metric.config import Q2Config
from q2_metric.models.batching import map_batched
from q2_metric.models.loading import load_pretrained, model_revision, resolve_device, resolve_dtype

QG_PROMPT = "answer: {answer}  context: {context} </s>"


def qg_input(answer: str, context: str) -> str:
    """The released code's input string (two spaces before `context:`, a literal `</s>`)."""
    return QG_PROMPT.format(answer=answer, context=context)


def clean_question(text: str) -> str:
    """Strip the `question: ` prefix the model writes."""
    text = text.strip()
    return text[len("question: "):] if text.startswith("question: ") else text


class HFQuestionGenerator:
    """Batched, padded beam search (or greedy decoding) over (answer, context) pairs."""

    def __init__(self, config: Q2Config) -> None:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.model_id = config.qg_model
        self.config = config
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.qg_model)
        self.model = load_pretrained(
            AutoModelForSeq2SeqLM, config.qg_model, dtype=resolve_dtype(config.dtype, self.device)
        ).to(self.device).eval()
        self.tokens_processed = 0

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
    def _run(self, prompts: list[str]) -> list[list[str]]:
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True, truncation=True,
                             max_length=self.config.qg_max_input_tokens).to(self.device)
        self.tokens_processed += int(enc["input_ids"].numel())
        out = self.model.generate(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                  **self._generation_kwargs())
        texts = [clean_question(t) for t in self.tokenizer.batch_decode(out, skip_special_tokens=True)]
        k = self.config.questions_per_candidate
        return [texts[i * k:(i + 1) * k] for i in range(len(prompts))]

    def generate(self, answers: Sequence[str], contexts: Sequence[str]) -> list[list[str]]:
        prompts = [qg_input(a, c) for a, c in zip(answers, contexts)]
        if not prompts:
            return []
        c = self.config
        beams = 1 if c.decoding == "greedy" else c.num_beams
        # beam search runs `beams` copies of every input: budget the expanded batch
        lengths = [beams * len(ids) for ids in self.tokenizer(prompts, truncation=True,
                                                              max_length=c.qg_max_input_tokens)["input_ids"]]
        return map_batched(prompts, lengths, c.qg_batch_size, c.qg_max_tokens, self._run)

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
