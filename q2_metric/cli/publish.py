"""`q2 publish`: Q² results in a model card's `model-index`, and as the Hub's Eval Results
(`.eval_results/` files in a local folder, or a pull request to a model repo)."""

from __future__ import annotations

import argparse
import os
from typing import Any


def _dataset_ids(values: list[str], meta_eval: bool) -> dict[str, str]:
    """`--dataset-id ID` (a `q2 score` results file) or `NAME=ID` per set of a meta-eval report."""
    from q2_metric.hub import eval_results as er
    from q2_metric.hub.publish import PublishError

    if not meta_eval:
        if len(values) != 1 or "=" in values[0]:
            raise PublishError(
                "Give the benchmark's Hub dataset once, as --dataset-id OWNER/SET (e.g. McGill-NLP/FaithDial)."
            )
        return {"": er.check_dataset_id(values[0])}
    out = dict(er.KNOWN_DATASETS)
    for text in values:
        name, sep, ident = text.partition("=")
        if not sep or not name:
            raise PublishError(
                f"--dataset-id '{text}': with --meta-eval, give NAME=OWNER/SET (NAME: a --dataset name)."
            )
        out[name] = er.check_dataset_id(ident, f"--dataset-id {name}")
    return out


def _eval_files(args: argparse.Namespace, results: dict, source: str) -> list:
    from q2_metric.hub import eval_results as er

    date = er.check_date(args.date) if args.date else er.file_date(source)
    common = dict(date=date, task_id=args.task_id, source_url=args.source_url, source_name=args.source_name)
    if args.meta_eval:
        return er.benchmark_files(results, dataset_ids=_dataset_ids(args.dataset_id, True), **common)
    (dataset_id,) = _dataset_ids(args.dataset_id, False).values()
    return er.results_files(results, dataset_id=dataset_id, **common)


def _load_meta_eval(path: str) -> dict:
    import json
    from pathlib import Path

    from q2_metric.hub.publish import PublishError

    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise PublishError(f"Cannot read the --meta-eval file {path}: {err.strerror or err}.") from None
    except json.JSONDecodeError as err:
        raise PublishError(
            f"The --meta-eval file {path} is not JSON ({err.msg} at line {err.lineno})."
        ) from None
    if not isinstance(report, dict):
        raise PublishError(f"The --meta-eval file {path} must hold a JSON object.")
    return report


def _every_eval(args: argparse.Namespace, results: dict, source: str) -> None:
    """`--every-eval-ever DIR`: the run as an Every Eval Ever record (`hub.every_eval`)."""
    import time
    from pathlib import Path

    from q2_metric.frontend import guard
    from q2_metric.hub import eval_results as er
    from q2_metric.hub.every_eval import every_eval_record
    from q2_metric.hub.publish import PublishError
    from q2_metric.io import read_table
    from q2_metric.io.commit import commit_outputs
    from q2_metric.io.paths import check_regular_target

    if args.meta_eval:
        raise PublishError(
            "--every-eval-ever exports a `q2 score` run (--results with --scores), not a --meta-eval report."
        )
    if not args.scores or not args.model_id:
        raise PublishError(
            "--every-eval-ever needs --scores (the `q2 score` output of the run) and --model-id "
            "OWNER/NAME (the model whose responses were scored)."
        )
    dataset_id = er.check_dataset_id(args.dataset_id[0]) if len(args.dataset_id) == 1 else None
    benchmark = args.benchmark or (dataset_id and dataset_id.replace("/", "_"))
    if not benchmark:
        raise PublishError(
            "--every-eval-ever needs the benchmark's name: --benchmark NAME or --dataset-id OWNER/SET."
        )
    date = er.check_date(args.date) if args.date else er.file_date(source)
    rows, _columns = read_table(args.scores)
    bad = next((r for r in rows if r.error), None)
    if bad is not None:
        raise PublishError(f"--scores {args.scores}: {bad.error}.")
    record = every_eval_record(
        results,
        [r.fields for r in rows],
        model_id=args.model_id,
        benchmark=benchmark,
        dataset_id=dataset_id,
        date=date,
        retrieved=time.time(),
        source_name=args.source_name,
        source_url=args.source_url,
    )
    if args.dry_run:
        print(
            f"# {record.aggregate_path}\n{record.aggregate_text()}# {record.samples_path}: {len(record.samples)} rows"
        )
        return
    root = Path(args.every_eval_ever)
    paths = {record.aggregate_path: record.aggregate_text(), record.samples_path: record.samples_text()}
    guard(
        {"--results": source, "--scores": args.scores},
        {f"--every-eval-ever ({rel})": root / rel for rel in paths},
    )
    for rel in paths:
        check_regular_target(root / rel, "--every-eval-ever")
    (root / record.aggregate_path).parent.mkdir(parents=True, exist_ok=True)

    def writer(text: str) -> Any:
        return lambda f: f.write(text)

    commit_outputs([(root / rel, writer(text)) for rel, text in paths.items()])
    print(
        f"Wrote the Every Eval Ever record {root / record.aggregate_path} and its {len(record.samples)} sample rows"
    )


def cmd_publish(args: argparse.Namespace) -> int:
    import yaml

    from q2_metric.frontend import guard
    from q2_metric.hub import eval_results as er
    from q2_metric.hub import publish as hub
    from q2_metric.hub.publish import PublishError

    source = args.results or args.meta_eval
    eval_mode = bool(args.eval_results or args.create_pr or args.meta_eval)
    if args.create_pr and not args.repo_id:
        raise PublishError("--create-pr needs --repo-id, the model repo to open the pull request on.")
    if not eval_mode and not args.every_eval_ever and not args.model_name:
        raise PublishError("--model-name is needed for the model card's model-index.")
    if eval_mode and not args.dataset_id and not args.meta_eval:
        raise PublishError(
            "Eval Results need the benchmark's Hub dataset: give --dataset-id OWNER/SET (e.g. McGill-NLP/FaithDial)."
        )
    if args.meta_eval and (args.card or (args.repo_id and not args.create_pr)):
        raise PublishError(
            "A --meta-eval report is published as Eval Results only (--eval-results or --create-pr)."
        )
    flag = "--meta-eval" if args.meta_eval else "--results"
    if args.card and not args.dry_run:
        guard({flag: source}, {"--card": args.card})
    results = _load_meta_eval(source) if args.meta_eval else hub.load_results(source)
    if args.operating_point is not None:
        if args.meta_eval:
            raise PublishError(
                "--operating-point goes with --results: a --meta-eval report's tables choose their thresholds."
            )
        if args.card and not args.dry_run:
            guard({flag: source, "--operating-point": args.operating_point}, {"--card": args.card})
        results = hub.with_operating_point(results, args.operating_point)  # read before anything is written
    signature = {"signature": results.get("signature")}
    # tiny random models: refused before any file, card or the Hub is touched; a dry run shows
    # what would be written, then says in one sentence that it cannot be published
    if not args.dry_run:
        hub.check_publishable(
            signature,
            "they are not published as Eval Results"
            if eval_mode
            else "they are not written into a model card"
            if (args.card or args.repo_id)
            else "they are not published as an Every Eval Ever record",
        )
    if args.every_eval_ever:
        _every_eval(args, results, source)
        if not (eval_mode or args.card or args.repo_id):
            return 0
    if eval_mode:
        files = _eval_files(args, results, source)
        er.check_files(files)
        if args.dry_run:
            for f in files:
                print(f"# {f.path_in_repo}\n{f.text()}")
            _tiny_note(signature, "the Eval Results files above cannot be published")
            return 0
        if args.eval_results:
            guard(
                {flag: source},
                {
                    f"--eval-results ({f.name})": os.path.join(args.eval_results, er.FOLDER, f.name)
                    for f in files
                },
            )
            paths = er.write_folder(args.eval_results, files)
            print(
                f"Wrote {len(paths)} Eval Results file(s) into {os.path.join(args.eval_results, er.FOLDER)}"
            )
        if args.create_pr:
            url = er.open_pull_request(args.repo_id, files, token=args.token)
            print(f"Opened a pull request with {len(files)} Eval Results file(s): {url}")
        return 0
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
                hub.card_metadata(results, args.model_name, existing, publishable_only=False, **dataset),
                sort_keys=False,
                allow_unicode=True,
            )
        )
        _tiny_note(signature, "the model card metadata above cannot be published")
    return 0


def _tiny_note(signature: dict, consequence: str) -> None:
    """After a dry run: one line on stderr when the results are tiny random models' (not publishable)."""
    import sys

    from q2_metric.hub.publish import tiny_sentence

    sentence = tiny_sentence(signature, consequence)
    if sentence:
        print(f"q2: {sentence}", file=sys.stderr)


def add_parser(sub: argparse._SubParsersAction) -> None:
    pub = sub.add_parser(
        "publish",
        help="write Q² results into a model card's model-index, or as the Hub's Eval Results (.eval_results/)",
    )
    what = pub.add_mutually_exclusive_group(required=True)
    what.add_argument("--results", help="JSON with q2, q2_no_nli, coverage, signature (q2 score --summary)")
    what.add_argument(
        "--meta-eval",
        help="benchmark.json of `q2 meta-eval --dataset`: Q²'s figures per set, as Eval Results",
    )
    pub.add_argument("--model-name", help="the model's name in the card's model-index")
    pub.add_argument(
        "--operating-point",
        metavar="FILE",
        default=None,
        help="an operating-point file (q2 calibrate): the card and the Eval Results notes carry it "
        "(threshold, rule, data set, digest) and the signature names it (with --results; results "
        "decided at another operating point are refused)",
    )
    pub.add_argument("--dataset-name", default="Wizard of Wikipedia")
    pub.add_argument("--dataset-type", default="wizard_of_wikipedia")
    pub.add_argument("--dataset-config", default=None)
    pub.add_argument("--split", default="validation")
    where = pub.add_mutually_exclusive_group()
    where.add_argument("--card", help="edit this README.md on disk")
    where.add_argument(
        "--repo-id",
        help="the Hub model repo: update its card (needs a token), or with --create-pr open a pull "
        "request adding the Eval Results files",
    )
    pub.add_argument(
        "--eval-results",
        metavar="DIR",
        help="write the Eval Results files into DIR/.eval_results/ (DIR: e.g. a clone of the model repo)",
    )
    pub.add_argument(
        "--create-pr",
        action="store_true",
        help="with --repo-id: open a pull request adding the Eval Results files (community results)",
    )
    pub.add_argument(
        "--dataset-id",
        action="append",
        default=[],
        help="the benchmark's Hub dataset id (OWNER/SET) for Eval Results; with --meta-eval, "
        "NAME=OWNER/SET per --dataset name (FaithDial sets default to McGill-NLP/FaithDial)",
    )
    pub.add_argument(
        "--task-id",
        default="default",
        help="the task of the benchmark dataset (its eval.yaml's task id; default: default)",
    )
    pub.add_argument(
        "--date",
        default=None,
        help="when the evaluation ran (ISO-8601); default: the day the results file was written",
    )
    pub.add_argument("--source-url", default=None, help="where the results come from (default: the Q² paper)")
    pub.add_argument("--source-name", default=None, help="the source's display name")
    ev = pub.add_argument_group("Every Eval Ever (--every-eval-ever)")
    ev.add_argument(
        "--every-eval-ever",
        metavar="DIR",
        help="also write the run as an Every Eval Ever record, DIR/data/BENCHMARK/OWNER/MODEL/UUID.json "
        "with its instance-level rows (UUID_samples.jsonl); needs --scores and --model-id",
    )
    ev.add_argument(
        "--scores", metavar="FILE", help="the `q2 score` output of the run (its rows become the samples)"
    )
    ev.add_argument("--model-id", metavar="OWNER/NAME", help="the model whose responses were scored")
    ev.add_argument(
        "--benchmark", help="the record's collection name (default: the --dataset-id, '/' as '_')"
    )
    pub.add_argument("--dry-run", action="store_true", help="print the metadata or the files, write nothing")
    pub.add_argument(
        "--token",
        default=None,
        help="Hub token; best left out: the HF_TOKEN environment variable or the saved login "
        "(`hf auth login`) is used, whereas a token on the command line shows in `ps` and "
        "in the shell's history",
    )
    pub.set_defaults(func=cmd_publish)
