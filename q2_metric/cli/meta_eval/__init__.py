"""`q2 meta-eval`: the paper's meta-evaluation and the benchmark on labelled sets."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from q2_metric.errors import Q2InputError

SPLITS_ARGS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")


def cmd_meta_eval(args: argparse.Namespace) -> int:
    import json

    from q2_metric.io import commit_report
    from q2_metric.meta.evaluation import SPLITS, AnnotatedSet, run_meta_eval
    from q2_metric.meta.report import render_latex, render_markdown
    from q2_metric.meta.scores import parse_score_spec, write_template
    from q2_metric.options import json_safe

    if getattr(args, "limit", None) is not None and not (args.dataset or args.ladder or args.control):
        raise Q2InputError(  # never ignored in silence
            "--limit applies to --dataset, --ladder and --control; the paper's meta-evaluation and "
            "--span-gold read every row."
        )
    if args.span_gold or args.span_pred:  # span-level evaluation (issue 43)
        return cmd_span_eval(args)
    if args.dataset:  # the benchmark on labelled sets
        from q2_metric.cli.meta_eval.benchmark import cmd_benchmark

        return cmd_benchmark(args)
    if args.ladder or args.control:  # Table 7 / Table 8 of the first arXiv version
        from q2_metric.cli.meta_eval.ladder import cmd_ladder

        return cmd_ladder(args)
    from q2_metric.frontend import guard

    overrides = {name: getattr(args, name) for name in (*SPLITS, "cross")}
    # the inputs are the files read (the output folder may be --annotated-dir or lie in it) and the
    # NLI model's folder; every file written is checked against them
    read = {
        f"--{name.replace('_', '-')}": path
        or (
            args.annotated_dir
            and os.path.join(args.annotated_dir, "cross_annotation.csv" if name == "cross" else f"{name}.csv")
        )
        for name, path in overrides.items()
    }
    inputs = {
        **read,
        "--nli-model": args.nli_model,
        **{f"--scores {text}": text.partition("=")[2].split(":")[0] for text in args.scores},
    }
    inputs = {k: v for k, v in inputs.items() if v and os.path.exists(v)}
    if args.write_template:
        from q2_metric.meta.scores import TEMPLATE_FILE

        guard(inputs, {"--write-template": os.path.join(args.write_template, TEMPLATE_FILE)})
    else:
        guard({"--nli-model": inputs.get("--nli-model")}, {"--out-dir": args.out_dir}, folders=["--out-dir"])
        guard(
            inputs,
            {
                f"--out-dir ({name})": os.path.join(args.out_dir, name)
                for name in ("meta_eval.json", "meta_eval.md", "meta_eval.tex")
            },
        )
    data = AnnotatedSet.from_dir(args.annotated_dir, **overrides)
    if args.write_template:
        _keys, _, records = data.template()
        path = write_template(args.write_template, records)
        print(
            f"Wrote {len(records)} rows (one per distinct response/knowledge pair) to {path}; score every "
            "row, then pass --scores NAME=FILE[:COLUMN] (FILE with the template's 'id' column, or its "
            "'response' and 'knowledge' columns; rows in any order)."
        )
        return 0
    if args.auc_draws < 1:
        raise Q2InputError(f"--auc-draws must be at least 1, got {args.auc_draws}.")
    extra = [parse_score_spec(text) for text in args.scores]
    nli = None
    if args.nli_model:
        from q2_metric.meta.baselines import load_nli

        nli = load_nli(args.nli_model, args.device)
    out = Path(args.out_dir)
    figures: dict[str, bytes] = {}
    report = run_meta_eval(
        data,
        prefix=args.prefix,
        baselines_only=args.baselines_only,
        threshold=args.threshold,
        seed=args.seed,
        repetitions=args.repetitions,
        auc_draws=args.auc_draws,
        extra=extra,
        nli=nli,
        bertscore=not args.no_bertscore,
        figures=figures,
        progress=lambda msg: print(f"q2 meta-eval: {msg}", file=sys.stderr),
    )
    markdown, latex = render_markdown(report), render_latex(report)

    commit_report(
        out,
        [
            ("meta_eval.json", lambda f: json.dump(json_safe(report.to_dict()), f, indent=2)),
            ("meta_eval.md", lambda f: f.write(markdown)),
            ("meta_eval.tex", lambda f: f.write(latex)),
        ],
        figures,
    )
    print(markdown)
    print(
        f"Wrote meta_eval.md, meta_eval.tex, meta_eval.json and {len(figures)} plots to {out}",
        file=sys.stderr,
    )
    return 0


def cmd_span_eval(args: argparse.Namespace) -> int:
    """`q2 meta-eval --span-gold GOLD --span-pred SPANS`: Q²'s unsupported spans against gold spans."""
    from q2_metric.frontend import guard
    from q2_metric.meta.spans import render_span_markdown, span_report, write_span_report

    if not (args.span_gold and args.span_pred):
        raise Q2InputError(
            "--span-gold and --span-pred go together: the gold file and the spans file that "
            "`q2 score GOLD --spans SPANS.jsonl` wrote from it."
        )
    guard(
        {"--span-gold": args.span_gold, "--span-pred": args.span_pred},
        {
            f"--out-dir ({name})": os.path.join(args.out_dir, name)
            for name in ("span_eval.json", "span_eval.md")
        },
    )
    report = span_report(args.span_gold, args.span_pred, args.span_shape)
    write_span_report(Path(args.out_dir), report)
    print(render_span_markdown(report), end="")
    print(f"Wrote span_eval.json and span_eval.md to {args.out_dir}", file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from q2_metric.meta.spans import SHAPES

    me = sub.add_parser(
        "meta-eval",
        help="the paper's meta-evaluation (Tables 2-4) and TRUE-style ROC AUC "
        "on the annotated WoW set, with any metric's scores beside Q²",
    )
    me.add_argument(
        "--annotated-dir",
        help="folder with the four split CSVs and cross_annotation.csv "
        "(scored by `q2 score` unless --baselines-only)",
    )
    for name in SPLITS_ARGS:
        me.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            default=None,
            help=f"{name}.csv (default: in --annotated-dir)",
        )
    me.add_argument("--cross", default=None, help="cross_annotation.csv with dodeca_q2 and memnet_q2 columns")
    me.add_argument("--baselines-only", action="store_true", help="no Q² columns needed: overlap, BLEU, ...")
    me.add_argument("--prefix", default="", help="prefix of the Q² columns in the split files")
    me.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="a score <= threshold is inconsistent, above it consistent (the paper's rule; as q2 score --threshold)",
    )
    me.add_argument(
        "--seed", type=int, default=0, help="seed of both bootstraps (Table 4, ROC AUC intervals)"
    )
    me.add_argument("--repetitions", type=int, default=1000, help="Table 4 bootstrap repetitions")
    me.add_argument(
        "--auc-draws",
        type=int,
        default=1000,
        help="bootstrap resamples behind each ROC AUC interval of the TRUE table",
    )
    me.add_argument(
        "--scores",
        action="append",
        default=[],
        metavar="NAME=FILE[:COLUMN][:lower][:LO..HI]",
        help="add a metric to every table (repeatable): CSV, JSONL or Parquet with one score per "
        "annotated response, matched by the 'id' of --write-template's template or by its "
        "'response' and 'knowledge' text (never by row order); COLUMN defaults to 'score'; 'lower' if lower means more "
        "consistent; LO..HI the score range (default 0..1)",
    )
    me.add_argument(
        "--write-template",
        metavar="DIR",
        default=None,
        help="write DIR/meta_eval_template.csv (the annotated responses to score) and stop",
    )
    me.add_argument("--nli-model", default=None, help="also run the end-to-end NLI baseline with this model")
    me.add_argument("--no-bertscore", action="store_true", help="skip the BERTScore baseline")
    me.add_argument("--device", default="auto")
    me.add_argument(
        "--out-dir",
        default="meta_eval",
        help="folder of the tables and figures (default: meta_eval, which git ignores in this repository)",
    )
    sp = me.add_argument_group("span-level evaluation (--span-gold)")
    sp.add_argument(
        "--span-gold",
        default=None,
        metavar="FILE",
        help="gold unsupported spans, JSON lines: RAGTruth's shape (response, labels[start, end]) "
        "or LettuceDetect's (prompt, answer, labels[start, end])",
    )
    sp.add_argument(
        "--span-pred",
        default=None,
        metavar="SPANS.jsonl",
        help="Q²'s spans of the same file, from `q2 score GOLD --spans SPANS.jsonl`",
    )
    sp.add_argument(
        "--span-shape",
        default="auto",
        choices=("auto", *SHAPES),
        help="the gold file's shape (auto: LettuceDetect when rows have 'answer' and no 'response')",
    )
    from q2_metric.cli.meta_eval.benchmark import add_benchmark_args
    from q2_metric.cli.meta_eval.ladder import add_ladder_args

    add_benchmark_args(me)
    add_ladder_args(me)
    me.set_defaults(func=cmd_meta_eval)
