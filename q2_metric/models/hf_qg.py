"""transformers seq2seq backend of the `QuestionGenerator` interface (T5 in the paper)."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Sequence
from functools import partial

import torch

from q2_metric.config import Q2Config
from q2_metric.models.batching import budget_batches, map_batched
from q2_metric.models.loading import load_pretrained, model_revision, resolve_device, resolve_dtype
from q2_metric.models.paper.beam_search import Group, beam_search
from q2_metric.models.paper.reference_tokenization import HF, REFERENCE, load_reference_tokenizer
from q2_metric.models.paper.t5_cross_bias import attach_cross_attention_bias
from q2_metric.models.speed.cpu_matmul import OneDNNLinears, linear_kernels, uses_onednn
from q2_metric.models.speed.t5_beam_cache import FIRST_CAPACITY, growing_cache
from q2_metric.models.speed.t5_merged_decoder import (
    MERGED_ROWS,
    mergeable,
    merged_decoder_steps,
    rows_independent,
)
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention
from q2_metric.progress import batch_done

QG_PROMPT = "answer: {answer}  context: {context} </s>"


def qg_input(answer: str, context: str) -> str:
    """The released code's input string (two spaces before `context:`, a literal `</s>`)."""
    return QG_PROMPT.format(answer=answer, context=context)


def clean_question(text: str) -> str:
    """Remove the `question: ` prefix the model writes: the released code removes the first
    `question: ` of the decoded text, wherever it is."""
    return text.replace("question: ", "", 1)


def decoder_steps(
    model: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor,
    beams: int,
    share_cross: bool,
    max_length: int | None = None,
    in_place_cache: bool = True,
) -> Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]:
    """The `step` of `beam_search` for an encoder-decoder model: the encoder runs once per input,
    its output goes to the input's `beams` rows, and each step feeds the rows' last tokens with the
    cache reordered by the beams (its self-attention part only when the beams of an input share
    their cross-attention keys and values, `t5_shared_cross`). With `in_place_cache` the
    self-attention cache is written into preallocated buffers, one copy per beam reorder
    (`t5_beam_cache`; the same values; `max_length`, the decoder start token counted, sizes its
    first buffer), otherwise it is transformers' `DynamicCache`."""
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache
    from transformers.modeling_outputs import BaseModelOutput

    hidden = model.get_encoder()(input_ids=ids, attention_mask=mask, return_dict=True).last_hidden_state
    encoder = BaseModelOutput(last_hidden_state=hidden.repeat_interleave(beams, dim=0))
    mask = mask.repeat_interleave(beams, dim=0)
    capacity = min(max_length or FIRST_CAPACITY, FIRST_CAPACITY)
    # (DynamicCache() adds a layer per decoder layer as they come: T5's config counts the encoder's)
    own = growing_cache(model.config, capacity) if in_place_cache else DynamicCache()
    cache = EncoderDecoderCache(own, DynamicCache())
    # the keyword was `past_key_values` before transformers 5.2x, `cache` since
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def step(tokens: torch.Tensor, beam_idx: torch.Tensor | None) -> torch.Tensor:
        if beam_idx is not None:
            (cache.self_attention_cache if share_cross else cache).reorder_cache(beam_idx)
        out = model(
            encoder_outputs=encoder,
            attention_mask=mask,
            decoder_input_ids=tokens[:, None],
            use_cache=True,
            return_dict=True,
            **{name: cache},
        )
        return out.logits[:, -1, :]

    return step


class HFQuestionGenerator:
    """Batched, padded beam search (or greedy decoding) over (answer, context) pairs; beam search
    by transformers 3.2's rules (`beam_search`), the length limit included.

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
        self.in_place_cache = True  # `t5_beam_cache` (False: transformers' cache, for comparisons)
        # `t5_merged_decoder`: the decoder steps of batches of >= MIN_ROWS rows run together, up to
        # this many rows (0: each batch alone). On by default where the same ids were checked:
        # float32 on a CPU with PyTorch's BLAS (elsewhere a product's rows may change its rounding)
        dtype = next(self.model.parameters()).dtype
        checked = self.device.type == "cpu" and dtype == torch.float32
        self.merged_rows = (
            MERGED_ROWS if checked and not uses_onednn(config.cpu_matmul, self.device, dtype) else 0
        )
        # (threads, each batch's rows) -> whether their products keep each row's numbers merged
        self._rows_checked: dict[tuple[int, tuple[int, ...]], bool] = {}
        self.merge_limits = True  # batches of other length limits merge too (`_merged`)
        self._own_rows: dict[tuple[int, ...], torch.Tensor] = {}  # `rows_independent`'s memo
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

    def _padded(self, inputs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """A batch's encoder ids and mask: right padding, masked (each input's encoder states are
        those of the input alone)."""
        width = max(len(ids) for ids in inputs)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.tensor([x + [pad] * (width - len(x)) for x in inputs], device=self.device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in inputs], device=self.device)
        self.tokens_processed += int(ids.numel())
        return ids, mask

    @torch.inference_mode()
    def _run(self, inputs: list[list[int]]) -> list[list[list[int]]]:
        ids, mask = self._padded(inputs)
        kwargs = self._batch_kwargs(inputs)
        beams = kwargs["num_beams"]
        sharing = self.shared_cross.sharing(beams) if self.shared_cross else contextlib.nullcontext()
        with sharing, linear_kernels(self.linears, self.config.cpu_matmul, self.device):
            if beams == 1:  # greedy: transformers' own (the same rule as 3.2's)
                out = self.model.generate(input_ids=ids, attention_mask=mask, **kwargs).tolist()
                return [[row] for row in out]
            return self._beam_search(ids, mask, kwargs)

    @staticmethod
    def _lengths(kwargs: dict, generation: object) -> tuple[int, int]:
        """max_length and min_length as 3.2 counted them (the decoder start token included)."""
        max_length = 1 + kwargs["max_new_tokens"] if "max_new_tokens" in kwargs else kwargs["max_length"]
        min_length = (
            1 + kwargs["min_new_tokens"]
            if "min_new_tokens" in kwargs
            else (getattr(generation, "min_length", 0) or 0)
        )
        return max_length, min_length

    def _beam_search(self, ids: torch.Tensor, mask: torch.Tensor, kwargs: dict) -> list[list[list[int]]]:
        """transformers 3.2's beam search (`beam_search`) over the model's decoder steps."""
        max_length, _ = self._lengths(kwargs, self.model.generation_config)
        step = decoder_steps(
            self.model,
            ids,
            mask,
            kwargs["num_beams"],
            share_cross=self.shared_cross is not None,
            max_length=max_length,
            in_place_cache=self.in_place_cache,
        )
        return self._search(step, len(ids), kwargs)

    def _search(
        self,
        step: Callable[..., torch.Tensor],
        inputs: int,
        kwargs: dict,
        groups: list[Group] | None = None,
        may_leave: Callable[[list[int]], bool] | None = None,
    ) -> list[list[list[int]]]:
        """`beam_search` with the configured rules over `inputs` inputs' decoder steps (`groups`,
        `may_leave`: merged steps' batches, each with its own length limits)."""
        beams, generation = kwargs["num_beams"], self.model.generation_config
        max_length, min_length = self._lengths(kwargs, generation)
        config = self.model.config
        return beam_search(
            step,
            inputs,
            num_beams=beams,
            max_length=max_length,
            min_length=min_length,
            num_return_sequences=kwargs["num_return_sequences"],
            no_repeat_ngram_size=kwargs["no_repeat_ngram_size"] or 0,
            early_stopping=bool(kwargs["early_stopping"]),
            length_penalty=float(generation.length_penalty if generation.length_penalty is not None else 1.0),
            start_id=config.decoder_start_token_id,
            eos_id=config.eos_token_id,
            pad_id=config.pad_token_id,
            device=self.device,
            groups=groups,
            may_leave=may_leave,
        )

    def generate_ids(self, prompts: Sequence[str]) -> list[list[list[int]]]:
        """The generated ids of each prompt's questions (best first)."""
        if not prompts:
            return []
        c = self.config
        inputs = self.encode(prompts)
        beams = 1 if c.decoding == "greedy" else c.num_beams
        # beam search runs `beams` copies of every input: budget the expanded batch
        lengths = [beams * len(ids) for ids in inputs]
        if self.merged_rows > 0 and beams > 1 and self.shared_cross is not None and self.in_place_cache:
            return self._merged(inputs, lengths, beams)
        return map_batched(inputs, lengths, c.qg_batch_size, c.qg_max_tokens, self._run)

    def _batch_kwargs(self, inputs: list[list[int]]) -> dict:
        """The generation settings of one batch (the same for every batch here)."""
        return self._generation_kwargs()

    @torch.inference_mode()
    def _merged(self, inputs: list[list[int]], lengths: list[int], beams: int) -> list[list[list[int]]]:
        """`map_batched`'s batches, the decoder steps of those with enough rows and the same
        settings but for their length limits run together (`t5_merged_decoder`) up to `merged_rows`
        rows, each batch with its own limits (`beam_search`'s groups), the others alone."""
        c = self.config
        generation = self.model.generation_config
        out: list[list[list[int]] | None] = [None] * len(inputs)
        alone: list[list[int]] = []
        open_chunks: dict[str, list[tuple[list[int], Group]]] = {}  # by settings: the chunk being filled
        chunks: list[tuple[dict, list[tuple[list[int], Group]]]] = []
        # batches that differ in their length limits alone merge (False: only equal settings, for comparisons)
        limits = (
            {"max_length", "min_length", "max_new_tokens", "min_new_tokens"} if self.merge_limits else set()
        )
        for idx in budget_batches(lengths, c.qg_batch_size, c.qg_max_tokens):
            kwargs = self._batch_kwargs([inputs[i] for i in idx])
            if not mergeable(len(idx), beams):
                alone.append(idx)
                continue
            key = repr(sorted((k, v) for k, v in kwargs.items() if k not in limits))
            chunk = open_chunks.get(key)
            if chunk is None or (sum(len(i) for i, _ in chunk) + len(idx)) * beams > self.merged_rows:
                chunk = open_chunks[key] = []
                chunks.append((kwargs, chunk))
            chunk.append((idx, Group(len(idx), *self._lengths(kwargs, generation))))
        done = 0

        def finish(indices: list[int], results: list[list[list[int]]]) -> None:
            nonlocal done
            for i, result in zip(indices, results):
                out[i] = result
            done += len(indices)
            batch_done(done, len(inputs))

        for idx in alone:
            finish(idx, self._run([inputs[i] for i in idx]))
        assert self.shared_cross is not None
        for kwargs, chunk in chunks:
            sizes = [len(idx) * beams for idx, _ in chunk]
            if len(chunk) == 1 or not self._independent(sizes):  # each batch alone
                for idx, _ in chunk:
                    finish(idx, self._run([inputs[i] for i in idx]))
                continue
            padded = [self._padded([inputs[i] for i in idx]) for idx, _ in chunk]
            groups = [group for _, group in chunk]
            longest = max(g.max_length for g in groups)
            with (
                self.shared_cross.sharing(beams),
                linear_kernels(self.linears, c.cpu_matmul, self.device),
                merged_decoder_steps(self.model, self.shared_cross, padded, beams, longest) as step,
            ):
                results = self._search(
                    step,
                    sum(g.inputs for g in groups),
                    kwargs,
                    groups=groups,
                    may_leave=partial(self._leave, sizes),
                )
            finish([i for idx, _ in chunk for i in idx], results)
        return out  # type: ignore[return-value]  # every slot was filled by the loops

    def _leave(self, sizes: list[int], running: list[int]) -> bool:
        """Whether the batches `running` (indices into `sizes`) may run their steps without the others."""
        return self._independent([sizes[k] for k in running])

    def _independent(self, sizes: list[int]) -> bool:
        """Whether one product of batches of `sizes` rows keeps each batch's rows' numbers
        (`rows_independent`, checked once per thread count and sizes)."""
        if len(sizes) <= 1:
            return True
        check = (torch.get_num_threads(), tuple(sizes))
        if check not in self._rows_checked:
            self._rows_checked[check] = rows_independent(self.model, sizes, self._own_rows)
        return self._rows_checked[check]

    def generate(self, answers: Sequence[str], contexts: Sequence[str]) -> list[list[str]]:
        prompts = [qg_input(a, c) for a, c in zip(answers, contexts)]
        return [[self.decode(ids) for ids in beams] for beams in self.generate_ids(prompts)]

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
