"""ragas: `Q2Faithfulness`, a single-turn metric over `response` and `retrieved_contexts`.

    from ragas import EvaluationDataset
    from q2_metric.harness.ragas import Q2Faithfulness, evaluate
    result = evaluate(EvaluationDataset.from_list(rows), tiny=True)   # ragas.evaluate + the signature
    result["q2"], result.signature

No LLM and no embeddings: ragas asks for neither. The knowledge of a sample is its retrieved
contexts joined by a space (`separator=`). ragas scores samples concurrently; an async
micro-batcher gathers them into engine calls of at most `max_batch` replies (keep `max_batch` at
most ragas' `RunConfig.max_workers`, 16 by default, for full batches). An empty response or
knowledge gets NaN (left out of ragas' mean, as `q2 score` leaves it unscored). After scoring,
`metric.signature` holds the signature, and `evaluate` puts it on the result (`result.signature`).
Set `RAGAS_DO_NOT_TRACK=true` to keep ragas from sending usage analytics.
"""

from __future__ import annotations

import math
import typing as t
from dataclasses import dataclass, field

from ragas.dataset_schema import SingleTurnSample
from ragas.metrics.base import MetricType, SingleTurnMetric

from q2_metric.harness.batcher import DEFAULT_MAX_WAIT, AsyncBatcher, engine_for


@dataclass
class Q2Faithfulness(SingleTurnMetric):
    """Q² of `response` against `retrieved_contexts` (joined by `separator`). `options`: `variant`,
    `tiny`, `batch_size`, `max_batch` and any `Q2Config` option, checked by the project's options path."""

    name: str = "q2"
    _required_columns: t.Dict[MetricType, t.Set[str]] = field(
        default_factory=lambda: {MetricType.SINGLE_TURN: {"response", "retrieved_contexts"}})
    options: t.Dict[str, t.Any] = field(default_factory=dict)
    separator: str = " "
    max_wait: float = DEFAULT_MAX_WAIT
    signature: t.Any = None  # the signature of the last engine call (q2_metric.Signature)

    def __post_init__(self) -> None:
        parent = getattr(super(), "__post_init__", None)
        if parent is not None:
            parent()
        engine, max_batch = engine_for(dict(self.options))
        self._batcher = AsyncBatcher(engine, max_batch=max_batch, max_wait=self.max_wait)

    def init(self, run_config: t.Any) -> None:  # no LLM, no embeddings
        pass

    async def _single_turn_ascore(self, sample: SingleTurnSample, callbacks: t.Any) -> float:
        knowledge = self.separator.join(sample.retrieved_contexts or [])
        scored = await self._batcher.score(sample.response or "", knowledge)
        self.signature = scored.signature
        return scored.value if not math.isnan(scored.value) else float("nan")

    async def _ascore(self, row: t.Dict, callbacks: t.Any) -> float:
        return await self._single_turn_ascore(SingleTurnSample(**row), callbacks)


def evaluate(dataset: t.Any, metric: Q2Faithfulness | None = None, **options: t.Any) -> t.Any:
    """`ragas.evaluate(dataset, metrics=[metric])` (a new `Q2Faithfulness(options=options)` unless
    given), with the signature on the result: `result.signature`."""
    import ragas

    metric = metric or Q2Faithfulness(options=options)
    result = ragas.evaluate(dataset, metrics=[metric], show_progress=False)
    result.signature = metric.signature
    return result


__all__ = ["Q2Faithfulness", "evaluate"]
