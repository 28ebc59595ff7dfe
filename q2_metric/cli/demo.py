"""`q2 demo`: score the bundled sample of the annotated WoW set, and say why each score."""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from q2_metric.cli.common import _signature_text, add_config_args, config_from_args
from q2_metric.config import Q2Config
from q2_metric.errors import Q2InputError
from q2_metric.progress import plural

if TYPE_CHECKING:
    from q2_metric.frontend import Outcome
    from q2_metric.results import ResponseScore

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
SAMPLE = DATA_DIR / "wow_sample.csv"
# `q2 demo --tiny` scores this many rows (of each system and label in turn).
TINY_ROWS = 6


def cmd_demo(args: argparse.Namespace) -> int:
    from q2_metric.display import loading_output, tiny_note
    from q2_metric.frontend import Item, check_models, model_words, score_items
    from q2_metric.io import read_rows
    from q2_metric.options import flag_name
    from q2_metric.progress import stage_progress
    from q2_metric.scorer import Q2Scorer

    quiet = args.quiet or args.no_progress

    def say(msg: str) -> None:
        if not quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.limit is not None and args.limit < 1:
        raise Q2InputError(f"--limit must be at least 1, got {args.limit}.")
    config = config_from_args(args, say=say)  # with --tiny (or Q2_TINY=1): the tiny models, built once
    tiny = tiny_note(config) is not None
    capped_by_tiny = tiny and args.limit is None
    if capped_by_tiny:
        args.limit = TINY_ROWS
    read = read_rows(args.input, encoding=args.encoding)
    for bad in read:
        if bad.error:
            print(f"q2: {args.input}: {bad.error}; row skipped", file=sys.stderr)
    rows = [r.fields for r in read if r.error is None]
    if tiny:  # a few of each system and label, in turn
        groups_of: dict[tuple[str, str], list[dict]] = {}
        for row in rows:
            groups_of.setdefault((row.get("system", "-"), row.get("label", "-")), []).append(row)
        rows = [r for turn in itertools.zip_longest(*groups_of.values()) for r in turn if r is not None]
    readable = len(rows)
    rows = rows[: args.limit]
    scorer = Q2Scorer(config)
    progress = None if quiet else stage_progress("Q²", leave=True)
    with model_words(flag_name(), tiny_hint="`make try` (`q2 demo --tiny`)"):
        check_models(
            scorer, spell=flag_name()
        )  # a missing model: one sentence, before anything else is printed
    with loading_output(args.verbose):
        say(
            f"Loading the models, then scoring {plural(len(rows), 'response')}"
            + (
                " with tiny random models..."
                if tiny
                else " (on a CPU with the paper's models this takes minutes)..."
            )
        )
        scorer.load()
        # --coref: the sample's history is its last user message (read with --coref only)
        items = [
            Item(
                f"response {i}",
                r["response"],
                r["knowledge"],
                history=([r["message"]] if r.get("message") else []) if args.coref else None,
            )
            for i, r in enumerate(rows)
        ]
        outcome = score_items(scorer, items, progress=progress)
    from q2_metric.display import figure, figures_text, for_terminal
    from q2_metric.frontend import system_figures

    def show(text: str, indent: int = 0) -> None:  # wrapped at word boundaries on a terminal
        print(for_terminal(text, indent))

    groups: dict[tuple[str, str], list[ResponseScore]] = {}
    for row, item in zip(rows, outcome.items):
        if item.score is not None:
            groups.setdefault((row.get("system", "-"), row.get("label", "-")), []).append(item.score)
    show(scored_line(len(rows), readable, args.input, capped_by_tiny, not_scored(outcome)) + "\n")
    print("Mean Q2 per system and human label (n: scored responses):")
    print(f"{'system':<10}{'label':<14}{'n':>4}{'mean Q2':>10}")
    for (system, label), scores in sorted(groups.items()):
        group = system_figures(scores)  # the system figures' rule: over the scored responses
        print(f"{system:<10}{label:<14}{group.num_scored:>4}{figure(group.q2, 3):>10}")
    print(
        f"\nEach response, and why it scored what it did:\n{'#':>3}  {'system':<8}{'label':<14}{'Q2':>6}  why"
    )
    for i, (row, item) in enumerate(zip(rows, outcome.items)):
        cells = f"{i:>3}  {row.get('system', '-'):<8}{row.get('label', '-'):<14}{figure(item.q2, 3):>6}  "
        show(cells + item.reason, indent=len(cells))  # a long reason goes on under its column
    # the questions behind the first responses that have any (a fallback is already explained above)
    explained = [
        (i, row, item.score)
        for i, (row, item) in enumerate(zip(rows, outcome.items))
        if item.score is not None and item.score.valid_questions
    ][: args.explain]
    for i, row, res in explained:
        show(f"\nThe valid questions of response {i}: {row['response']}")
        for t in res.valid_questions:
            show(
                f"  - {t.candidate!r}: {t.question!r} -> knowledge: "
                f"{t.knowledge_answer if t.knowledge_has_answer else '<no answer>'!r} "
                f"F1={t.f1:.2f} NLI={t.nli_label} score={t.score:.2f}",
                indent=4,
            )
    show(
        "\nSystem figures:\n"
        + figures_text(outcome.system, [i.score for i in outcome.items if i.score is not None]),
        indent=2,
    )
    show("\nSignature (how these scores were made):\n" + _signature_text(str(outcome.signature), args.short))
    if tiny:
        show("\n" + tiny_note(config, always=True))
        if args.coref:
            show(
                f"The coreference model was tiny and random too: the real one is "
                f"`hf download {Q2Config().coref_model}` (F-Coref, MIT; docs/coref.md)."
            )
    return 0


def not_scored(outcome: Outcome) -> dict[str, int]:
    """Why responses were not scored -> how many: each item the outcome does not count as scored
    (`Outcome.counts`: an empty one by its reason, "empty response" or "empty knowledge"; a bad one
    by its sentence), and a scored one the engine left without a number (no valid question with
    the fallback off), so that the rest are those the system figures are over."""
    from q2_metric.display import NOT_SCORED

    out: dict[str, int] = {}
    for item in outcome.items:
        if item.status == "scored" and not math.isnan(item.q2):
            continue
        why = item.reason.removeprefix(NOT_SCORED).rstrip(".") if item.status != "bad" else item.reason
        out[why] = out.get(why, 0) + 1
    return out


def scored_line(
    scored: int, readable: int, source: str, capped_by_tiny: bool, unscored: dict[str, int] | None = None
) -> str:
    """`Scored 6 of the 40 responses in FILE (...why...)` when fewer than all were scored, else
    `Scored 40 responses from FILE`; with responses the engine did not score (`unscored`: why ->
    how many), they are not counted as scored and the line says why.

    >>> scored_line(4, 4, "s.csv", False, {"empty response": 2})
    'Scored 2 of the 4 responses from s.csv; 2 not scored (empty response)'

    >>> scored_line(6, 40, "sample.csv", True)
    'Scored 6 of the 40 responses in sample.csv (with the tiny models, 6 by default: a few of each system and label in turn; --limit N scores more)'
    >>> scored_line(3, 40, "sample.csv", False)
    'Scored 3 of the 40 responses in sample.csv (--limit 3)'
    >>> scored_line(40, 40, "sample.csv", False)
    'Scored 40 responses from sample.csv'
    """
    if unscored:
        left = sum(unscored.values())
        taken = "" if scored >= readable else f" taken from {readable} (--limit {scored})"
        whys = ", ".join(f"{n} {why}" if len(unscored) > 1 else why for why, n in unscored.items())
        return f"Scored {scored - left} of the {plural(scored, 'response')}{taken} from {source}; {left} not scored ({whys})"
    if scored >= readable:
        return f"Scored {plural(scored, 'response')} from {source}"
    why = (
        f"with the tiny models, {TINY_ROWS} by default: a few of each system and label in turn; "
        "--limit N scores more"
        if capped_by_tiny
        else f"--limit {scored}"
    )
    return f"Scored {scored} of the {plural(readable, 'response')} in {source} ({why})"


def add_parser(sub: argparse._SubParsersAction) -> None:
    from q2_metric.cli.score import DefaultsShown  # every option's default, as in `q2 score --help`

    demo = sub.add_parser(
        "demo", help="score the bundled sample of the annotated WoW set", formatter_class=DefaultsShown
    )
    demo.add_argument(
        "--input",
        default=str(SAMPLE),
        help="CSV with response/knowledge columns (default: the bundled sample, q2_metric/data/wow_sample.csv)",
    )
    demo.add_argument(
        "--explain",
        type=int,
        default=3,
        help="list the valid questions of the first N responses that have any (default 3)",
    )
    demo.add_argument("--encoding", default="utf-8", help="text encoding of the input (default utf-8)")
    demo.add_argument("--limit", type=int, default=None, help="score only the first N responses")
    demo.add_argument("--no-progress", action="store_true", help="no progress bars")
    demo.add_argument("--quiet", action="store_true", help="no progress bars or status messages")
    demo.add_argument("--short", action="store_true", help="print the short form of the signature")
    demo.add_argument("--verbose", action="store_true", help="show transformers' model-loading output")
    add_config_args(demo)
    demo.set_defaults(func=cmd_demo)
