"""MLflow: `Q2Faithfulness`, a scorer for `mlflow.genai.evaluate(data=..., scorers=[...])`.

    import mlflow
    from q2_metric.harness.mlflow_scorer import Q2Faithfulness, evaluate
    mlflow.genai.evaluate(data=rows, scorers=[Q2Faithfulness(tiny=True)])   # rows: MLflow's format
    evaluate(rows, tiny=True)                   # the same, every row scored first in one engine call

Each row's response is its `outputs` (a string); its knowledge is `inputs["knowledge"]`, else
`expectations["knowledge"]` (`knowledge_key` names another field), else the documents of the
trace's retriever spans (MLflow's own place for retrieved context); a list of passages is joined by a
space, the rule of every front-end. The scorer returns a `Feedback` built from the row's record
(`frontend.Record`): `value` Q², `rationale` the one explanation sentence, `metadata` the record's
fields as MLflow keeps them (strings; numbers and lists as JSON; no key for a field without a
value): `q2_status` (scored, empty, bad),
`q2_score`, `q2_no_nli`, `q2_verdict` (at the threshold 0.5: consistent, inconsistent, unverified),
`q2_reason`, `q2_spans` (character offsets in the response, each span with its reason), `q2_error`
and the FULL `q2_signature`. An empty response or
knowledge gets no value (unscored, as `q2 score` leaves it; the rationale says why); a row whose
response or knowledge is no text (or missing) gets an `error`, the one sentence naming the row and
the field.

Q² options are keywords, as for ragas: `qg_model`, `qa_model`, `nli_model`, `device`, `variant`,
`tiny`, `batch_size`, `max_batch`, any other `Q2Config` option in `options={...}`; checked, and the
models found, when the scorer is built (one `Q2Error` sentence).

Batching: MLflow hands a scorer one row at a time, from the threads of its scoring pool (10 by
default: `MLFLOW_GENAI_EVAL_MAX_WORKERS`), at the rate `MLFLOW_GENAI_EVAL_SCORER_RATE_LIMIT` allows.
The rows in flight at once share one engine call (an async micro-batcher in a background event
loop), so a batch holds at most as many rows as MLflow has threads. `evaluate` here scores the
whole data set first, in engine calls of `max_batch` rows through the contract, and MLflow's calls
then read those results: one engine call per `max_batch` rows, whatever MLflow's pool.
"""

from __future__ import annotations

import json
import threading
import typing as t

from mlflow.entities import Feedback
from mlflow.entities.assessment_error import AssessmentError
from mlflow.genai.scorers import Scorer
from pydantic import Field, PrivateAttr

from q2_metric.frontend import decision_of
from q2_metric.options import ADAPTER_KEYWORDS, merge_options
from q2_metric.runtime.cache import micro_batcher
from q2_metric.runtime.engine import Scored
from q2_metric.runtime.policy import DEFAULT_MAX_WAIT
from q2_metric.runtime.sync import score_from_thread

_SHOWN = 80  # characters of a row's inputs in a message naming the row


def _short(value: t.Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def retrieved_documents(trace: t.Any) -> list[str] | None:
    """The text of the documents of the trace's top-level retriever spans, or None when it has none."""
    if trace is None:
        return None
    from mlflow.genai.utils.trace_utils import extract_retrieval_context_from_trace

    found = extract_retrieval_context_from_trace(trace)
    docs = [d.get("content") for chunks in found.values() for d in chunks]
    return [d for d in docs if d is not None] or None


class Q2Faithfulness(Scorer):
    """Q² of a row's `outputs` against its knowledge (`inputs[knowledge_key]`, else
    `expectations[knowledge_key]`, else the trace's retrieved documents), as a `Feedback`."""

    name: str = "q2"
    options: dict[str, t.Any] = Field(default_factory=dict)
    # the Q² options are the contract's to check (one sentence naming the keyword): typed Any, so
    # that pydantic never coerces them ("8" to 8, "yes" to True)
    variant: t.Any = None
    tiny: t.Any = None
    batch_size: t.Any = None
    max_batch: t.Any = None
    qg_model: t.Any = None
    qa_model: t.Any = None
    nli_model: t.Any = None
    device: t.Any = None
    operating_point: t.Any = None  # a file `q2 calibrate` wrote: the verdicts' threshold, signed
    language: t.Any = None
    model_sets: t.Any = None
    knowledge_key: str = "knowledge"
    max_wait: float = DEFAULT_MAX_WAIT
    progress: bool = True

    _engine: t.Any = PrivateAttr(default=None)
    _batcher: t.Any = PrivateAttr(default=None)
    _prepared: dict[tuple[str, str], Scored] = PrivateAttr(default_factory=dict)
    _counts: dict[str, int] = PrivateAttr(default_factory=lambda: {"scored": 0, "empty": 0, "bad": 0})
    _signature: t.Any = PrivateAttr(default=None)
    _decision: t.Any = PrivateAttr(default=None)
    _lock: t.Any = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: t.Any) -> None:
        super().__init__(**data)
        # here, not in `model_post_init`: pydantic would wrap a Q2OptionError (a ValueError) in its
        # ValidationError, and the sentence naming the option would be lost in its report
        keywords = {name: getattr(self, name) for name in ADAPTER_KEYWORDS}
        merged = merge_options(keywords, self.options)
        self._decision = decision_of(merged)  # the operating point read before any model work
        self._engine, self._batcher = micro_batcher(
            merged,
            max_wait=self.max_wait,
            progress=self.progress,
            tiny_hint="`tiny=True`",
        )

    @property
    def counts(self) -> dict[str, int]:
        """How many rows were scored, empty (unscored) and bad since the last `reset`."""
        with self._lock:
            return dict(self._counts)

    @property
    def signature(self) -> str | None:
        """The FULL signature of the scores (None before any)."""
        return None if self._signature is None else str(self._signature)

    def reset(self) -> None:
        """Forget the counts and the results of `prepare`."""
        with self._lock:
            self._counts = {"scored": 0, "empty": 0, "bad": 0}
            self._prepared = {}

    def knowledge_of(self, inputs: t.Any = None, expectations: t.Any = None, trace: t.Any = None) -> t.Any:
        """A row's knowledge: `inputs[knowledge_key]`, else `expectations[knowledge_key]`, else the
        trace's retrieved documents; None when it has none."""
        for source in (inputs, expectations):
            if isinstance(source, dict) and self.knowledge_key in source:
                return source[self.knowledge_key]
        return retrieved_documents(trace)

    def _shown_inputs(self, inputs: t.Any) -> t.Any:
        """A row's inputs as messages name the row: without the knowledge (long, and not its identity)."""
        if isinstance(inputs, dict) and self.knowledge_key in inputs:
            return {k: v for k, v in inputs.items() if k != self.knowledge_key}
        return inputs

    @staticmethod
    def _lookup(response: t.Any, knowledge: t.Any) -> tuple[str, str]:
        return (repr(response), repr(knowledge))

    def prepare(self, rows: t.Iterable[t.Mapping[str, t.Any]]) -> int:
        """Score MLflow rows (`inputs`, `outputs`, `expectations`, optional `trace`) now, in engine
        calls of `max_batch` rows through the contract; the scorer's calls on the same pairs then
        read these results. Returns the number of engine calls."""
        items = []
        for n, row in enumerate(rows):
            knowledge = self.knowledge_of(row.get("inputs"), row.get("expectations"), row.get("trace"))
            items.append(self._decision.item(f"row {n}", row.get("outputs"), knowledge))
        if not items:
            return 0
        before = self._engine.engine_calls
        outcome = self._engine.score_items(items, self._batcher.max_batch, self._batcher.progress)
        with self._lock:
            for item, result in zip(items, outcome.items):
                self._prepared[self._lookup(item.response, item.knowledge)] = Scored(
                    result, outcome.signature
                )
        return int(self._engine.engine_calls - before)

    def __call__(
        self, *, inputs: t.Any = None, outputs: t.Any = None, expectations: t.Any = None, trace: t.Any = None
    ) -> Feedback:
        knowledge = self.knowledge_of(inputs, expectations, trace)
        with self._lock:
            scored = self._prepared.get(self._lookup(outputs, knowledge))
        if scored is None:
            key = f"the row with inputs {_short(self._shown_inputs(inputs))}"
            scored = score_from_thread(self._batcher, self._decision.item(key, outputs, knowledge))
        return self._feedback(scored)

    def _feedback(self, scored: Scored) -> Feedback:
        with self._lock:
            self._counts[scored.status] += 1
            self._signature = self._decision.sign(scored.signature)
        record = self._decision.record(scored.result, scored.signature)
        if record.status == "bad":
            return Feedback(
                name=self.name, error=AssessmentError(error_code="Q2_BAD_ROW", error_message=record.reason)
            )
        metadata = {
            key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            for key, value in record.to_dict("q2_").items()
            if value is not None
        }
        return Feedback(name=self.name, value=record.score, rationale=record.reason, metadata=metadata)


def _rows(data: t.Any) -> list[dict[str, t.Any]] | None:
    """MLflow rows as dicts (a list of dicts or a pandas DataFrame), or None for another kind of
    data (an MLflow dataset, traces): no scoring ahead."""
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return data
    to_dict = getattr(data, "to_dict", None)
    if callable(to_dict) and hasattr(data, "columns"):
        records = to_dict(orient="records")
        return records if isinstance(records, list) else None
    return None


def evaluate(
    data: t.Any,
    scorer: Q2Faithfulness | None = None,
    *,
    scorers: t.Sequence[t.Any] = (),
    predict_fn: t.Callable[..., t.Any] | None = None,
    **options: t.Any,
) -> t.Any:
    """`mlflow.genai.evaluate(data=data, scorers=[scorer, *scorers], predict_fn=predict_fn)` (a new
    `Q2Faithfulness(**options)` unless given), with every row scored first in engine calls of
    `max_batch` rows (unless `predict_fn` makes the outputs); the result gets `signature` (FULL)
    and `counts` ({"scored", "empty", "bad"})."""
    import mlflow

    if scorer is None:
        own = set(Q2Faithfulness.model_fields)
        given = dict(options.pop("options", None) or {})
        scorer = Q2Faithfulness(
            **{k: v for k, v in options.items() if k in own},
            options={**given, **{k: v for k, v in options.items() if k not in own}},
        )
    scorer.reset()
    rows = _rows(data) if predict_fn is None else None
    if rows is not None:
        scorer.prepare(rows)
    try:
        result = mlflow.genai.evaluate(data=data, scorers=[scorer, *scorers], predict_fn=predict_fn)
    finally:
        counts = scorer.counts
        with scorer._lock:
            scorer._prepared = {}
    result.signature = scorer.signature
    result.counts = counts
    return result


__all__ = ["Q2Faithfulness", "evaluate", "retrieved_documents"]
