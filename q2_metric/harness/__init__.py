"""Q² inside today's evaluation harnesses: lm-evaluation-harness tasks, an Inspect AI scorer and
task, and a ragas metric. Each adapter scores a run's replies in batched engine calls
(`q2_metric.runtime`), loads the models once per process, and puts the signature in
its results. See docs/lm-eval.md, docs/inspect.md and docs/ragas.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType
from typing import Any

# The annotated Wizard of Wikipedia contexts the package ships (MIT, q2_metric/data/LICENSE.txt).
WOW_CONTEXTS = Path(__file__).resolve().parents[1] / "data" / "wow_contexts.csv"


def wow_contexts(limit: int | None = None) -> list[dict[str, Any]]:
    """The shipped WoW contexts (topic, message, knowledge, gold), read by the one table reader."""
    from q2_metric.io import read_rows

    rows = [
        r.fields
        for r in read_rows(WOW_CONTEXTS, response_col="message", knowledge_col="knowledge")
        if r.error is None
    ]
    return rows if limit is None else rows[: int(limit)]


def under_command(name: str) -> bool:
    """Whether this process is the harness's own command `name` (its script or `python -m name`)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return argv0.name == name or (argv0.name == "__main__.py" and argv0.parent.name == name)


def one_line_errors() -> None:
    """Under a harness's own command, a Q² error (a bad option, a missing model) raised while the
    harness builds or aggregates a task ends the run with its one sentence (the harnesses print the
    whole traceback). Installed once per process, whichever harness asks first."""
    from q2_metric.errors import Q2Error

    previous = sys.excepthook
    if getattr(previous, "_q2_harness", False):
        return

    def hook(kind: type[BaseException], err: BaseException, tb: TracebackType | None) -> None:
        if isinstance(err, Q2Error):
            print(f"Error: {err}", file=sys.stderr)
            return
        previous(kind, err, tb)

    hook._q2_harness = True  # type: ignore[attr-defined]  # marks our hook, so it is installed once
    sys.excepthook = hook


def lm_eval_include_path() -> str:
    """The folder of the lm-evaluation-harness tasks (`lm_eval --include_path ...`)."""
    return str(Path(__file__).resolve().parent / "lm_eval_tasks")


__all__ = ["WOW_CONTEXTS", "lm_eval_include_path", "wow_contexts"]
