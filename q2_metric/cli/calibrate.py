"""`q2 calibrate`: choose the decision threshold on a labelled set by a stated rule and write it
as an operating-point file (`q2_metric.options.operating_point`), which `q2 score
--operating-point FILE` reads and signs. It reads scores; it scores nothing.

The labelled set is read as `q2 meta-eval --dataset` reads it (any of its formats); the scores
are a `q2 score` output of its responses, bound to them as `q2 meta-eval --scores` binds (by the
template's `id`, or by the response and knowledge text, never by row order); the scores'
signature comes from that run's `--summary` file."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError


def _target(text: str) -> float:
    """argparse type of --target: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def data_digest(path: Path, fmt: str) -> str:
    """sha256 of the bytes the dataset's reader read: the file, or the files of a folder format
    in the order it reads them (the paper's four split files; RAGTruth's two files)."""
    if path.is_file():
        files = [path]
    elif fmt == "q2-wow":
        from q2_metric.meta.evaluation import SPLITS

        files = [path / f"{s}.csv" for s in SPLITS]
    else:
        files = [path / "response.jsonl", path / "source_info.jsonl"]
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _summary_signature(path: Path) -> str:
    """The full signature in a `q2 score --summary` file; one sentence when it has none."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Q2InputError(f"--summary {path}: no such file.") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Q2InputError(f"--summary {path}: not the JSON file `q2 score --summary` writes.") from None
    signature = data.get("signature") if isinstance(data, dict) else None
    if not isinstance(signature, str) or not signature.startswith("q2:"):
        raise Q2InputError(
            f"--summary {path}: it has no 'signature' (q2:...); pass the summary of the `q2 score` run "
            "that wrote the scores."
        )
    return signature


def cmd_calibrate(args: argparse.Namespace) -> int:
    from q2_metric.frontend import guard
    from q2_metric.io import atomic_write
    from q2_metric.meta.benchmark import row_ids
    from q2_metric.meta.calibrate import operating_point_record
    from q2_metric.meta.datasets import ColumnMapping, load_datasets, parse_dataset_spec
    from q2_metric.meta.scores import ScoreSpec, read_scores
    from q2_metric.options import json_safe
    from q2_metric.options.operating_point import check_operating_point

    if (args.rule == "balanced_accuracy") != (args.target is None):
        raise Q2InputError(
            "--target goes with --rule precision or --rule recall (the share to reach), and not with "
            "--rule balanced_accuracy."
        )
    if args.bootstrap < 1 or args.bins < 1:
        raise Q2InputError("--bootstrap and --bins must be at least 1.")
    _name, data_path = parse_dataset_spec(args.dataset)
    path, column = args.scores, "q2"
    head, sep, tail = args.scores.rpartition(":")
    if sep and head and tail and not Path(args.scores).exists() and "/" not in tail:
        path, column = head, tail
    output = Path(args.output)
    guard(
        {"--dataset": data_path, "--scores": path, "--summary": args.summary},
        {"-o/--output": output},
    )
    if output.suffix != ".json":
        raise Q2InputError(f"-o/--output {output}: an operating point is a .json file.")
    signature = _summary_signature(Path(args.summary))
    mapping = ColumnMapping(
        args.response_col, args.knowledge_col, args.label_col, tuple(args.consistent_label or ("1",))
    )
    (ds,) = load_datasets([args.dataset], mapping)
    keys = list(dict.fromkeys(ds.keys()))
    where: dict[tuple[str, str], str] = {}
    for key, place in zip(ds.keys(), ds.where):
        where.setdefault(key, place)
    ids = row_ids([ds])
    ids.update({str(i): k for i, k in enumerate(keys, 1)})  # the plain row numbers of a template too
    spec = ScoreSpec("q2", Path(path), column)
    values = read_scores(spec, keys, where, ids)
    by_key = dict(zip(keys, values.tolist()))
    scores = [by_key[k] for k in ds.keys()]
    record = operating_point_record(
        scores,
        ds.consistent,
        rule=args.rule,
        target=args.target,
        dataset={
            "name": ds.name,
            "path": str(data_path),
            "format": ds.format,
            "sha256": data_digest(Path(data_path), ds.format),
        },
        scores_source={
            "path": str(path),
            "column": column,
            "sha256": data_digest(Path(path), ""),
            "signature": signature,
        },
        draws=args.bootstrap,
        seed=args.seed,
        bins=args.bins,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    record = json_safe(record)
    check_operating_point(record, output)  # what is written reads back
    body = json.dumps(record, indent=2, allow_nan=False) + "\n"
    atomic_write(output, lambda f: f.write(body))
    print(render(record))
    print(f"Wrote the operating point to {output}", file=sys.stderr)
    return 0


def _fig(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def render(record: dict[str, Any]) -> str:
    """The operating point as text: the threshold and its rule, the figures with their intervals,
    the expected calibration error and the reliability table."""
    rule = record["rule"]
    rule_text = rule["name"] + (f" >= {rule['target']:g}" if "target" in rule else "")
    ds = record["dataset"]
    lines = [
        f"Threshold {record['threshold']:g} (consistent iff score > threshold), chosen by {rule_text} on "
        f"{ds['name']} ({ds['responses']} responses, {ds['consistent']} consistent)",
        f"Figures at the threshold (95% bootstrap interval, {record['bootstrap']['draws']} resamples, "
        f"seed {record['bootstrap']['seed']}):",
    ]
    for name, fig in record["figures"].items():
        lines.append(f"  {name:<24} {_fig(fig['value'])}  [{_fig(fig['low'])}, {_fig(fig['high'])}]")
    cal = record["calibration"]
    lines += [
        f"Expected calibration error ({cal['bins']} bins): {cal['ece']:.4f}",
        "Reliability table:",
        "  bin          n  mean score  consistent",
    ]
    for b in cal["table"]:
        lines.append(
            f"  {b['low']:.2f}-{b['high']:.2f} {b['n']:>5}  {_fig(b['mean_score']):>10}  "
            f"{_fig(b['consistent_share']):>10}"
        )
    lines.append(f"Scores: {record['scores']['signature']}")
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:
    ca = sub.add_parser(
        "calibrate",
        help="choose the decision threshold on a labelled set by a stated rule and write it as an "
        "operating-point file (for q2 score --operating-point)",
    )
    ca.add_argument(
        "--dataset",
        required=True,
        metavar="NAME=FILE",
        help="the labelled set, in any format of `q2 meta-eval --dataset` (TRUE, BEGIN, the paper's "
        "annotated folder, LLM-AggreFact, or a file named by --response-col/--knowledge-col/--label-col)",
    )
    ca.add_argument(
        "--scores",
        required=True,
        metavar="FILE[:COLUMN]",
        help="`q2 score`'s output for the set's responses (COLUMN default q2), bound to them by the "
        "template's 'id' or by the 'response' and 'knowledge' text, never by row order",
    )
    ca.add_argument(
        "--summary", required=True, help="that `q2 score` run's --summary file (the scores' signature)"
    )
    ca.add_argument("-o", "--output", required=True, help="the operating-point file to write (.json)")
    ca.add_argument(
        "--rule",
        choices=("balanced_accuracy", "precision", "recall"),
        default="balanced_accuracy",
        help="balanced_accuracy: the highest balanced accuracy (the lowest threshold of ties); "
        "precision / recall: the lowest threshold whose precision (the highest whose recall) of "
        "the consistent class reaches --target (default: balanced_accuracy)",
    )
    ca.add_argument(
        "--target", type=_target, default=None, help="with --rule precision or recall: T in (0, 1]"
    )
    ca.add_argument(
        "--bootstrap", type=int, default=1000, help="resamples behind each interval (default 1000)"
    )
    ca.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    ca.add_argument("--bins", type=int, default=10, help="bins of the reliability table (default 10)")
    ca.add_argument("--response-col", default="response", help="response column of a file of no known format")
    ca.add_argument(
        "--knowledge-col", default="knowledge", help="knowledge column of a file of no known format"
    )
    ca.add_argument("--label-col", default="label", help="label column of a file of no known format")
    ca.add_argument(
        "--consistent-label",
        action="append",
        default=None,
        metavar="VALUE",
        help="a label value meaning consistent in such a file (repeatable; default 1)",
    )
    ca.set_defaults(func=cmd_calibrate)
