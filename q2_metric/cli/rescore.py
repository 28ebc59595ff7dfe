"""`q2 rescore LOG`: Q² of the replies in a saved lm-eval samples file or Inspect log (`corpus.logs`)."""

from __future__ import annotations

import argparse
import json
import sys

from q2_metric.cli.common import _signature_text, add_config_args, config_from_args


def cmd_rescore(args: argparse.Namespace) -> int:
    from q2_metric.corpus.logs import in_log_words, rescore_log
    from q2_metric.display import figures_text, loading_output, tiny_note_for
    from q2_metric.frontend import model_words
    from q2_metric.options import flag_name
    from q2_metric.progress import StageTotals
    from q2_metric.scorer import Q2Scorer

    stages = None if args.quiet else StageTotals("Q²")
    with loading_output(args.verbose), model_words(flag_name(), tiny_hint="`--tiny`"):
        report = rescore_log(
            Q2Scorer(config_from_args(args)),
            args.log,
            args.output,
            args.summary,
            response_field=args.response_field,
            knowledge_field=args.knowledge_field,
            history_field=args.history_field,
            chunk_size=args.chunk_size,
            progress=stages,
        )
    if stages is not None:
        stages.close()
    for item in report.outcome.items:
        if item.status == "bad":
            print(
                f"q2: {args.log}: {(in_log_words(item.error, report.fields) or '').rstrip('.')}; sample skipped",
                file=sys.stderr,
            )
    data, counts = report.summary_data, report.outcome.counts
    done = (
        f"Rescored {counts['scored']}/{data['num_samples']} samples of the {report.kind} log "
        f"({counts['empty']} empty, {counts['bad']} bad; reply '{report.fields['response']}', knowledge "
        f"'{report.fields['knowledge']}') -> {report.output}, {report.summary}"
    )
    if args.format == "json":
        if not args.quiet:
            print(done, file=sys.stderr)
        print(json.dumps(data, indent=2, allow_nan=False))
    else:
        print(done)
        print(
            f"{figures_text(report.outcome.system, [i.score for i in report.outcome.items if i.score is not None])}\n{_signature_text(data['signature'], args.short)}"
        )
        note = tiny_note_for(data["signature"])
        if note:
            print(note)
    return 3 if counts["bad"] else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    from q2_metric.cli.score import DefaultsShown

    rs = sub.add_parser(
        "rescore",
        formatter_class=DefaultsShown,
        help="score the replies of a saved lm-eval --log_samples file or Inspect log (the log is "
        "never changed)",
    )
    rs.add_argument(
        "log", help="lm-eval samples file (samples_<task>_<date>.jsonl) or Inspect log (.eval, .json)"
    )
    rs.add_argument(
        "-o",
        "--output",
        default=None,
        help="one JSON line per sample: status, q2, reason, spans (default: beside the log, LOG.q2.jsonl)",
    )
    rs.add_argument(
        "--summary",
        default=None,
        help="system figures, counts, signature and the log's SHA-256 as JSON (default: beside the "
        "log, LOG.q2.summary.json)",
    )
    rs.add_argument(
        "--response-field",
        default=None,
        help="the reply, a dotted path in each sample (default: lm-eval filtered_resps.0, Inspect "
        "output.completion)",
    )
    rs.add_argument(
        "--knowledge-field",
        default=None,
        help="the knowledge, a dotted path (default: lm-eval doc.knowledge; Inspect "
        "metadata.knowledge, else the target)",
    )
    rs.add_argument(
        "--history-field",
        default=None,
        help="with --coref: the dialogue turns before the reply, a dotted path to a list of texts "
        "(e.g. doc.history of the q2_dialogue task)",
    )
    rs.add_argument("--chunk-size", type=int, default=64, help="samples per engine call")
    rs.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: the summary on stdout as strict JSON",
    )
    rs.add_argument("--short", action="store_true", help="print the short signature")
    rs.add_argument("--quiet", action="store_true", help="no progress lines")
    rs.add_argument("--verbose", action="store_true", help="show the libraries' model-loading output")
    add_config_args(rs)
    rs.set_defaults(func=cmd_rescore)
