"""Q² inside today's evaluation harnesses: lm-evaluation-harness tasks, an Inspect AI scorer and
task, and a ragas metric. Each adapter scores a run's replies in batched engine calls
(`q2_metric.harness.batcher`), loads the models once per process, and puts the signature in
its results. See docs/lm-eval.md, docs/inspect.md and docs/ragas.md.
"""

from __future__ import annotations

from pathlib import Path


def lm_eval_include_path() -> str:
    """The folder of the lm-evaluation-harness tasks (`lm_eval --include_path ...`)."""
    return str(Path(__file__).resolve().parent / "lm_eval_tasks")


__all__ = ["lm_eval_include_path"]
