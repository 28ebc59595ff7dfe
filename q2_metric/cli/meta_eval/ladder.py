"""`q2 meta-eval --ladder` and `--control random-knowledge`: the flags and the command of the first
arXiv version's Table 7 and Table 8 (the rows and tables themselves: `q2_metric.meta.ladder`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from q2_metric.cli.common import add_option_flags
from q2_metric.config import Q2Config
from q2_metric.meta.ladder import SPLITS, control_table, ladder_table, run_control, run_ladder


def add_ladder_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Table 7 ladder and Table 8 control (docs/coref.md)")
    g.add_argument(
        "--ladder",
        action="store_true",
        help="score the split files four ways: base, +filter personal, +top-k (k=5), +coreference",
    )
    g.add_argument(
        "--control",
        choices=("random-knowledge",),
        default=None,
        help="score the split files against knowledge of another turn / another dialogue",
    )
    add_option_flags(g, ("tiny",))
    g.add_argument(
        "--limit",
        type=int,
        default=None,
        help="first N rows of each split (--ladder, --control) or of each --dataset (default all)",
    )
    add_option_flags(g, ("coref_model",), spell=lambda name: "the +coreference row")  # its `{coref}`


def cmd_ladder(args: argparse.Namespace) -> int:
    """`q2 meta-eval --ladder / --control random-knowledge`: print the tables."""
    from q2_metric.errors import Q2InputError
    from q2_metric.meta.evaluation import read_split
    from q2_metric.scorer import Q2Scorer

    def say(msg: str) -> None:
        print(f"q2 meta-eval: {msg}", file=sys.stderr, flush=True)

    if args.limit is not None and args.limit < 1:
        raise Q2InputError(f"--limit must be at least 1, got {args.limit}.")
    from q2_metric.frontend import guard

    out = Path(args.out_dir)
    outputs = {
        f"--out-dir ({name})": out / name
        for name, run in (("ladder.md", args.ladder), ("control.md", args.control))
        if run
    }
    paths = {
        f"--{name.replace('_', '-')}": getattr(args, name, None)
        or (Path(args.annotated_dir) / f"{name}.csv" if args.annotated_dir else None)
        for name in SPLITS
    }
    config = _config(args, reads=paths)
    # before any model work; the output folder may be the annotated folder (only the files read count)
    guard(paths, outputs, config=config)
    guard({}, {"--out-dir": out}, config=config, folders=["--out-dir"])
    splits = {}
    for name in SPLITS:
        path = getattr(args, name, None) or (
            Path(args.annotated_dir) / f"{name}.csv" if args.annotated_dir else None
        )
        if path is None:
            raise Q2InputError(
                f"--ladder and --control need the split files: pass --annotated-dir or --{name.replace('_', '-')}."
            )
        rows = read_split(path)[: args.limit]
        for i, r in enumerate(rows, 1):
            missing = [c for c in ("response", "knowledge", "message", "episode_idx", "round") if c not in r]
            if missing:
                raise Q2InputError(f"{path}: column '{missing[0]}' is missing (row {i}).")
        splits[name] = rows
    scorer = Q2Scorer(config)
    scorer.reconfigure(config.replace(coref=True))
    scorer.check_models()  # every model, the coreference one included, before any work
    scorer.reconfigure(config)
    texts = {}
    from q2_metric.display import tiny_note

    tiny = tiny_note(config)
    note = f"\n{tiny}\n" if tiny else ""
    if args.ladder:
        texts["ladder.md"] = (
            "# Table 7 (first arXiv version): each row adds one step to the previous one\n\n"
            + ladder_table(run_ladder(scorer, splits, say))
            + "\n"
            + note
        )
        print(texts["ladder.md"])
    if args.control:
        scorer.reconfigure(config)
        texts["control.md"] = (
            f"# Table 8 (first arXiv version): knowledge from elsewhere, seed {args.seed}\n\n"
            + control_table(run_control(scorer, splits, args.seed, say))
            + "\n"
            + note
        )
        print(texts["control.md"])
    from q2_metric.io import commit_report

    commit_report(out, [(name, _writer(text)) for name, text in texts.items()], {})
    say(f"wrote {' and '.join(texts)} to {out}")
    return 0


def _config(args: argparse.Namespace, reads: dict | None = None) -> Q2Config:
    """The ladder's configuration through the one options path; the coreference model is provided
    too (the +coreference row turns `coref` on), so the models stay loaded across the rows."""
    from q2_metric.frontend import configure
    from q2_metric.options import flag_name

    opts = dict(
        qg_model=args.qg_model,
        qa_model=args.qa_model,
        nli_model=args.nli_model,
        coref_model=args.coref_model,
        device=args.device,
        coref=True,
        language=getattr(args, "language", None),
        model_sets=getattr(args, "model_sets", None),
    )
    return configure(opts, spell=flag_name(), tiny=args.tiny or None, reads=reads).replace(coref=False)


def _writer(text: str) -> Callable[[TextIO], object]:
    return lambda f: f.write(text)
