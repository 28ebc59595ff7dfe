"""`q2 convert-nli`: the paper's AllenNLP NLI archive as a transformers model."""

from __future__ import annotations

import argparse
import os

from q2_metric.errors import Q2InputError


def cmd_convert_nli(args: argparse.Namespace) -> int:
    from q2_metric.frontend import guard
    from q2_metric.models.allennlp_convert import ArchiveError, convert_archive

    local_base = args.base_model if args.base_model and os.path.exists(args.base_model) else None
    guard(
        {"archive": args.archive, "--base-model": local_base}, {"out_dir": args.out_dir}, folders=["out_dir"]
    )
    try:
        out = convert_archive(args.archive, args.out_dir, base_model=args.base_model)
    except ArchiveError as err:
        raise Q2InputError(str(err)) from err
    print(f"Wrote a transformers NLI model to {out}; use it with --nli-model {out}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    conv = sub.add_parser(
        "convert-nli",
        help="turn the paper's AllenNLP RoBERTa NLI archive into a transformers model directory",
    )
    conv.add_argument("archive", help="e.g. snli_roberta-2020.06.09.tar.gz")
    conv.add_argument("out_dir")
    conv.add_argument(
        "--base-model",
        default=None,
        help="transformer config and tokenizer (default: the archive's model_name, roberta-large)",
    )
    conv.set_defaults(func=cmd_convert_nli)
