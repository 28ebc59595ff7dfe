"""transformers seq2seq backend of the `QuestionGenerator` interface (T5 in the paper)."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch

from q2_metric.config import Q2Config, QGDecoder
from q2_metric.errors import Q2OptionError
from q2_metric.models.batching import budget_batches, configured, device_limits
from q2_metric.models.loading import load_pretrained, model_revision, resolve_device, resolve_dtype
from q2_metric.models.paper.beam_search import BeamRules, beam_search
from q2_metric.models.paper.reference_tokenization import HF, REFERENCE, load_reference_tokenizer
from q2_metric.models.paper.t5_cross_bias import attach_cross_attention_bias
from q2_metric.models.paper.t5_steps import decoder_steps
from q2_metric.models.speed.cpu_matmul import OneDNNLinears, uses_onednn
from q2_metric.models.speed.kernels import backend_settings, model_kernels
from q2_metric.models.speed.qg_fast import ExactnessGate, FastQG, FastSettings
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention
from q2_metric.progress import batch_done

QG_PROMPT = "answer: {answer}  context: {context} </s>"
# The inputs a question generator may be trained on (`HFQuestionGenerator(prompt=...)`): the paper's
# (`qg_input`), and lmqg's highlighted answer (`lmqg_input`: its mT5 QG models for de, es, fr, it,
# ja, ko, ru).
PROMPTS = ("q2", "lmqg-highlight")
LMQG_PREFIX, LMQG_HIGHLIGHT = "generate question: ", "<hl>"

# On a GPU, QG batches are padded to a multiple of 32 tokens and each holds one such width,
# so that full batches share one shape and its decoder steps replay (`models/speed/qg_graphs.py`);
# padding is masked, so only float rounding can change, as with any other batch size.
GPU_WIDTH_MULTIPLE = 32


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def plan_batches(
    lengths: Sequence[int], beams: int, batch_size: int, max_tokens: int, multiple: int = 1
) -> list[list[int]]:
    """QG's batches of inputs of `lengths` tokens (`budget_batches`; beam search runs `beams`
    copies of every input, so the budget counts them). With a `multiple` above 1 (a GPU), each
    batch holds inputs of one width rounded up to it, so full batches of a width share a shape.

    >>> plan_batches([9, 30, 12, 14, 31], beams=1, batch_size=2, max_tokens=1000, multiple=8)
    [[1, 4], [0, 2], [3]]
    """
    padded = [beams * _round_up(n, multiple) for n in lengths]
    return list(budget_batches(padded, batch_size, max_tokens, min_fill=1.0 if multiple > 1 else 0.8))


def qg_input(answer: str, context: str) -> str:
    """The released code's input string (two spaces before `context:`, a literal `</s>`)."""
    return QG_PROMPT.format(answer=answer, context=context)


def lmqg_input(answer: str, context: str, span: tuple[int, int] | None = None) -> str:
    """lmqg's input: "generate question: " and the context with `<hl> answer <hl>` in place of the
    answer's span (`span`: its [start, end) in `context`; default its first occurrence there). An
    answer not in the context is highlighted before it.

    >>> lmqg_input("Berlin", "Sie wohnt in Berlin.")
    'generate question: Sie wohnt in <hl> Berlin <hl>.'
    """
    if span is None:
        at = context.find(answer) if answer else -1
        span = (at, at + len(answer)) if at >= 0 else None
    if span is None:
        return f"{LMQG_PREFIX}{LMQG_HIGHLIGHT} {answer} {LMQG_HIGHLIGHT} {context}"
    start, end = span
    return (
        f"{LMQG_PREFIX}{context[:start]}{LMQG_HIGHLIGHT} {context[start:end]} {LMQG_HIGHLIGHT}{context[end:]}"
    )


def clean_question(text: str) -> str:
    """Remove the `question: ` prefix the model writes: the released code removes the first
    `question: ` of the decoded text, wherever it is."""
    return text.replace("question: ", "", 1)


class HFQuestionGenerator:
    """Batched, padded beam search (or greedy decoding) over (answer, context) pairs; beam search
    by transformers 3.2's rules (`beam_search`), the length limit included.

    A T5 with a SentencePiece vocabulary (the paper's) is fed the ids transformers 3.2's slow
    tokenizer gave the released code and its questions are decoded as 3.2 decoded them
    (`reference_tokenization`); a checkpoint saved by transformers 3.x with the cross-attention
    relative bias runs with it (`t5_cross_bias`). `reference=False` (for comparisons) and any
    other model use transformers' own tokenizer.

    Beam search runs by one of two paths, read from the options on every call (`Q2Config.qg_decoder`,
    `decoder`): the reference path (the default) searches each batch alone over 3.2's decoder step;
    the fast path of a T5 (`models/speed/qg_fast.py`, its choices `fast`, default `FastSettings()`)
    merges batches' rows behind the generator's exactness gate (`gate`), which sends every batch
    outside the keys it has checked to the reference path. Options are honoured on every call,
    whichever the generator was loaded with; `fast` for another model is refused by that call alone.

    `prompt` (the generic path for other models): "q2", the paper's input (`qg_input`, the default),
    or "lmqg-highlight", lmqg's (`lmqg_input`), which reads with transformers' own tokenizer.
    """

    def __init__(
        self,
        config: Q2Config,
        reference: bool = True,
        fast: FastSettings | None = None,
        *,
        prompt: str = "q2",
    ) -> None:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        if prompt not in PROMPTS:
            raise Q2OptionError(
                f"The question generator's prompt '{prompt}' is not one of {', '.join(PROMPTS)}."
            )
        self.prompt = prompt
        self.model_id = config.qg_model
        self.config = config
        self.device = resolve_device(config.device)
        self.tokenizer = load_pretrained(AutoTokenizer, config.qg_model)
        reference = reference and prompt == "q2"
        self.reference = load_reference_tokenizer(config.qg_model) if reference else None
        self.model = load_pretrained(
            AutoModelForSeq2SeqLM, config.qg_model, dtype=resolve_dtype(config.dtype, self.device)
        )
        self.cross_bias = attach_cross_attention_bias(self.model, config.qg_model) if reference else False
        self.model = self.model.to(self.device).eval()
        self.linears = OneDNNLinears(self.model)  # `cpu_matmul`
        self.tokens_processed = 0
        self.device_limits = device_limits("qg", self.device)  # the options' limits: per call
        self.shared = attach_shared_cross_attention(self.model)
        self.settings = fast or FastSettings()  # the fast path's, when a call asks for it
        self.gate = ExactnessGate()  # what this generator's checks proved, on this machine
        self._fast_paths: dict[FastSettings, FastQG] = {}

    @property
    def batch_size(self) -> int:
        """Most inputs per batch in this call (`qg_batch_size`, else the device's)."""
        return configured(self.config, "qg", self.device_limits)[0]

    @property
    def max_tokens(self) -> int:
        """Padded tokens per batch in this call (`qg_max_tokens`, else the device's)."""
        return configured(self.config, "qg", self.device_limits)[1]

    @property
    def fast(self) -> FastQG | None:
        """The fast path the options ask for now (`qg_decoder='fast'`), None for the reference path;
        `Q2OptionError` (this call refused, the generator usable) for a model other than a T5."""
        if self.config.qg_decoder != "fast":
            return None
        if self.shared is None:
            raise Q2OptionError(
                f"qg_decoder='fast' needs a T5 question generator; {self.model_id} is not one "
                "(use qg_decoder='reference', the default)."
            )
        path = self._fast_paths.get(self.settings)
        if path is None:
            path = self._fast_paths[self.settings] = FastQG(
                self.model, self.shared, self.settings, self._reference_search, self._environment, self.gate
            )
        return path

    def with_decoder(self, decoder: QGDecoder, fast: FastSettings | None = None) -> HFQuestionGenerator:
        """Another generator over the same loaded model, tokenizers and gate, by another beam-search
        path (`decoder` as `Q2Config.qg_decoder`; `fast`: the fast path's settings): comparisons' arms."""
        other = copy.copy(self)
        other.config = self.config.replace(qg_decoder=decoder)
        other.settings = fast or FastSettings()
        other._fast_paths = {}
        _ = other.fast  # refused here for a model other than a T5
        return other

    @property
    def decoder(self) -> str:
        """Which beam-search path the options ask for now: `fast` (a T5's) or `reference`."""
        return "fast" if self.config.qg_decoder == "fast" and self.shared is not None else "reference"

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

    def prompts(
        self,
        answers: Sequence[str],
        contexts: Sequence[str],
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[str]:
        """Each (answer, context)'s input text by this generator's `prompt` (`spans`: each answer's
        [start, end) in its context, read by "lmqg-highlight"; the paper's prompt has no use for them)."""
        if self.prompt == "q2":
            return [qg_input(a, c) for a, c in zip(answers, contexts)]
        where = list(spans) if spans is not None else [None] * len(answers)
        return [lmqg_input(a, c, s) for a, c, s in zip(answers, contexts, where)]

    def input_lengths(self, answers: Sequence[str], contexts: Sequence[str]) -> list[int]:
        """The tokens of each (answer, context)'s whole input, before any cut to
        `qg_max_input_tokens` (what `encode` would give without the limit)."""
        prompts = self.prompts(answers, contexts)
        if self.reference is not None:
            return [len(self.reference.t5_input(p)) for p in prompts]
        return [len(ids) for ids in self.tokenizer(prompts)["input_ids"]]

    def decode(self, ids: Sequence[int]) -> str:
        """A generated question's text, without the model's `question: ` prefix."""
        if self.reference is not None:
            return clean_question(self.reference.decode(ids, skip_special_tokens=True))
        return clean_question(self.tokenizer.decode(ids, skip_special_tokens=True))

    def _padded(self, inputs: list[list[int]], multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """A batch's encoder ids and mask: right padding to its longest input (rounded up to a
        `multiple`), masked (each input's encoder states are those of the input alone)."""
        width = _round_up(max(len(ids) for ids in inputs), multiple)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.tensor([x + [pad] * (width - len(x)) for x in inputs], device=self.device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in inputs], device=self.device)
        self.tokens_processed += int(ids.numel())
        return ids, mask

    def _rules(self, new_tokens: int | None) -> BeamRules:
        """3.2's beam-search settings of a batch (`new_tokens`: exactly that many tokens)."""
        c, generation, model = self.config, self.model.generation_config, self.model.config
        max_length = c.max_question_length if new_tokens is None else 1 + new_tokens
        min_length = (getattr(generation, "min_length", 0) or 0) if new_tokens is None else 1 + new_tokens
        return BeamRules(
            num_beams=c.num_beams,
            max_length=max_length,
            min_length=min_length,
            num_return_sequences=c.num_return_sequences,
            no_repeat_ngram_size=c.no_repeat_ngram_size or 0,
            early_stopping=bool(c.early_stopping),
            length_penalty=float(generation.length_penalty if generation.length_penalty is not None else 1.0),
            start_id=model.decoder_start_token_id,
            eos_id=model.eos_token_id,
            pad_id=model.pad_token_id,
        )

    def _reference_search(
        self, ids: torch.Tensor, mask: torch.Tensor, rules: BeamRules
    ) -> list[list[list[int]]]:
        """One batch's beam search by the reference path: 3.2's rules over 3.2's decoder step."""
        step = decoder_steps(self.model, ids, mask, rules.num_beams)
        return beam_search(step, len(ids), device=self.device, **vars(rules))

    def _greedy(self, ids: torch.Tensor, mask: torch.Tensor, new_tokens: int | None) -> list[list[list[int]]]:
        """Greedy decoding: transformers' own (the same rule as 3.2's)."""
        c = self.config
        limits = (
            {"max_length": c.max_question_length}
            if new_tokens is None
            else {"min_new_tokens": new_tokens, "max_new_tokens": new_tokens}
        )
        out = self.model.generate(input_ids=ids, attention_mask=mask, num_beams=1, do_sample=False, **limits)
        return [[row] for row in out.tolist()]

    def _environment(self) -> tuple:
        """What the exactness gate's keys hold besides the shapes, read at each use: device, dtype,
        threads, the Linear layers' kernel (this call's `cpu_matmul`) and the backend settings."""
        dtype = next(self.model.parameters()).dtype
        onednn = uses_onednn(self.config.cpu_matmul, self.device, dtype)
        return (
            str(self.device),
            str(dtype),
            torch.get_num_threads(),
            "onednn" if onednn else "default",
            backend_settings(self.device),
        )

    @torch.inference_mode()
    def generate_ids(
        self, prompts: Sequence[str], new_tokens: Sequence[int] | None = None
    ) -> list[list[list[int]]]:
        """The generated ids of each prompt's questions (best first). `new_tokens` (benchmarks):
        each batch generates exactly the largest of its prompts' numbers of tokens, in place of the
        configured length limit."""
        if not prompts:
            return []
        c = self.config
        fast = self.fast if c.decoding != "greedy" else None  # this call's path (refused here, first)
        inputs = self.encode(prompts)
        beams = 1 if c.decoding == "greedy" else c.num_beams
        multiple = GPU_WIDTH_MULTIPLE if self.device.type == "cuda" else 1
        order = plan_batches([len(ids) for ids in inputs], beams, self.batch_size, self.max_tokens, multiple)
        batches = [self._padded([inputs[i] for i in idx], multiple) for idx in order]
        forced = [None if new_tokens is None else max(new_tokens[i] for i in idx) for idx in order]
        out: list[list[list[int]]] = [[] for _ in inputs]
        with model_kernels(self.linears, c.cpu_matmul, self.device, self.model):
            if beams > 1 and fast is not None:
                results = fast.search(batches, [self._rules(n) for n in forced])
            else:
                results = []
                for (ids, mask), n in zip(batches, forced):
                    if beams == 1:
                        results.append(self._greedy(ids, mask, n))
                    else:
                        results.append(self._reference_search(ids, mask, self._rules(n)))
                    batch_done(sum(len(i) for i in order[: len(results)]), len(inputs))
        for idx, result in zip(order, results):
            for i, ids in zip(idx, result):
                out[i] = ids
        batch_done(len(inputs), len(inputs))
        return out

    @torch.inference_mode()
    def generate_batch_ids(self, inputs: Sequence[list[int]]) -> list[list[list[int]]]:
        """The questions' ids of encoder inputs (`encode`'s ids) in one padded batch, as one call of
        3.2's `generate` returned them."""
        fast = self.fast if self.config.decoding != "greedy" else None
        ids, mask = self._padded(list(inputs))
        with model_kernels(self.linears, self.config.cpu_matmul, self.device, self.model):
            if self.config.decoding == "greedy":
                return self._greedy(ids, mask, None)
            if fast is not None:
                return fast.search([(ids, mask)], [self._rules(None)])[0]
            return self._reference_search(ids, mask, self._rules(None))

    def generate(
        self,
        answers: Sequence[str],
        contexts: Sequence[str],
        new_tokens: Sequence[int] | None = None,
        spans: Sequence[tuple[int, int] | None] | None = None,
    ) -> list[list[str]]:
        """Each (answer, context)'s questions, best first (`spans`: see `prompts`)."""
        prompts = self.prompts(answers, contexts, spans)
        return [[self.decode(ids) for ids in beams] for beams in self.generate_ids(prompts, new_tokens)]

    def profile_notes(self) -> list[str]:
        """What the fast path did (its batches by path, its CUDA graphs), when it ran."""
        paths = list(self._fast_paths.values())
        graphs = [note for p in paths if p.graphs is not None for note in p.graphs.notes()]
        return graphs + (paths[0].notes() if paths else [])

    def describe(self) -> str:
        return f"{self.model_id}@{model_revision(self.model, self.model_id)}"
