"""ragas: `Q2Faithfulness`, a single-turn metric over `response` and `retrieved_contexts`.

    from ragas import EvaluationDataset
    from q2_metric.harness.ragas_metric import Q2Faithfulness, evaluate
    result = evaluate(EvaluationDataset.from_list(rows), tiny=True)   # ragas.evaluate + signature, counts
    result["q2"], result.signature, result.counts

Q² options are keywords, in ragas' own style: `Q2Faithfulness(qg_model=DIR, qa_model=DIR,
nli_model=DIR, tiny=False, max_batch=16)`, any other `Q2Config` option in `options={...}` (or all
as keywords of `evaluate`). They are checked, and the Q² models found, when the metric is built:
a bad value or a missing model is one `Q2Error` sentence naming the keyword, before any scoring.

No LLM and no embeddings: ragas asks for neither. The knowledge of a sample is its retrieved
contexts joined by `separator` (a space). ragas scores samples concurrently; the runtime's
micro-batcher (one per process and configuration) gathers them into engine calls of at most `max_batch` samples (keep `max_batch` at
most ragas' `RunConfig.max_workers`, 16 by default, for full batches). A sample ragas gives up on
(its `RunConfig.timeout`, a cancelled run) leaves its batch and is never scored. An empty response
or knowledge gets NaN (left out of ragas' mean, as `q2 score` leaves it unscored) and is counted:
`metric.counts` ({"scored", "empty", "bad"}) and `metric.signature` (the FULL signature) after
scoring; `evaluate` puts both on the result, with `result.details`: per row of the dataset its
record (`frontend.Record.to_dict(prefix="q2_")`: `q2_status`, `q2_score`, `q2_verdict` at the
threshold 0.5 (at the operating point's with `operating_point=FILE`, also named by the signature), `q2_reason`, `q2_spans`, ...; None for a sample whose values cannot be looked up).
With `progress` (default), a line on stderr after each engine call. Set `RAGAS_DO_NOT_TRACK=true` to keep ragas from sending usage analytics.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from ragas.dataset_schema import SingleTurnSample
from ragas.metrics.base import MetricType, SingleTurnMetric

from q2_metric.frontend import decision_of
from q2_metric.options import ADAPTER_KEYWORDS, merge_options
from q2_metric.runtime.cache import micro_batcher
from q2_metric.runtime.policy import DEFAULT_MAX_WAIT
from q2_metric.validation import PASSAGE_SEPARATOR


@dataclass
class Q2Faithfulness(SingleTurnMetric):
    """Q² of `response` against `retrieved_contexts` (joined by `separator`). Q² options as
    keywords (`qg_model`, `qa_model`, `nli_model`, `device`, `variant`, `tiny`, `batch_size`,
    `max_batch`, `operating_point`: a file `q2 calibrate` wrote, whose threshold decides the records'
    verdicts and which the signature names) or in `options`; checked, and the models found, when
    the metric is built."""

    name: str = "q2"
    _required_columns: dict[MetricType, set[str]] = field(
        default_factory=lambda: {MetricType.SINGLE_TURN: {"response", "retrieved_contexts"}}
    )
    options: dict[str, t.Any] = field(default_factory=dict)
    variant: str | None = None
    tiny: bool | None = None
    batch_size: int | None = None
    max_batch: int | None = None
    qg_model: str | None = None
    qa_model: str | None = None
    nli_model: str | None = None
    device: str | None = None
    operating_point: t.Any = None  # a file `q2 calibrate` wrote: the verdicts' threshold, signed
    language: str | None = None
    model_sets: str | None = None
    separator: str = PASSAGE_SEPARATOR  # the rule of every front-end (validation.knowledge_text)
    max_wait: float = DEFAULT_MAX_WAIT
    progress: bool = True
    signature: t.Any = None  # the FULL signature of the last engine call (q2_metric.Signature)
    counts: dict[str, int] = field(default_factory=lambda: {"scored": 0, "empty": 0, "bad": 0})
    # the record of each pair scored (`frontend.Record.to_dict(prefix="q2_")`), by (response,
    # knowledge as joined): ragas keeps only floats and gives a metric no sample index; `evaluate`
    # puts them in row order on `result.details`
    records: dict[t.Any, dict[str, t.Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parent = getattr(super(), "__post_init__", None)
        if parent is not None:
            parent()
        options = merge_options({name: getattr(self, name) for name in ADAPTER_KEYWORDS}, self.options)
        self._decision = decision_of(options)  # the operating point read before any model work
        _, self._batcher = micro_batcher(
            options, max_wait=self.max_wait, progress=self.progress, tiny_hint="`tiny=True`"
        )

    def init(self, run_config: t.Any) -> None:  # no LLM, no embeddings
        pass

    def knowledge_of(self, contexts: t.Any) -> t.Any:
        """A sample's knowledge: its retrieved contexts joined by `separator`."""
        return self.separator.join(contexts) if isinstance(contexts, (list, tuple)) else contexts

    def details_of(self, response: t.Any, contexts: t.Any) -> dict[str, t.Any] | None:
        """The record of a pair this metric scored (`q2_status`, `q2_score`, `q2_verdict`,
        `q2_reason`, `q2_spans`, ...), else None."""
        try:
            return self.records.get((response, self.knowledge_of(contexts)))
        except TypeError:  # an unhashable value: a bad sample, which has no spans
            return None

    async def _single_turn_ascore(self, sample: SingleTurnSample, callbacks: t.Any) -> float:
        knowledge = self.knowledge_of(sample.retrieved_contexts)
        # ragas gives a metric no sample index: the sample is named by its question
        key = f"the sample with user_input {sample.user_input!r}" if sample.user_input else "a sample"
        scored = await self._batcher.score(
            self._decision.item(
                key,
                sample.response if sample.response is not None else "",
                knowledge if knowledge is not None else "",
            )
        )
        self.signature = self._decision.sign(scored.signature)
        self.counts[scored.status] += 1
        try:
            self.records[(sample.response, knowledge)] = self._decision.record(
                scored.result, scored.signature
            ).to_dict("q2_")
        except TypeError:  # an unhashable value (a bad sample): not looked up again
            pass
        return scored.value

    async def _ascore(self, row: dict, callbacks: t.Any) -> float:
        return await self._single_turn_ascore(SingleTurnSample(**row), callbacks)


def evaluate(
    dataset: t.Any,
    metric: Q2Faithfulness | None = None,
    *,
    run_config: t.Any = None,
    show_progress: bool = True,
    **options: t.Any,
) -> t.Any:
    """`ragas.evaluate(dataset, metrics=[metric])` (a new `Q2Faithfulness(**options)` unless given;
    keywords that are no field of it go to its `options`), with `result.signature` (FULL),
    `result.counts` ({"scored", "empty", "bad"}) and `result.details` (per row of the dataset: its
    record, `details_of`) on the result."""
    import dataclasses

    import ragas

    if metric is None:
        fields = {f.name for f in dataclasses.fields(Q2Faithfulness)}
        own = {k: v for k, v in options.items() if k in fields}
        rest = {k: v for k, v in options.items() if k not in fields}
        given = own.pop("options", None) or {}
        metric = Q2Faithfulness(**own, options={**given, **rest})
    metric.counts = {"scored": 0, "empty": 0, "bad": 0}
    metric.records = {}
    kwargs = {"run_config": run_config} if run_config is not None else {}
    result = ragas.evaluate(dataset, metrics=[metric], show_progress=show_progress, **kwargs)
    result.signature = metric.signature
    result.counts = dict(metric.counts)
    result.details = [
        metric.details_of(getattr(s, "response", None), getattr(s, "retrieved_contexts", None))
        for s in getattr(dataset, "samples", [])
    ]
    return result


__all__ = ["Q2Faithfulness", "evaluate"]
