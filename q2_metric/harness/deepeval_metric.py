"""DeepEval: `Q2FaithfulnessMetric`, a `BaseMetric` over `LLMTestCase(input, actual_output,
retrieval_context or context)`.

    import os
    os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
    from deepeval import evaluate
    from deepeval.test_case import LLMTestCase
    from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric
    metric = Q2FaithfulnessMetric(threshold=0.5, tiny=True)
    evaluate(test_cases, [metric])               # or metric.measure(case); await metric.a_measure(case)

The knowledge of a test case is its `retrieval_context`, else its `context` (passages joined by a
space, the rule of every front-end). Q² options are keywords, as for ragas: `qg_model`, `qa_model`,
`nli_model`, `device`, `variant`, `tiny`, `batch_size`, `max_batch`, any other `Q2Config` option in
`options={...}`; checked, and the models found, when the metric is built (one `Q2Error` sentence).

Batching: DeepEval's `evaluate` runs `a_measure` concurrently (its `AsyncConfig.max_concurrent`
test cases at a time, 20 by default), each on a copy of the metric; the copies share one async
micro-batcher per process and configuration, so concurrent test cases share one engine call. The
sync `measure` (DeepEval's `AsyncConfig(run_async=False)`, or a direct call) is one engine call
per test case.

After `measure`, the test case's record (`record`, a `frontend.Record`) and its fields: `score`
(Q², None when not scored), `reason` (the one explanation sentence), `verdict` (consistent,
inconsistent or unverified at `threshold`: 0.5 by default, an operating point's with
`operating_point=FILE`, a file `q2 calibrate` wrote, which the signature then names), `success` (`is_successful()`: the verdict is
consistent, i.e. Q² > `threshold`, the project's one rule), `signature` (the FULL signature, also
in `evaluation_model`, which DeepEval keeps with each result), `status` (scored, empty or bad),
`spans` (character offsets in the output, each with its reason); `verbose_logs` holds the record
as JSON (`q2_status`, `q2_score`, `q2_verdict`, `q2_reason`, `q2_spans`, ...). An empty output or
knowledge is not scored (score None, `error` "Not scored: ..."), nor is a test case whose output
is missing (`error` names it).
"""

from __future__ import annotations

import json
import typing as t

from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase

from q2_metric.frontend import VERDICTS, Item, Record, decision, verdict_of
from q2_metric.options import ADAPTER_KEYWORDS, merge_options
from q2_metric.runtime.cache import micro_batcher
from q2_metric.runtime.engine import Scored
from q2_metric.runtime.policy import DEFAULT_MAX_WAIT

DEFAULT_THRESHOLD = 0.5  # `threshold` when neither it nor an operating point is given


def _passage(context: t.Any) -> t.Any:
    """A retrieved passage's text (DeepEval's `RetrievedContextData` keeps it in `context`)."""
    return context if isinstance(context, str) else getattr(context, "context", context)


def knowledge_of(test_case: t.Any) -> t.Any:
    """The test case's knowledge: its `retrieval_context` (passages), else its `context`; None when
    it has neither."""
    passages = getattr(test_case, "retrieval_context", None)
    if passages is None:
        passages = getattr(test_case, "context", None)
    if isinstance(passages, (list, tuple)):
        return [_passage(p) for p in passages]
    return passages


def key_of(test_case: t.Any) -> str:
    """The test case's identity in messages: its `name`, else its input."""
    name = getattr(test_case, "name", None)
    if name:
        return f"test case {name!r}"
    return f"the test case with input {getattr(test_case, 'input', None)!r}"


class Q2FaithfulnessMetric(BaseMetric):
    """Q² of `actual_output` against `retrieval_context` (else `context`). Success: Q² > `threshold`."""

    def __init__(
        self,
        threshold: float | None = None,
        *,
        options: dict[str, t.Any] | None = None,
        variant: str | None = None,
        tiny: bool | None = None,
        batch_size: int | None = None,
        max_batch: int | None = None,
        qg_model: str | None = None,
        qa_model: str | None = None,
        nli_model: str | None = None,
        device: str | None = None,
        operating_point: t.Any = None,
        language: str | None = None,
        model_sets: str | None = None,
        max_wait: float = DEFAULT_MAX_WAIT,
        progress: bool = True,
        async_mode: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        # DeepEval copies a metric per test case by calling its class with the attributes that
        # share a name with a parameter here: each is kept under its own name
        self.options = dict(options or {})
        self.operating_point = operating_point
        # the threshold (default 0.5), or an operating point's (a file `q2 calibrate` wrote), read
        # before any model work; the records' signature names the operating point
        self._decision = decision(
            merge_options({"operating_point": operating_point}, self.options).get("operating_point"),
            threshold,
        )
        self.threshold = self._decision.threshold
        self.variant, self.tiny, self.batch_size, self.max_batch = variant, tiny, batch_size, max_batch
        self.qg_model, self.qa_model, self.nli_model, self.device = qg_model, qa_model, nli_model, device
        self.language, self.model_sets = language, model_sets
        self.max_wait, self.progress = max_wait, progress
        self.async_mode, self.verbose_mode = async_mode, verbose_mode
        self.include_reason = True
        keywords = {name: getattr(self, name) for name in ADAPTER_KEYWORDS}
        self._engine, self._batcher = micro_batcher(
            merge_options(keywords, self.options),
            max_wait=max_wait,
            progress=progress,
            tiny_hint="`tiny=True`",
        )
        self.signature: str | None = None
        self.evaluation_model = "Q²"
        self.record: Record | None = None
        self.status: str | None = None
        self.verdict: str | None = None
        self.spans: list[dict[str, t.Any]] = []

    @property
    def __name__(self) -> str:  # DeepEval names a metric's results by this property
        return "Q2 Faithfulness"

    def _item(self, test_case: LLMTestCase) -> Item:
        return self._decision.item(
            key_of(test_case), getattr(test_case, "actual_output", None), knowledge_of(test_case)
        )

    def _take(self, scored: Scored) -> float | None:
        """The metric's state from one item's record; returns its score."""
        record = self.record = self._decision.record(scored.result, scored.signature)
        self.status, self.verdict, self.signature = record.status, record.verdict, record.signature
        self.evaluation_model = self.signature
        self.spans = [s.to_dict() for s in record.spans]
        self.reason = record.reason
        # not scored: DeepEval shows the sentence as the test case's error
        self.score, self.error = record.score, None if record.score is not None else self.reason
        self.verbose_logs = json.dumps(record.to_dict("q2_"), ensure_ascii=False)
        self.success = self.is_successful()
        return self.score

    def measure(self, test_case: LLMTestCase, *args: t.Any, **kwargs: t.Any) -> float | None:
        """Q² of this test case: one engine call (`a_measure`, run concurrently, batches)."""
        outcome = self._engine.score_items([self._item(test_case)], self._batcher.max_batch)
        return self._take(Scored(outcome.items[0], outcome.signature))

    async def a_measure(self, test_case: LLMTestCase, *args: t.Any, **kwargs: t.Any) -> float | None:
        """Q² of this test case; concurrent calls (of this metric and its copies) share engine calls."""
        return self._take(await self._batcher.score(self._item(test_case)))

    def is_successful(self) -> bool:
        """The verdict is consistent (`frontend.verdict_of`: Q² above the threshold); False when not
        scored."""
        status = getattr(self, "status", None) or "scored"
        self.success = self.error is None and verdict_of(status, self.score, self.threshold) == VERDICTS[0]
        return self.success


__all__ = ["DEFAULT_THRESHOLD", "Q2FaithfulnessMetric", "key_of", "knowledge_of"]
