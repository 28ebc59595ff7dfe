"""Inspect AI: the `q2()` scorer and the `q2_wow` task, registered through the `inspect_ai` entry
point of this package (names `q2_metric/q2` and `q2_metric/q2_wow`).

    inspect eval q2_metric/q2_wow --model hf/local -M model_path=DIR -T limit=8
    inspect score LOG --scorer q2_metric/q2 -S tiny=true          # re-score any log with Q²

The knowledge of a sample is its metadata's `knowledge` (another key: `knowledge_key=`), else its
target. Samples are scored concurrently as their generations finish; an async micro-batcher
(`q2_metric.harness.batcher.AsyncBatcher`) gathers them into engine calls of at most `max_batch`
replies. Each `Score` carries the value (Q²; NaN when the reply or knowledge is empty, left out of
the metrics), the reason in one sentence as its explanation, and in its metadata `q2_no_nli`,
`fallback`, the valid questions (question, span, the knowledge's answer, F1, NLI label, span score)
and the signature.
"""

from __future__ import annotations

import math
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
from inspect_ai.scorer import mean as _inspect_mean
from inspect_ai.scorer import stderr as _inspect_stderr
from inspect_ai.solver import TaskState, generate

from q2_metric.harness.batcher import DEFAULT_MAX_WAIT, AsyncBatcher, engine_for

_BATCHERS: dict[tuple, AsyncBatcher] = {}


def _scored(scores: list[SampleScore]) -> list[SampleScore]:
    def ok(s: SampleScore) -> bool:
        v = s.score.value
        return not (isinstance(v, float) and math.isnan(v))

    return [s for s in scores if ok(s)]


@metric(name="mean")
def q2_mean() -> Metric:
    """Mean Q² over the scored replies (an empty reply or knowledge is left out, as `q2 score` does)."""
    inner = _inspect_mean()

    def compute(scores: list[SampleScore]) -> float:
        kept = _scored(scores)
        return inner(kept) if kept else float("nan")

    return compute


@metric(name="stderr")
def q2_stderr() -> Metric:
    """Standard error of that mean (inspect's `stderr` over the scored replies)."""
    inner = _inspect_stderr()

    def compute(scores: list[SampleScore]) -> float:
        return inner(_scored(scores))

    return compute


def _batcher(options: dict[str, Any], max_wait: float) -> AsyncBatcher:
    engine, max_batch = engine_for(options)
    key = (id(engine), max_batch, max_wait)
    found = _BATCHERS.get(key)
    if found is None:
        found = _BATCHERS[key] = AsyncBatcher(engine, max_batch=max_batch, max_wait=max_wait)
    return found


def _question(q: Any) -> dict[str, Any]:
    return {"question": q.question, "span": q.candidate, "knowledge_answer": q.knowledge_answer,
            "f1": q.f1, "nli": q.nli_label, "score": q.score}


@scorer(metrics=[q2_mean(), q2_stderr()], name="q2")
def q2(knowledge_key: str = "knowledge", variant: str = "paper", tiny: bool | None = None,
       batch_size: int | None = None, max_batch: int | None = None, max_wait: float = DEFAULT_MAX_WAIT,
       options: dict[str, Any] | None = None):
    """Q² of the model's reply against the sample's knowledge (metadata `knowledge_key`, else the
    target). `variant`, `tiny` (default: the `Q2_TINY` environment variable), `batch_size`,
    `max_batch` (replies per engine call), `max_wait` (seconds the batcher waits for more samples)
    and `options` (any `Q2Config` option) are checked by the project's options path."""
    batcher = _batcher({**(options or {}), "variant": variant, "tiny": tiny, "batch_size": batch_size,
                        "max_batch": max_batch}, max_wait)

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion if state.output is not None else ""
        knowledge = (state.metadata or {}).get(knowledge_key) or target.text
        scored = await batcher.score(reply, knowledge)
        r = scored.response
        unscored = None if r.scored else ("no_response" if not reply.strip() else "scoring_failed")
        return Score(value=r.q2 if r.scored else float("nan"), answer=reply, explanation=scored.reason(),
                     reason=unscored, metadata={"q2_no_nli": None if math.isnan(r.q2_no_nli) else r.q2_no_nli,
                               "fallback": r.fallback, "questions": [_question(q) for q in r.valid_questions],
                               "signature": str(scored.signature)})

    return score


PROMPT = ("You are the wizard of a Wizard of Wikipedia dialogue about {topic}. Knowledge: {knowledge}\n"
          "Reply to the apprentice in one sentence grounded in the knowledge.\nApprentice: {message}")


def wow_samples(limit: int | None = None) -> list[Sample]:
    """The annotated WoW contexts the package ships, one sample each (knowledge in the metadata)."""
    from q2_metric.harness import wow_contexts

    rows = wow_contexts(limit)
    return [Sample(id=i, input=PROMPT.format(**r), target=r["knowledge"],
                   metadata={"topic": r["topic"], "message": r["message"], "knowledge": r["knowledge"],
                             "gold": r["gold"]}) for i, r in enumerate(rows)]


@task(name="q2_wow")
def q2_wow(limit: int | None = None, max_tokens: int = 64, variant: str = "paper", tiny: bool | None = None,
           batch_size: int | None = None, max_batch: int | None = None, max_wait: float = DEFAULT_MAX_WAIT):
    """The model writes the wizard's reply to each annotated WoW context; Q² scores it."""
    return Task(dataset=MemoryDataset(wow_samples(limit), name="q2_wow"), solver=generate(),
                scorer=q2(variant=variant, tiny=tiny, batch_size=batch_size, max_batch=max_batch, max_wait=max_wait),
                config=GenerateConfig(max_tokens=max_tokens))


__all__ = ["PROMPT", "q2", "q2_mean", "q2_stderr", "q2_wow", "wow_samples"]
