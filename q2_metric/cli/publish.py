"""`q2 publish`: Q² results in a model card."""

from __future__ import annotations

import argparse


def cmd_publish(args: argparse.Namespace) -> int:
    import yaml

    from q2_metric.frontend import guard
    from q2_metric.hub import publish as hub

    if args.card and not args.dry_run:
        guard({"--results": args.results}, {"--card": args.card})
    results = hub.load_results(args.results)
    hub.check_publishable(results)  # tiny random models: refused before the card or the Hub is touched
    dataset = dict(
        dataset_name=args.dataset_name,
        dataset_type=args.dataset_type,
        dataset_split=args.split,
        dataset_config=args.dataset_config,
    )
    if args.repo_id and not args.dry_run:
        url = hub.push_model_card(args.repo_id, results, args.model_name, token=args.token, **dataset)
        print(f"Updated the model card: {url}")
    elif args.card and not args.dry_run:
        hub.write_model_card(args.card, results, args.model_name, **dataset)
        print(f"Wrote Q² results into {args.card}")
    else:
        existing = hub.read_card_metadata(args.card) if args.card else None
        print(
            yaml.safe_dump(
                hub.card_metadata(results, args.model_name, existing, **dataset),
                sort_keys=False,
                allow_unicode=True,
            )
        )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    pub.add_argument(
        "--token",
        default=None,
        help="Hub token; best left out: the HF_TOKEN environment variable or the saved login "
        "(`hf auth login`) is used, whereas a token on the command line shows in `ps` and "
        "in the shell's history",
    )
    pub.set_defaults(func=cmd_publish)
