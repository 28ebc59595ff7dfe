"""One `gen_ai.evaluation.result` event per scored response (OpenTelemetry's GenAI semantic
conventions), emitted through the Logs API (`opentelemetry._logs`), so that a verdict lands where
the traces of the answer it checks are:

- `gen_ai.evaluation.name`: `q2`;
- `gen_ai.evaluation.score.value`: the response's Q² (absent when it has none);
- `gen_ai.evaluation.score.label`: the decision at the operating point's threshold (`consistent` or
  `inconsistent`, `display.decide`), `unverified` for a response Q² could not score; absent
  without an operating point or a threshold;
- `gen_ai.evaluation.explanation`: the weakest valid question (the lowest span score) with the
  response's and the knowledge's answers and its span score; without a valid question, the
  response's reason line;
- `error.type`: `unverified` for a response Q² could not score;
- `gen_ai.response.id`: the caller's id of the response, where given.

The event is parented to the caller's span (`caller_context`, taken where the response was asked
for, even when the scoring runs in another thread): the W3C `traceparent` header of a `q2 serve`
request, else the current context when a span is active, else the W3C `traceparent` in the
`TRACEPARENT` environment variable (a command run inside a traced job), else none. With no logger provider configured, the API's default drops every event; without the
`opentelemetry-api` package (`pip install 'q2-metric[otel]'`) nothing is emitted at all.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from q2_metric.display import decide

if TYPE_CHECKING:
    from q2_metric.results import QuestionTrace, ResponseScore

EVENT_NAME = "gen_ai.evaluation.result"
EVALUATION_NAME = "q2"
UNVERIFIED = "unverified"
SCOPE = "q2_metric"


def weakest_question(result: ResponseScore) -> QuestionTrace | None:
    """The valid question with the lowest span score (the first of ties), or None."""
    scored = [q for q in result.valid_questions if q.score is not None]
    return min(scored, key=lambda q: q.score if q.score is not None else math.inf) if scored else None


def explanation(result: ResponseScore) -> str:
    """The weakest question and its answers, or, without a valid question, the reason line."""
    q = weakest_question(result)
    if q is None:
        return result.reason or ""
    return (
        f"Weakest question: {q.question!r}; the response answers {q.response_answer or ''!r}, the "
        f"knowledge {q.knowledge_answer or 'no answer'!r} (span score {q.score:.3g})."
    )


def attributes(
    result: ResponseScore, threshold: float | None = None, response_id: str | None = None
) -> dict[str, Any]:
    """The event's attributes for one response (see the module's docstring)."""
    out: dict[str, Any] = {"gen_ai.evaluation.name": EVALUATION_NAME}
    if result.scored:
        out["gen_ai.evaluation.score.value"] = float(result.q2)
        if threshold is not None:
            out["gen_ai.evaluation.score.label"] = decide(result.q2, threshold)
    else:
        out["gen_ai.evaluation.score.label"] = UNVERIFIED
        out["error.type"] = UNVERIFIED
    text = explanation(result)
    if text:
        out["gen_ai.evaluation.explanation"] = text
    if response_id is not None:
        out["gen_ai.response.id"] = response_id
    return out


_OTEL: list[bool] = []  # whether the OpenTelemetry API is installed (asked once)


def _installed() -> bool:
    if not _OTEL:
        try:
            import opentelemetry.context  # noqa: F401
        except ImportError:
            _OTEL.append(False)
        else:
            _OTEL.append(True)
    return _OTEL[0]


def _extract(traceparent: str) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent})


def caller_context(traceparent: str | None = None) -> Any:
    """The context a caller's events are parented to, taken now, in the caller's thread (the events
    are emitted later, wherever the scoring runs): the W3C `traceparent` given (`q2 serve`: the
    request's header), else the current context when a span is active in it, else the
    `TRACEPARENT` environment variable's, else None (no parent). None without OpenTelemetry."""
    if not _installed():
        return None
    if traceparent:
        return _extract(traceparent)
    from opentelemetry import context, trace

    if trace.get_current_span().get_span_context().is_valid:
        return context.get_current()
    carrier = os.environ.get("TRACEPARENT")
    return _extract(carrier) if carrier else None


def traceparent_header() -> dict[str, str]:
    """The W3C `traceparent` header of the caller's span (`caller_context`), for a request to the
    Q² service (`guardrails.client`): its events are then parented to that span. {} without one."""
    context = caller_context()
    if context is None:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=context)
    return {"traceparent": carrier["traceparent"]} if "traceparent" in carrier else {}


def _parent() -> Any:
    """The context to parent the events to: None (the current one) when a span is active in it,
    else the `TRACEPARENT` environment variable's, else None."""
    from opentelemetry import trace

    if trace.get_current_span().get_span_context().is_valid:
        return None
    return caller_context()


def emit_each(
    responses: Sequence[ResponseScore],
    thresholds: Sequence[float | None],
    parents: Sequence[Any],
    response_ids: Sequence[str | None] | None = None,
) -> int:
    """One event per response, each with its own threshold (the label's) and parent context
    (`caller_context`, taken where the response was asked for; None: the current context). The
    one emitter: the contract's scoring door (`frontend.score_checked`), `Q2Scorer.score` and
    `q2 score` call it. Returns how many were handed to OpenTelemetry (0 without it)."""
    if not responses or not _installed():
        return 0
    try:
        from opentelemetry._logs import SeverityNumber, get_logger
    except ImportError:  # an API too old for the Logs API: nothing to emit to
        return 0
    from q2_metric.version import __version__

    if not len(thresholds) == len(parents) == len(responses):
        raise ValueError("thresholds and parents must give one per response")
    if response_ids is not None and len(response_ids) != len(responses):
        raise ValueError("response_ids must give one id per response")
    logger = get_logger(SCOPE, __version__)
    for i, result in enumerate(responses):
        logger.emit(
            event_name=EVENT_NAME,
            severity_number=SeverityNumber.INFO,
            attributes=attributes(result, thresholds[i], None if response_ids is None else response_ids[i]),
            context=parents[i],
        )
    return len(responses)


def emit_evaluations(
    responses: Sequence[ResponseScore],
    threshold: float | None = None,
    response_ids: Sequence[str] | None = None,
) -> int:
    """Emit one `gen_ai.evaluation.result` event per response (in order), parented to the current
    span, else the `TRACEPARENT` variable's; returns how many were handed to OpenTelemetry (0
    without it). `threshold` (an operating point's) gives the labels."""
    if not responses or not _installed():
        return 0
    context = _parent()
    return emit_each(responses, [threshold] * len(responses), [context] * len(responses), response_ids)
