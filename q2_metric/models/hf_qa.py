"""transformers extractive-QA backend of `QuestionAnswerer` (SQuAD 2.0: it can say "no answer").

Two decodings, chosen by `Q2Config.qa_decoding`:

- `reference` (default): the released Q² code. (question, text) is encoded as one pair with the
  tokenizer's special tokens; start = argmax of the start logits over *every* position (special
  and question tokens included), end = argmax of the end logits over every position, plus one; the
  answer is `convert_tokens_to_string` of the tokens in [start, end). It therefore carries the
  tokenizer's normalisation (ALBERT lower-cases and strips accents) and may hold question or
  separator tokens. "No answer" is exactly the CLS token's text; an end before the start gives "".
- `best_span`: SQuAD 2.0 evaluation: the best span inside the text with start <= end and at most
  `qa_max_answer_tokens` tokens, answered only if it beats the lowest CLS null score; the answer
  text is cut from the original text by offsets (a departure from the paper).

On a CPU the (question, text) pairs of a call are packed without padding: several pairs share a row
of the batch, each attending only to itself and with its own position ids, so the model does the
same arithmetic as on each pair alone and no work on pad tokens (`qa_packing`; on a GPU, where
padding is cheap and custom masks are slow, pairs are padded instead).

A text longer than the window (`qa_max_length`, default the model's maximum, 512 for the paper's
ALBERT, so every input the released code could read is one window) is split into windows
overlapping by `qa_doc_stride` tokens, each decoded as above. The answer is that of the window
with the highest start+end logit among the windows that answer; "no answer" when none does.

An ALBERT with a SentencePiece vocabulary (the paper's) reads, with `reference` decoding, the ids
transformers 3.2's slow tokenizer gave the released code, and its answers are that tokenizer's
`convert_tokens_to_string` (`reference_tokenization`); other models and `best_span` (which cuts
answers by character offsets) use transformers' own tokenizer.

The generic path for other models (`exact_offsets=True`, e.g. a multilingual XLM-R): a fast
tokenizer's offsets, SQuAD 2.0 decoding (`best_span`'s rule: the best span inside the text against
the lowest CLS null score), and the answer is exactly `text[start:end]` (`answer_spans`): no
normalisation, no decoding of tokens, only the span's outer white space left out, so it slices the
text in every script (combining marks, CJK without spaces, right-to-left text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch

from q2_metric.components import NO_ANSWER, Answer
from q2_metric.config import Q2Config
from q2_metric.errors import ModelCheckError, Q2OptionError
from q2_metric.models.batching import budget_batches, configured, device_limits, packed_calls, pipelined
from q2_metric.models.loading import (
    load_pretrained,
    model_revision,
    resolve_device,
    resolve_dtype,
    uses_segment_ids,
)
from q2_metric.models.paper.reference_tokenization import HF, REFERENCE, load_reference_tokenizer
from q2_metric.models.speed.cpu_matmul import OneDNNLinears
from q2_metric.models.speed.kernels import model_kernels
from q2_metric.models.speed.precision import check_precision, quantize_encoder
from q2_metric.progress import batch_done


def decode_reference(start: np.ndarray, end: np.ndarray) -> tuple[float, int, int]:
    """(score, start, end) of the released code's decoding: independent argmaxes over every
    position; `end` is exclusive (argmax + 1), so end <= start means the empty answer.

    >>> decode_reference(np.array([0.1, 3.0, 0.2]), np.array([0.0, 0.5, 2.0]))
    (5.0, 1, 3)
    """
    s, e = int(np.argmax(start)), int(np.argmax(end))
    return float(start[s] + end[e]), s, e + 1


def decode_best_span(
    start: np.ndarray, end: np.ndarray, context: np.ndarray, max_tokens: int, top_k: int = 20
) -> tuple[float, int, int] | None:
    """(score, start, end inclusive) of the best span inside the context, or None when it has none."""
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


# Model types whose embeddings take absolute position ids from 0 and whose attention takes a 4D
# additive mask, so that packed pairs compute exactly what they compute alone.
PACKABLE = frozenset({"albert", "bert", "electra"})
# Tokens per packed row, on average: long enough for the matrix products to run at full speed,
# short enough that attention over the whole row (masked to each pair) adds only about 2% to the work.
PACK_ROW_TOKENS = 256


def model_window(tokenizer: Any, model: Any) -> int:
    """The longest input the model reads: its position embeddings, capped by the tokenizer."""
    limits = [
        int(x)
        for x in (getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length)
        if x and x < 10**6
    ]
    return min(limits) if limits else 512


class HFQuestionAnswerer:
    """Batched extractive QA over (question, text) pairs, windows for long texts."""

    def __init__(self, config: Q2Config, reference: bool = True, *, exact_offsets: bool = False) -> None:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        self.model_id = config.qa_model
        self.config = config
        self.exact_offsets = exact_offsets
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.qa_model)
        if exact_offsets and not getattr(self.tokenizer, "is_fast", False):
            raise ModelCheckError(
                f"The QA model '{config.qa_model}' has no fast tokenizer (tokenizer.json), which exact "
                "answer offsets need; save one with it or use a model that has one."
            )
        reference = reference and not exact_offsets
        self.reference = load_reference_tokenizer(config.qa_model) if reference else None
        if self.reference is not None and self.reference.kind != "albert":
            self.reference = None
        self.model = (
            load_pretrained(
                AutoModelForQuestionAnswering,
                config.qa_model,
                dtype=resolve_dtype(config.dtype, self.device),
            )
            .to(self.device)
            .eval()
        )
        if config.quantize == "int8":  # a fast mode (in the signature): the encoder's Linear layers in int8
            check_precision(config.dtype, config.quantize, self.device)
            quantize_encoder(self.model)
        self.linears = OneDNNLinears(self.model)  # `cpu_matmul` (what float32 Linear layers are left)
        self.cls_text = self.tokenizer.cls_token or "[CLS]"
        self.window = model_window(self.tokenizer, self.model)
        # `qa_packing` is read on every call (`packs`): 'on' with a model that cannot pack is refused
        # by that call alone
        self.tokens_processed = 0  # padded tokens through the model, for benchmarks
        self.device_limits = device_limits("qa", self.device)  # the options' limits: per call

    @property
    def batch_size(self) -> int:
        """Most inputs per batch in this call (`qa_batch_size`, else the device's)."""
        return configured(self.config, "qa", self.device_limits)[0]

    @property
    def max_tokens(self) -> int:
        """Padded tokens per batch in this call (`qa_max_tokens`, else the device's)."""
        return configured(self.config, "qa", self.device_limits)[1]

    def _logits(self, features: list[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Start and end logits of each feature, in one padded batch."""
        return self._collect_padded(self._launch_padded(features))

    @torch.inference_mode()
    def _launch_padded(self, features: list[dict]) -> tuple[Any, Any, Any]:  # tensors
        names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features[0]]
        batch = self.tokenizer.pad([{k: f[k] for k in names} for f in features], return_tensors="pt")
        self.tokens_processed += int(batch["input_ids"].numel())
        with model_kernels(self.linears, self.config.cpu_matmul, self.device, self.model):
            out = self.model(**{k: v.to(self.device) for k, v in batch.items()})
        return out.start_logits, out.end_logits, batch["attention_mask"]

    @staticmethod
    def _collect_padded(launched: tuple[Any, Any, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        start, end, mask = launched
        start, end = start.float().cpu().numpy(), end.float().cpu().numpy()
        mask = mask.bool().numpy()
        # the unpadded sequence's logits, whichever side the tokenizer pads
        return [(start[i][mask[i]], end[i][mask[i]]) for i in range(len(mask))]

    def packs(self) -> bool:
        """Whether calls are packed: `qa_packing` 'on', or 'auto' on a CPU with a packable model."""
        mode = self.config.qa_packing
        packable = getattr(getattr(self.model, "config", None), "model_type", None) in PACKABLE
        if mode == "on" and not packable:
            raise Q2OptionError(
                f"qa_packing='on' needs a QA model of type {', '.join(sorted(PACKABLE))}; "
                f"{self.model_id} is not one of them (use qa_packing='auto' or 'off')."
            )
        return mode == "on" or (mode == "auto" and packable and self.device.type == "cpu")

    def _packed_logits(
        self, features: list[dict], rows: list[list[int]]
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Logits of the features packed in `rows`: one batch row per packed row, no pad tokens
        except at the end of the shorter rows (which attend only to themselves)."""
        return self._collect_packed(self._launch_packed(features, rows))

    @torch.inference_mode()
    def _launch_packed(self, features: list[dict], rows: list[list[int]]) -> tuple[Any, Any, list[Any]]:
        width = max(sum(len(features[i]["input_ids"]) for i in row) for row in rows)
        shape = (len(rows), width)
        ids = torch.full(shape, self.tokenizer.pad_token_id or 0, dtype=torch.long)
        types, positions = torch.zeros(shape, dtype=torch.long), torch.zeros(shape, dtype=torch.long)
        segment = torch.full(shape, -1, dtype=torch.long)
        spans = []  # (feature, row, offset, length)
        for r, row in enumerate(rows):
            offset = 0
            for s, i in enumerate(row):
                f, n = features[i], len(features[i]["input_ids"])
                ids[r, offset : offset + n] = torch.tensor(f["input_ids"])
                if "token_type_ids" in f:
                    types[r, offset : offset + n] = torch.tensor(f["token_type_ids"])
                positions[r, offset : offset + n] = torch.arange(n)
                segment[r, offset : offset + n] = s
                spans.append((i, r, offset, n))
                offset += n
        dtype = self.model.dtype
        mask = torch.zeros((*shape, width), dtype=dtype).masked_fill_(
            segment[:, :, None] != segment[:, None, :], torch.finfo(dtype).min
        )[:, None]
        self.tokens_processed += ids.numel()
        with model_kernels(self.linears, self.config.cpu_matmul, self.device, self.model):
            out = self.model(
                input_ids=ids.to(self.device),
                token_type_ids=types.to(self.device),
                position_ids=positions.to(self.device),
                attention_mask=mask.to(self.device),
            )
        return out.start_logits, out.end_logits, spans

    @staticmethod
    def _collect_packed(launched: tuple[Any, Any, list[Any]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        start, end, spans = launched
        start, end = start.float().cpu().numpy(), end.float().cpu().numpy()
        return {i: (start[r, o : o + n], end[r, o : o + n]) for i, r, o, n in spans}

    def _all_logits(self, features: list[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Start and end logits of every feature: packed rows, or length-sorted padded batches."""
        lengths = [len(f["input_ids"]) for f in features]
        logits: list = [None] * len(features)
        done = 0
        calls: Iterable[list[Any]]
        if self.packs():
            calls = packed_calls(lengths, self.batch_size, self.max_tokens, PACK_ROW_TOKENS)
            launch = lambda rows: self._launch_packed(features, rows)  # noqa: E731 (two branches, one pair of names)
            collect = self._collect_packed
        else:
            calls = budget_batches(lengths, self.batch_size, self.max_tokens)
            launch = lambda idx: (idx, self._launch_padded([features[i] for i in idx]))  # noqa: E731 (as above)
            collect = lambda launched: dict(zip(launched[0], self._collect_padded(launched[1])))  # noqa: E731 (as above)
        # each call is launched before the previous one is collected (`pipelined`)
        for _, results in pipelined(calls, launch, collect):
            for i, result in results.items():
                logits[i] = result
            done += len(results)
            batch_done(done, len(features))
        return logits

    @property
    def tokenization(self) -> str:
        """The signature's name of the tokenization path: `ref32` (3.2's slow tokenizer) or `hf`."""
        return REFERENCE if self._uses_reference() else HF

    def _uses_reference(self) -> bool:
        return (
            self.reference is not None and self.config.qa_decoding == "reference" and not self.exact_offsets
        )

    def features(
        self, questions: Sequence[str], contexts: Sequence[str]
    ) -> tuple[list[dict], list[int], Any]:
        """The model input of every window (`input_ids`, `attention_mask`, `token_type_ids` when
        the model has segments), the example each window reads, and transformers' encoding (for
        `best_span`'s offsets; None on the reference path)."""
        c = self.config
        window = min(c.qa_max_length or self.window, self.window)
        if self.reference is not None and self._uses_reference():
            features, examples = [], []
            for example, (q, t) in enumerate(zip(questions, contexts)):
                for ids, types in self.reference.pair_windows(q, t, window, c.qa_doc_stride):
                    feature = {"input_ids": ids, "attention_mask": [1] * len(ids)}
                    if uses_segment_ids(self.model):
                        feature["token_type_ids"] = types
                    features.append(feature)
                    examples.append(example)
            return features, examples, None
        enc = self.tokenizer(
            list(questions),
            list(contexts),
            truncation="only_second",
            max_length=window,
            stride=c.qa_doc_stride,
            return_overflowing_tokens=True,
            return_token_type_ids=uses_segment_ids(self.model),
            return_offsets_mapping=c.qa_decoding == "best_span" or self.exact_offsets,
        )
        features = [
            {k: enc[k][i] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
            for i in range(len(enc["input_ids"]))
        ]
        return features, list(enc["overflow_to_sample_mapping"]), enc

    def tokens_to_text(self, ids: Sequence[int]) -> str:
        """The released code's answer text of a span's ids: `convert_tokens_to_string`."""
        if self.reference is not None and self._uses_reference():
            return self.reference.convert_tokens_to_string(self.reference.tokens_of(ids))
        return self.tokenizer.convert_tokens_to_string(self.tokenizer.convert_ids_to_tokens(list(ids)))

    def answer_spans(self, questions: Sequence[str], contexts: Sequence[str]) -> list[tuple[int, int] | None]:
        """The generic path's answers (`exact_offsets=True`; any model with a fast tokenizer): each
        answer's [start, end) in its text, None for "no answer": the best span inside the text
        (start <= end, at most `qa_max_answer_tokens` tokens; `decode_best_span`) over every window,
        answered only if it scores above the lowest CLS null score of the example's windows. A
        span's outer white space is left out (a piece's offsets may hold the space before it)."""
        if not questions:
            return []
        features, examples, enc = self.features(questions, contexts)
        logits = self._all_logits(features)
        best: list[tuple[float, int, int] | None] = [None] * len(questions)
        null = [np.inf] * len(questions)
        cls_id = self.tokenizer.cls_token_id
        for i, example in enumerate(examples):
            start, end = logits[i]
            ids = features[i]["input_ids"]
            cls = ids.index(cls_id) if cls_id in ids else 0
            null[example] = min(null[example], float(start[cls] + end[cls]))
            context = np.array([s == 1 for s in enc.sequence_ids(i)])
            span = decode_best_span(start, end, context, self.config.qa_max_answer_tokens)
            if span is None:
                continue
            offsets = enc["offset_mapping"][i]
            found = (span[0], int(offsets[span[1]][0]), int(offsets[span[2]][1]))
            so_far = best[example]
            if so_far is None or found[0] > so_far[0]:
                best[example] = found
        spans: list[tuple[int, int] | None] = []
        for example, kept in enumerate(best):
            if kept is None or kept[0] <= null[example]:
                spans.append(None)
                continue
            text, s, e = contexts[example], kept[1], kept[2]
            while s < e and text[s].isspace():
                s += 1
            while e > s and text[e - 1].isspace():
                e -= 1
            spans.append((s, e) if s < e else None)
        return spans

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[Answer]:
        if not questions:
            return []
        if self.exact_offsets:
            spans = self.answer_spans(questions, contexts)
            return [NO_ANSWER if at is None else Answer(t[at[0] : at[1]]) for t, at in zip(contexts, spans)]
        c = self.config
        features, examples, enc = self.features(questions, contexts)
        logits = self._all_logits(features)

        best: list[tuple[float, Answer] | None] = [None] * len(questions)
        null = [np.inf] * len(questions)
        for i, example in enumerate(examples):
            start, end = logits[i]
            if c.qa_decoding == "reference":
                score, s, e = decode_reference(start, end)
                text = self.tokens_to_text(features[i]["input_ids"][s:e])
                found = None if text == self.cls_text else (score, Answer(text))
            else:
                ids = features[i]["input_ids"]
                cls = ids.index(self.tokenizer.cls_token_id) if self.tokenizer.cls_token_id in ids else 0
                null[example] = min(null[example], float(start[cls] + end[cls]))
                context = np.array([s == 1 for s in enc.sequence_ids(i)])
                span = decode_best_span(start, end, context, c.qa_max_answer_tokens)
                found = None
                if span is not None:
                    offsets = enc["offset_mapping"][i]
                    found = (
                        span[0],
                        Answer(contexts[example][offsets[span[1]][0] : offsets[span[2]][1]].strip()),
                    )
            so_far = best[example]
            if found is not None and (so_far is None or found[0] > so_far[0]):
                best[example] = found

        answers = []
        for example, found in enumerate(best):
            if found is None or (c.qa_decoding == "best_span" and found[0] <= null[example]):
                answers.append(NO_ANSWER)
            else:
                answers.append(found[1])
        return answers

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
