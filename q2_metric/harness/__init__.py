"""Q² inside today's evaluation harnesses: lm-evaluation-harness tasks, an Inspect AI scorer and
task, and a ragas metric. Each adapter scores a run's replies in batched engine calls
(`q2_metric.harness.batcher`), loads the models once per process, and puts the signature in
its results. See docs/lm-eval.md, docs/inspect.md and docs/ragas.md.
"""

from __future__ import annotations

from pathlib import Path
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


def lm_eval_include_path() -> str:
    """The folder of the lm-evaluation-harness tasks (`lm_eval --include_path ...`)."""
    return str(Path(__file__).resolve().parent / "lm_eval_tasks")


__all__ = ["WOW_CONTEXTS", "lm_eval_include_path", "wow_contexts"]
