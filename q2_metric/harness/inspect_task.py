"""Inspect AI: the `q2()` scorer and the `q2_wow` task, registered through the `inspect_ai` entry
point of this package (names `q2_metric/q2` and `q2_metric/q2_wow`).

    inspect eval q2_metric/q2_wow --model hf/local -M model_path=DIR -T limit=8 -T qg_model=QG_DIR
    inspect score LOG --scorer q2_metric/q2 -S tiny=true          # re-score any log with Q²

Q² options go in Inspect's own words: `-T name=value` for the task, `-S name=value` for the scorer
(any `Q2Config` option, e.g. `-T qg_model=DIR -T qa_model=DIR -T nli_model=DIR`, or all at once:
`-T options='{"qg_model": "DIR"}'`). They are checked, and the Q² models found, when the task or
the scorer is built, before any generation: a bad value or a missing model is one sentence naming
the option as `-T`/`-S` spells it, and a nonzero exit.

The knowledge of a sample is its metadata's `knowledge` (another key: `knowledge_key=`; an empty
string there is empty knowledge, never replaced), else its target (a list target joined by
`separator`). Samples are scored concurrently as their generations finish; the runtime's
micro-batcher (`q2_metric.runtime.micro.MicroBatcher`) gathers them into engine calls of at most `max_batch`
samples. Each sample is checked alone: one whose knowledge or reply is no string is reported with
its own id (unscored, `q2_status: bad`) and the others are scored; an empty reply or knowledge is
unscored (`q2_status: empty`). A cancelled sample (Ctrl-C, a time limit) leaves its batch and is
never scored. Each `Score` is built from the sample's record (`frontend.Record`): the value (Q²;
NaN when unscored, left out of the metrics), the reason in one sentence as its explanation (the
`reason` column of `q2 score`), and in its metadata the record (`q2_status`, `q2_score`,
`q2_no_nli`, `q2_verdict` at the threshold 0.5 (at an operating point's with
`-S operating_point=FILE`, a file `q2 calibrate` wrote, which the signature then names), `q2_reason`, `q2_spans`, `q2_error`, the full
`q2_signature`) with `q2_fallback` and the valid questions (`q2_questions`). The metrics:
`mean` and `stderr`; the run's results (`log.results.scores[0].metadata`) hold the counts
(`q2_counts`: scored, empty, bad) and the full signature (`q2_signature`).
"""

from __future__ import annotations

import contextvars
import math
from typing import Any

from inspect_ai import Task, task
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.scorer import mean as _inspect_mean
from inspect_ai.scorer import stderr as _inspect_stderr
from inspect_ai.solver import TaskState, generate

from q2_metric.errors import Q2Error
from q2_metric.frontend import Decision, decision_of
from q2_metric.options import merge_options
from q2_metric.runtime.cache import micro_batcher
from q2_metric.runtime.micro import MicroBatcher
from q2_metric.runtime.policy import DEFAULT_MAX_WAIT
from q2_metric.validation import PASSAGE_SEPARATOR, is_blank

# How the options being built were given: `-S` (the scorer's) unless the q2_wow task builds it (`-T`).
_FLAG: contextvars.ContextVar[str] = contextvars.ContextVar("q2_inspect_flag", default="-S")


def _status(s: SampleScore) -> str:
    return (s.score.metadata or {}).get("q2_status", "scored")


def _scored(scores: list[SampleScore]) -> list[SampleScore]:
    def ok(s: SampleScore) -> bool:
        v = s.score.value
        return _status(s) == "scored" and not (isinstance(v, float) and math.isnan(v))

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


_SHOWN: dict[type, type] = {}


def _shown(err: Q2Error) -> Q2Error:
    """The same error, also an Inspect `PrerequisiteError`: Inspect prints its one sentence without
    a traceback and exits nonzero (it keeps its Q² class: `except Q2OptionError` still catches it)."""
    from rich.markup import escape

    cls = type(err)
    both = _SHOWN.get(cls)
    if both is None:
        both = _SHOWN[cls] = type(cls.__name__, (cls, PrerequisiteError), {"__module__": cls.__module__})
    shown: Any = Exception.__new__(both)  # of the class made above: a Q2Error and a PrerequisiteError
    shown.args = err.args
    shown.__dict__.update(err.__dict__)
    shown.message = escape(str(err))
    return shown


def _spell(name: str) -> str:
    return f"{_FLAG.get()} {name}"


def _batcher(options: Any, given: dict[str, Any], max_wait: float) -> tuple[MicroBatcher, Decision]:
    """The process's micro-batcher for `options=` (a mapping, as `-S options='{...}'` gives it) and
    the single options (`options.merge_options`), checked, the models found, and the decision
    (`operating_point`, read first); a Q² error is shown as Inspect shows a prerequisite's."""
    try:
        merged = merge_options(given, options, spell=_spell)
        decision = decision_of(merged, _spell)
        tiny_hint = f"`{_FLAG.get()} tiny=true`"
        return micro_batcher(merged, max_wait=max_wait, spell=_spell, tiny_hint=tiny_hint)[1], decision
    except Q2Error as err:
        raise _shown(err) from None


def _question(q: Any) -> dict[str, Any]:
    return {
        "question": q.question,
        "span": q.candidate,
        "knowledge_answer": q.knowledge_answer,
        "f1": q.f1,
        "nli": q.nli_label,
        "score": q.score,
    }


def _sample_key(state: TaskState) -> str:
    return f"sample {state.sample_id!r}"


@scorer(metrics=[q2_mean(), q2_stderr()], name="q2")
def q2(
    knowledge_key: str = "knowledge",
    variant: str = "paper",
    tiny: bool | None = None,
    batch_size: int | None = None,
    max_batch: int | None = None,
    max_wait: float = DEFAULT_MAX_WAIT,
    separator: str = PASSAGE_SEPARATOR,  # the rule of every front-end (validation.knowledge_text)
    options: dict[str, Any] | None = None,
    **q2_options: Any,
) -> Scorer:
    """Q² of the model's reply against the sample's knowledge (metadata `knowledge_key`, else the
    target, a list target joined by `separator`). `variant`, `tiny` (default: the `Q2_TINY`
    environment variable), `batch_size`, `max_batch` (samples per engine call), `max_wait` (seconds
    the batcher waits for more samples), any `Q2Config` option by name (`-S qg_model=DIR`) or all in
    `options`: checked, and the models found, now (before any sample is scored)."""
    given = {**q2_options, "variant": variant, "tiny": tiny, "batch_size": batch_size, "max_batch": max_batch}
    batcher, decision = _batcher(options, given, max_wait)
    counts = {"scored": 0, "empty": 0, "bad": 0}

    def note(status: str, signature: Any) -> None:
        """The counts and the full signature in the run's results (`EvalScore.metadata`: Inspect
        copies the scorer's registry metadata there when the run ends). Inspect's metrics never
        see an unscored sample, so the counts cannot be metrics."""
        from inspect_ai._util.registry import registry_info

        counts[status] += 1
        registry_info(score).metadata.update(q2_counts=dict(counts), q2_signature=str(signature))

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion if state.output is not None else ""
        metadata = state.metadata or {}
        if knowledge_key in metadata:
            knowledge = metadata[knowledge_key]  # as it is: "" is empty knowledge, a non-string is bad
        else:
            knowledge = separator.join(target.target)
        scored = await batcher.score(decision.item(_sample_key(state), reply, knowledge))
        note(scored.status, decision.sign(scored.signature))
        record = decision.record(scored.result, scored.signature)
        meta: dict[str, Any] = record.to_dict("q2_")
        r = scored.response
        if record.status == "bad":
            return Score.unscored(
                reason="scoring_failed",
                answer=reply if isinstance(reply, str) else None,
                explanation=record.reason,
                metadata=meta,
            )
        meta.update(q2_fallback=r.fallback, q2_questions=[_question(q) for q in r.valid_questions])
        if record.status == "empty":
            why = "no_response" if is_blank(reply) else "no_knowledge"
            return Score.unscored(reason=why, answer=reply, explanation=record.reason, metadata=meta)
        return Score(value=r.q2, answer=reply, explanation=record.reason, metadata=meta)

    return score


PROMPT = (
    "You are the wizard of a Wizard of Wikipedia dialogue about {topic}. Knowledge: {knowledge}\n"
    "Reply to the apprentice in one sentence grounded in the knowledge.\nApprentice: {message}"
)


def wow_samples(limit: int | None = None) -> list[Sample]:
    """The annotated WoW contexts the package ships, one sample each (knowledge in the metadata)."""
    from q2_metric.harness import wow_contexts

    rows = wow_contexts(limit)
    return [
        Sample(
            id=i,
            input=PROMPT.format(**r),
            target=r["knowledge"],
            metadata={
                "topic": r["topic"],
                "message": r["message"],
                "knowledge": r["knowledge"],
                "gold": r["gold"],
            },
        )
        for i, r in enumerate(rows)
    ]


@task(name="q2_wow")
def q2_wow(
    limit: int | None = None,
    max_tokens: int = 64,
    variant: str = "paper",
    tiny: bool | None = None,
    batch_size: int | None = None,
    max_batch: int | None = None,
    max_wait: float = DEFAULT_MAX_WAIT,
    options: dict[str, Any] | None = None,
    **q2_options: Any,
) -> Task:
    """The model writes the wizard's reply to each annotated WoW context; Q² scores it. Q² options
    by name (`-T qg_model=DIR`) or all in `-T options='{...}'`, checked (and the models found) here,
    before any generation."""
    token = _FLAG.set("-T")
    try:
        scorer_ = q2(
            variant=variant,
            tiny=tiny,
            batch_size=batch_size,
            max_batch=max_batch,
            max_wait=max_wait,
            options=options,
            **q2_options,
        )
    finally:
        _FLAG.reset(token)
    return Task(
        dataset=MemoryDataset(wow_samples(limit), name="q2_wow"),
        solver=generate(),
        scorer=scorer_,
        config=GenerateConfig(max_tokens=max_tokens),
    )


__all__ = ["PROMPT", "q2", "q2_mean", "q2_stderr", "q2_wow", "wow_samples"]
