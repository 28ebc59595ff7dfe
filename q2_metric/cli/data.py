"""`q2 data fetch NAME`: download a published labelled set (the download and its checks:
`q2_metric.meta.fetch`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from q2_metric.meta.fetch import DEFAULT_MAX_MB, GITHUB_RAW, SOURCES, fetch


def add_parser(sub: Any) -> None:
    """`q2 data fetch NAME [--out DIR] [--base-url URL]`."""
    data = sub.add_parser("data", help="download the published labelled sets (needs the network)")
    dsub = data.add_subparsers(dest="data_command", required=True)
    f = dsub.add_parser("fetch", help="download a set from its pinned commit and check its SHA-256")
    f.add_argument(
        "name", choices=sorted(SOURCES), help="begin (both BEGIN releases) or q2-wow (the paper's set)"
    )
    f.add_argument("--out", default=None, help="folder to write into (default: data/NAME)")
    f.add_argument(
        "--base-url",
        default=GITHUB_RAW,
        help="server or mirror laid out as BASE/OWNER/REPO/COMMIT/PATH (default GitHub's raw server; "
        "file:///folder works)",
    )
    f.add_argument(
        "--max-mb",
        type=float,
        default=DEFAULT_MAX_MB,
        help=f"stop if the download goes past this many MB in all (default {DEFAULT_MAX_MB})",
    )
    f.set_defaults(func=cmd_data_fetch)


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from q2_metric.frontend import guard

    out = args.out or Path("data") / args.name
    guard({}, {"--out": out}, folders=["--out"])  # never into a model folder or a cache
    paths = fetch(
        args.name,
        out,
        args.base_url,
        max_mb=args.max_mb,
        say=lambda msg: print(f"q2 data fetch: {msg}", file=sys.stderr),
    )
    for p in paths:
        print(p)
    return 0
