"""transformers extractive-QA backend of `QuestionAnswerer` (SQuAD 2.0: it can say "no answer").

Contexts longer than the model window are split into overlapping windows (`qa_max_length`,
`qa_doc_stride`); each window is scored and the best window wins.

Two decodings, chosen by `Q2Config.qa_decoding`:
- `independent` (default, the released Q² code): start = argmax of start logits, end = argmax of end
  logits, each over the context tokens and [CLS]. A window whose start or end lands on [CLS] says
  "no answer"; an end before the start gives the empty answer "" (which matches nothing). Across
  windows, the answering window with the highest start+end logit wins; no answer if none answers.
- `best_span` (SQuAD 2.0 evaluation): best span with start <= end and at most
  `qa_max_answer_tokens` tokens, answered only if its score beats the lowest [CLS] null score.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from q2_metric.components import NO_ANSWER, Answer
from q2_metric.config import Q2Config
from q2_metric.models.loading import load_pretrained, model_revision, resolve_device, resolve_dtype
from q2_metric.models.batching import sorted_batches


def decode_independent(start: np.ndarray, end: np.ndarray, context: np.ndarray, cls: int):
    """(score, start, end) of one window, or None for "no answer". `context` masks context tokens."""
    allowed = context.copy()
    allowed[cls] = True
    s = int(np.argmax(np.where(allowed, start, -np.inf)))
    e = int(np.argmax(np.where(allowed, end, -np.inf)))
    if s == cls or e == cls:
        return None
    return float(start[s] + end[e]), s, e


def decode_best_span(start: np.ndarray, end: np.ndarray, context: np.ndarray, max_tokens: int,
                     top_k: int = 20):
    """(score, start, end) of the best valid span of one window, or None when it has none."""
    idx = np.flatnonzero(context)
    if idx.size == 0:
        return None
    starts = idx[np.argsort(-start[idx])[:top_k]]
    ends = idx[np.argsort(-end[idx])[:top_k]]
    best = None
    for s in starts:
        for e in ends:
            if e < s or e - s + 1 > max_tokens:
                continue
            score = float(start[s] + end[e])
            if best is None or score > best[0]:
                best = (score, int(s), int(e))
    return best


class HFQuestionAnswerer:
    """Batched extractive QA over (question, context) pairs with sliding windows."""

    def __init__(self, config: Q2Config) -> None:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        self.model_id = config.qa_model
        self.config = config
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.qa_model)
        if not self.tokenizer.is_fast:
            raise ValueError(f"QA model {config.qa_model!r} needs a fast tokenizer (offsets and windows)")
        self.model = load_pretrained(
            AutoModelForQuestionAnswering, config.qa_model,
            dtype=resolve_dtype(config.dtype, self.device),
        ).to(self.device).eval()

    @torch.inference_mode()
    def _logits(self, features: list[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
        names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features[0]]
        batch = self.tokenizer.pad([{k: f[k] for k in names} for f in features], return_tensors="pt")
        out = self.model(**{k: v.to(self.device) for k, v in batch.items()})
        start = out.start_logits.float().cpu().numpy()
        end = out.end_logits.float().cpu().numpy()
        return [(start[i, :len(f["input_ids"])], end[i, :len(f["input_ids"])]) for i, f in enumerate(features)]

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[Answer]:
        if not questions:
            return []
        c = self.config
        question_first = self.tokenizer.padding_side == "right"
        enc = self.tokenizer(
            list(questions) if question_first else list(contexts),
            list(contexts) if question_first else list(questions),
            truncation="only_second" if question_first else "only_first",
            max_length=c.qa_max_length, stride=c.qa_doc_stride,
            return_overflowing_tokens=True, return_offsets_mapping=True,
        )
        context_seq = 1 if question_first else 0
        n_features = len(enc["input_ids"])
        features = [{k: enc[k][i] for k in enc.keys() if k not in ("offset_mapping", "overflow_to_sample_mapping")}
                    for i in range(n_features)]
        logits: list = [None] * n_features
        for idx in sorted_batches([len(f["input_ids"]) for f in features], c.qa_batch_size):
            for i, result in zip(idx, self._logits([features[i] for i in idx])):
                logits[i] = result

        best: list[tuple | None] = [None] * len(questions)
        null_scores = [np.inf] * len(questions)
        for i in range(n_features):
            example = enc["overflow_to_sample_mapping"][i]
            seq_ids = enc.sequence_ids(i)
            context_mask = np.array([s == context_seq for s in seq_ids])
            ids = features[i]["input_ids"]
            cls = ids.index(self.tokenizer.cls_token_id) if self.tokenizer.cls_token_id in ids else 0
            start, end = logits[i]
            null_scores[example] = min(null_scores[example], float(start[cls] + end[cls]))
            if c.qa_decoding == "independent":
                found = decode_independent(start, end, context_mask, cls)
            else:
                found = decode_best_span(start, end, context_mask, c.qa_max_answer_tokens)
            if found is not None and (best[example] is None or found[0] > best[example][0]):
                offsets = enc["offset_mapping"][i]
                s, e = found[1], found[2]
                text = "" if e < s else contexts[example][offsets[s][0]:offsets[e][1]].strip()
                best[example] = (found[0], text)

        answers = []
        for example, found in enumerate(best):
            if found is None or (c.qa_decoding == "best_span" and found[0] <= null_scores[example]):
                answers.append(NO_ANSWER)
            else:
                answers.append(Answer(found[1]))
        return answers

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
