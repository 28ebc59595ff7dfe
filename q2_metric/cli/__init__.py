"""The `q2` command line. `q2 demo` scores the bundled sample of the annotated WoW set.

One module per verb (`demo`, `score`, `rescore`, `agree`, `meta_eval`, `data`, `convert_nli`,
`register`, `publish`, `space`, `serve`, `calibrate`), each with its `add_parser(sub)` and `cmd_*`; `common` holds the
engine flags; the `meta_eval` package holds the flags and commands of `q2 meta-eval` (`benchmark`:
`--dataset`; `ladder`: `--ladder`/`--control`). Every `argparse` parser of the package is here (`q2_metric.meta` is a
library). Here: `build_parser` and `main`."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from q2_metric.cli import (
    agree,
    calibrate,
    convert_nli,
    data,
    demo,
    meta_eval,
    publish,
    register,
    rescore,
    score,
    serve,
    space,
)
from q2_metric.errors import Q2Error
from q2_metric.io import interrupts
from q2_metric.progress import on_terminal
from q2_metric.version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="q2", description="Q² factual-consistency metric for dialogue")
    parser.add_argument("--version", action="version", version=f"q2-metric {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for verb in (
        demo,
        score,
        rescore,
        agree,
        meta_eval,
        calibrate,
        data,
        convert_nli,
        register,
        publish,
        space,
        serve,
    ):  # the order of `q2 --help`
        verb.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a known failure is one line on stderr and exit code 2, never a traceback.
    SIGINT and SIGTERM, from the first line on, are one line and exit code 130 / 143."""
    previous = interrupts.install()  # first: nothing heavy (torch) is imported before this line
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt as err:  # SIGINT or SIGTERM (`interrupts.Interrupted`)
        for sig in interrupts.SIGNALS:  # a second signal must not cut the message
            signal.signal(sig, signal.SIG_IGN)
        name = (getattr(err, "args", None) and str(err)) or "SIGINT"
        resume = "; run the same command again to resume from the cache" if _command(argv) == "score" else ""
        # on a terminal a progress bar may hold the cursor: the message starts its own line
        start = "\n" if on_terminal() else ""
        print(f"{start}q2: interrupted ({name}){resume}.", file=sys.stderr)
        return interrupts.exit_code(err)
    except Exception as err:
        if isinstance(err, Q2Error):
            print(f"q2: {err}", file=sys.stderr)
            return 2
        if isinstance(err, OSError):  # permissions, a full disk: the system's one-line reason
            where = f" '{err.filename}'" if err.filename else ""
            print(f"q2: {err.strerror or err}{where}.", file=sys.stderr)
            return 2
        raise
    finally:
        interrupts.restore(previous)


def _command(argv: Sequence[str] | None) -> str | None:
    args = sys.argv[1:] if argv is None else list(argv)
    return next((a for a in args if not a.startswith("-")), None)
