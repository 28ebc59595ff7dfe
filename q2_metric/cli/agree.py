"""`q2 agree`: how far a fast configuration moves Q² from the paper's, on the user's own pairs
(`q2_metric.meta.agreement`)."""

from __future__ import annotations

import argparse
import json
import sys

from q2_metric.cli.common import add_config_args, config_from_args
from q2_metric.errors import OutputPathError, Q2InputError


def _fast_option(text: str) -> tuple[str, str]:
    """argparse type of --fast: KEY=VALUE."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. dtype=bfloat16), got {text!r}")
    return key.strip().replace("-", "_"), value.strip()


def cmd_agree(args: argparse.Namespace) -> int:
    from q2_metric import io
    from q2_metric.display import loading_output, tiny_note
    from q2_metric.frontend import configure, guard, model_words
    from q2_metric.meta.agreement import compare
    from q2_metric.meta.datasets import label_format, label_problem, one_class_problem
    from q2_metric.options import flag_name, json_safe, option_from_text

    if not args.fast:
        raise Q2InputError(
            "q2 agree needs at least one --fast KEY=VALUE (e.g. --fast dtype=bfloat16 or "
            "--fast quantize=int8)."
        )
    base = config_from_args(args)
    spell = lambda name: f"--fast {name}"  # noqa: E731 - errors name the option as it was typed
    fast_options = {name: option_from_text(name, value, spell) for name, value in args.fast}
    base_options = {name: getattr(base, name) for name in base.to_dict()}
    try:
        fast = configure({**base_options, **fast_options}, spell=flag_name())
    except ValueError as err:
        raise Q2InputError(str(err)) from None
    guard(
        {"input": args.input}, {"-o/--output": args.output, "--per-response": args.per_response}, config=base
    )
    if args.per_response:
        io.check_table_suffix(args.per_response, "--per-response")
    if args.output and not str(args.output).lower().endswith(".json"):
        raise OutputPathError(
            f"The output path '{args.output}' (-o/--output) must end in .json: the report is written as JSON."
        )
    rows = io.read_rows(args.input, args.response_col, args.knowledge_col, encoding=args.encoding)
    labels = None
    good, bad = [], []
    if args.label_col:
        # the benchmark reader's rule (meta.datasets): its formats' allowed labels, else the custom one
        columns = list(dict.fromkeys(k for r in rows for k in r.fields))
        fmt = label_format(
            columns, args.response_col, args.knowledge_col, args.label_col, args.consistent_label
        )
        labels = []
    for row in rows:
        if not row.error and args.label_col:
            value = row.fields.get(args.label_col)
            problem = label_problem(fmt, "" if value is None else str(value).strip())
            if problem is not None:
                row.error = f"line {row.line}: field '{args.label_col}' (--label-col) {problem}"
            else:
                labels.append(int(str(value).strip() in fmt.consistent))
        if row.error:
            print(f"q2: {args.input}: {row.error}; row skipped", file=sys.stderr)
            bad.append(row)
        else:
            good.append(row)
    if not good:
        raise Q2InputError(f"The input file '{args.input}' has no readable row to compare.")
    responses = [r.fields[args.response_col] for r in good]
    knowledge = [r.fields[args.knowledge_col] for r in good]
    with loading_output(args.verbose), model_words(flag_name(), tiny_hint="`--tiny`"):
        report = compare(responses, knowledge, fast=fast, base=base, labels=labels, threshold=args.threshold)
    lines = [row.line for row in good]
    data = report.to_dict()
    # every row of the input is accounted for, as q2 score's summary does: scored by the base, empty
    # (unscored by the base), bad (skipped, with its sentence)
    scored = sum(r["base_q2"] is not None and r["base_q2"] == r["base_q2"] for r in data["responses"])
    data.update(
        num_scored=scored,
        num_skipped=len(good) - scored,
        num_bad_rows=len(bad),
        bad_rows=[{"line": row.line, "error": row.error} for row in bad],
    )
    if args.per_response:
        columns = [
            "line",
            "base_q2",
            "fast_q2",
            "change",
            "base_decision",
            "fast_decision",
            "flipped",
            "questions_differ",
            "questions_compared",
            "answers_differ",
            "answers_compared",
            "labels_differ",
            "labels_compared",
            "error",
        ]
        records = [
            {"line": lines[i], **{c: v for c, v in r.items() if c in columns}, "error": None}
            for i, r in enumerate(data["responses"])
        ]
        records += [{**dict.fromkeys(columns), "line": row.line, "error": row.error} for row in bad]
        records.sort(key=lambda r: r["line"])
        io.write_table(args.per_response, json_safe(records), columns)
    if args.output:
        io.atomic_write(
            args.output, lambda f: f.write(json.dumps(json_safe(data), indent=2, allow_nan=False) + "\n")
        )
    print(report.text())
    one_class = one_class_problem(labels or [], fmt) if args.label_col else None
    if one_class is not None:  # why the ROC AUC reads n/a
        print(f"ROC AUC n/a: {one_class}")
    if tiny_note(base):
        print(tiny_note(base))
    if bad:
        print(f"{len(bad)} bad row(s) skipped (named above on stderr).")
    return 3 if bad else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from q2_metric.cli.score import DefaultsShown, _threshold

    ag = sub.add_parser(
        "agree",
        formatter_class=DefaultsShown,
        help="score a file with the paper's configuration and a faster one and report how far "
        "apart they are (questions, answers, NLI labels, scores, decisions, speed)",
    )
    ag.add_argument("input", help="CSV, JSONL, Parquet or datasets-on-disk file (as q2 score reads it)")
    ag.add_argument(
        "--fast",
        type=_fast_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the fast configuration, over the base's (the engine flags below, "
        "default the paper's): e.g. --fast dtype=bfloat16, --fast quantize=int8; repeatable",
    )
    ag.add_argument("-o", "--output", default=None, help="write the whole report as JSON here")
    ag.add_argument(
        "--per-response",
        default=None,
        help="write one row per response (.csv, .jsonl or .parquet): both scores and decisions, what differs",
    )
    ag.add_argument("--response-col", default="response", help="column of the responses")
    ag.add_argument("--knowledge-col", default="knowledge", help="column of the knowledge")
    ag.add_argument(
        "--label-col",
        default=None,
        help="column of gold labels: adds each configuration's ROC AUC and balanced accuracy "
        "(TRUE's 'label', BEGIN's 'begin_label' or 'gold label' read as the benchmark does)",
    )
    ag.add_argument(
        "--consistent-label",
        action="append",
        default=None,
        metavar="VALUE",
        help="a --label-col value meaning consistent (default: the benchmark format's, else 1)",
    )
    ag.add_argument(
        "--threshold",
        type=_threshold,
        default=0.5,
        metavar="T",
        help="decisions compared at T (inconsistent iff Q2 <= T)",
    )
    ag.add_argument("--encoding", default="utf-8", help="text encoding of a CSV/JSONL input")
    ag.add_argument("--verbose", action="store_true", help="show transformers' model-loading output")
    add_config_args(ag)
    ag.set_defaults(func=cmd_agree)
