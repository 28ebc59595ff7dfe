"""`q2 score`: score a table file (resumably, on Ray with --ray)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from q2_metric.cli.common import _signature_text, add_config_args, config_from_args
from q2_metric.errors import Q2InputError
from q2_metric.progress import plural

if TYPE_CHECKING:
    from q2_metric.corpus.files import ScoreReport


def _threshold(text: str) -> float:
    """argparse type of --threshold: a number in [0, 1]."""
    from q2_metric.display import check_threshold

    try:
        return check_threshold(float(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            str(err).replace("could not convert string to float: ", "not a number: ")
        ) from None


def print_profile(profile: list) -> None:
    """`--profile`: time, model tokens and model FLOPs per engine stage, on stderr."""
    from q2_metric.progress import format_profile

    if not profile:
        print("q2: profile: nothing was scored in this process (cached rows, or --ray)", file=sys.stderr)
        return
    print(
        "Time per stage (this run; model loading counts in the stage that first uses the model):\n"
        + format_profile(profile),
        file=sys.stderr,
    )


def cmd_score(args: argparse.Namespace) -> int:
    from q2_metric.corpus.files import score_file
    from q2_metric.scorer import Q2Scorer

    if args.chunk_size < 1:
        raise Q2InputError(f"--chunk-size must be at least 1, got {args.chunk_size}.")
    if args.history_col and (not args.coref or args.ray is not None):
        raise Q2InputError(
            "--history-col is read by --coref only, and not with --ray; add --coref (without --ray)."
        )
    op = None
    if args.operating_point is not None:
        from q2_metric.frontend import guard
        from q2_metric.options.operating_point import read_operating_point

        if args.threshold is not None:
            raise Q2InputError("--threshold and --operating-point both set the threshold; give one of them.")
        outputs = {"-o/--output": args.output, "--steps": args.steps, "--spans": args.spans}
        guard({"--operating-point": args.operating_point}, {**outputs, "--summary": args.summary})
        op = read_operating_point(args.operating_point)  # before any model work
    score: Callable[..., ScoreReport] = score_file
    extra: dict[str, Any] = {}
    if args.ray is not None:
        from q2_metric.corpus.ray import RayNotInstalled, import_ray, score_file_ray

        try:
            import_ray()
        except RayNotInstalled as err:
            print(f"q2: {err}", file=sys.stderr)
            return 2
        score, extra = (
            score_file_ray,
            dict(address=args.ray or None, workers=args.workers, gpus_per_worker=args.gpus_per_worker),
        )
    elif args.workers is not None or args.gpus_per_worker:
        print("q2: --workers and --gpus-per-worker need --ray", file=sys.stderr)
        return 2
    from q2_metric.corpus.files import summary_dict
    from q2_metric.display import figure, figures_text, for_terminal, loading_output, tiny_note_for
    from q2_metric.frontend import model_words
    from q2_metric.options import flag_name

    if args.ray is not None:
        extra["verbose"] = args.verbose
    with loading_output(args.verbose), model_words(flag_name(), tiny_hint="`--tiny`"):
        report = score(
            Q2Scorer(config_from_args(args)),
            args.input,
            args.output,
            response_col=args.response_col,
            knowledge_col=args.knowledge_col,
            prefix=args.prefix,
            steps_path=args.steps,
            summary_path=args.summary,
            **({"spans_path": args.spans} if args.spans else {}),
            cache_dir=None if args.no_cache else args.cache_dir,
            chunk_size=args.chunk_size,
            progress=not (args.no_progress or args.quiet),
            encoding=args.encoding,
            allow_empty=args.allow_empty,
            multiline=args.multiline,
            threshold=args.threshold,
            **({"operating_point": op} if op is not None else {}),
            **({"history_col": args.history_col} if args.history_col else {}),
            **extra,
        )
    for error in report.bad_rows:
        print(f"q2: {args.input}: {error}; row skipped", file=sys.stderr)
    from q2_metric.telemetry.events import emit_evaluations

    # with OpenTelemetry configured: one gen_ai.evaluation.result event per scored row
    emit_evaluations(report.responses, report.decisions["threshold"] if report.decisions else None)
    if args.profile:
        print_profile(report.profile)
    done = done_line(report, args.output)
    s = report.system
    if args.format == "json":  # the figures and signature on stdout, strict JSON; the rest on stderr
        if not args.quiet:
            print(done, file=sys.stderr)
        note = tiny_note_for(report.signature)
        tiny = {"note": note} if note else {}
        print(
            json.dumps(
                {**summary_dict(report), "output": str(args.output), **tiny}, indent=2, allow_nan=False
            )
        )
    elif args.score_only:
        print(figure(s.q2))
    elif args.quiet:  # only errors: the scores are in the output, the figures in --summary
        pass
    else:  # wrapped at word boundaries on a terminal
        print(for_terminal(done))
        if report.decisions:
            d = report.decisions
            print(
                for_terminal(
                    f"At threshold {d['threshold']:g}: {d['num_consistent']} consistent, "
                    f"{d['num_inconsistent']} inconsistent (consistent iff Q2 > threshold)"
                )
            )
        if report.operating_point:
            o = report.operating_point
            print(
                f"Operating point: {o['rule']} on {o['dataset']} ({args.operating_point}, op:{o['signature']})"
            )
        print(for_terminal(figures_text(s, report.responses), indent=2))
        print(_signature_text(report.signature, args.short))
        if tiny_note_for(report.signature):
            print(for_terminal(tiny_note_for(report.signature) or ""))
    return 3 if report.num_bad else 0


def done_line(report: ScoreReport, output: str | Path) -> str:
    """`Scored 150/151 rows (149 now, 0 from the cache) -> out.csv`, then where every other row went."""
    good = report.num_rows - report.num_bad
    repeats = good - report.num_cached - report.num_scored_now
    line = (
        f"Scored {good}/{plural(report.num_rows, 'row')} ({report.num_scored_now} now, {report.num_cached} "
        f"from the cache) -> {output}"
    )
    if repeats:  # the malformed rows are reported one by one on stderr
        line += (
            f"\n{repeats} {'row repeats' if repeats == 1 else 'rows repeat'} the (response, knowledge) pair "
            f"of an earlier row and {'gets' if repeats == 1 else 'get'} its score (each pair is scored once)."
        )
    return line


class DefaultsShown(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already gives it ("(default...")."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            not action.option_strings
            or action.required
            or action.default is argparse.SUPPRESS
            or re.search(r"\(default\b", text)
        ):
            return text
        value = action.default
        if isinstance(action, argparse.BooleanOptionalAction) or value is True or value is False:
            shown = "on" if value else "off"
        else:
            shown = "not set" if value is None else "empty" if value == "" else "%(default)s"
        return f"{text} (default: {shown})" if text else f"default: {shown}"


class ScoreHelp(DefaultsShown, argparse.RawDescriptionHelpFormatter):
    """`DefaultsShown`, with the description's examples kept as written."""


DESCRIPTION = """\
Score each response of a table against its knowledge with Q²: one score a row.

examples:
  q2 score responses.csv -o scores.csv --tiny  # try it now (meaningless scores)
  q2 score responses.csv -o scores.csv         # the paper's models
  q2 score rag.jsonl -o out.jsonl --knowledge-col contexts --threshold 0.5
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from q2_metric.cli.common import add_option_flags

    sc = sub.add_parser(
        "score",
        help="score a CSV, JSONL, Parquet or datasets-on-disk file",
        description=DESCRIPTION,
        usage="q2 score INPUT -o OUTPUT [options]",
        formatter_class=ScoreHelp,
    )
    sc.add_argument("input", help="CSV, JSONL, Parquet, or a folder written by Dataset.save_to_disk")
    sc.add_argument(
        "-o",
        "--output",
        required=True,
        help="scores: .csv, .jsonl or .parquet (with --steps and --summary, written all-or-nothing)",
    )
    add_option_flags(sc, ["tiny"])  # near the top: what a first try needs
    sc.add_argument("--steps", help="also write one row per question here")
    sc.add_argument(
        "--spans",
        help="also write each row's spans here (.jsonl): every answer candidate at its "
        "character offsets in the response, its question, answers and span score, "
        "and the unsupported ones (span score below 1)",
    )
    sc.add_argument("--summary", help="write the system figures and signature as JSON here")
    sc.add_argument("--response-col", default="response", help="column of the responses (default: response)")
    sc.add_argument(
        "--knowledge-col",
        default="knowledge",
        help="column of the knowledge they are checked against (default: knowledge)",
    )
    sc.add_argument(
        "--history-col",
        default=None,
        help="with --coref: the column of each response's dialogue history, oldest turn first, "
        "turns joined by ' ||| ' (or a list of texts in JSONL/Parquet)",
    )
    sc.add_argument("--prefix", default="", help="prefix of the score columns (e.g. dodeca_)")
    sc.add_argument("--encoding", default="utf-8", help="text encoding of a CSV/JSONL input (default utf-8)")
    sc.add_argument("--allow-empty", action="store_true", help="an input without data rows is not an error")
    sc.add_argument(
        "--multiline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="CSV is read as RFC 4180: a quoted field may hold line breaks (default); with "
        "--no-multiline every row is one line and such a field is reported as a stray quote",
    )
    sc.add_argument(
        "--cache-dir",
        default=".q2_cache",
        help="resumable cache, keyed by the options and each model's identity",
    )
    sc.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    sc.add_argument("--chunk-size", type=int, default=64, help="responses per engine call (and cache write)")
    sc.add_argument("--no-progress", action="store_true", help="no progress bars")
    sc.add_argument(
        "--quiet",
        action="store_true",
        help="print only errors: no progress, no figures or signature (they are in the output and "
        "--summary); -b and --format json still print what they ask for",
    )
    sc.add_argument(
        "--verbose",
        action="store_true",
        help="show transformers' model-loading output and, with --ray, Ray's own logs",
    )
    sc.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: the system figures and signature (full and short) as JSON on stdout",
    )
    sc.add_argument("-b", "--score-only", action="store_true", help="print only the system Q² score")
    sc.add_argument("--short", action="store_true", help="print the short form of the signature")
    sc.add_argument(
        "--threshold",
        type=_threshold,
        default=None,
        metavar="T",
        help="add a 'decision' column (consistent iff Q2 > T; a score <= T is inconsistent, as in the paper) and the counts; T goes into the "
        "signature (tune T with `q2 meta-eval --calibrate DEV:TEST`)",
    )
    sc.add_argument(
        "--operating-point",
        default=None,
        metavar="FILE",
        help="decide at the threshold of an operating-point file that `q2 calibrate` wrote (as "
        "--threshold does); the signature and the summary name the file (its rule and digest)",
    )
    sc.add_argument(
        "--profile",
        action="store_true",
        help="print time, model tokens and model FLOPs per stage (to stderr)",
    )
    sc.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="score on Ray Data (needs q2-metric[ray]), resumably, with --chunk-size responses "
        "per worker call: the cluster at ADDRESS (auto, HOST:6379, ray://HOST:10001), "
        "else $RAY_ADDRESS, else a new local Ray with this machine's CPUs",
    )
    sc.add_argument(
        "--workers",
        type=int,
        default=None,
        help="with --ray: workers, each loading one model set (default: one per node, or "
        "one per --gpus-per-worker GPUs)",
    )
    sc.add_argument("--gpus-per-worker", type=float, default=0, help="with --ray: GPUs for each worker")
    add_config_args(sc, leave_out=("tiny",))
    sc.set_defaults(func=cmd_score)
