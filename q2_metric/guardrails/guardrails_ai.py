"""Guardrails AI: `Q2Consistency`, a validator that passes a response Q² finds consistent with its
knowledge and fails any other, each unsupported span an `ErrorSpan(start, end, reason)` at its
character offsets in the response.

    from guardrails import Guard
    from q2_metric.guardrails.guardrails_ai import Q2Consistency
    guard = Guard().use(Q2Consistency(threshold=0.5, tiny=True, on_fail="noop"))
    outcome = guard.validate(response, metadata={"knowledge": knowledge})   # or a list of passages
    outcome.validation_passed, guard.error_spans_in_output()

In process (default) the validator holds the Q² engine: its keywords (`qg_model`, `qa_model`,
`nli_model`, `device`, `tiny`, `variant`, `batch_size` and every other `Q2Config` option) are
checked, and the models found, when it is built; one engine per process and configuration,
each `validate` one engine call through the front-end contract. With `service_url` it asks the Q²
service (q2 serve) instead and takes the service's verdict and spans; its options are then the
service's own.

Both paths build the validation result from the same record (`frontend.Record`): its metadata
is `Record.to_dict(prefix="q2_")` (`q2_status`, `q2_score`, `q2_no_nli`, `q2_verdict`,
`q2_reason`, `q2_spans`, `q2_error`, `q2_signature`: the service's through the service),
each `ErrorSpan`'s reason is its span's one phrase (`display.span_reason`), so a response gets the
same verdict, message and span reasons in process and through the service.

Fail closed: a response Q² could not check (an empty response or knowledge, a bad value, no
knowledge in the metadata, a service that cannot be reached, refuses, answers off its contract or
not within `timeout` seconds, a deadline for the whole request) fails, never passes; its error
message says why. Consistent means Q² > threshold (`q2 score --threshold`'s rule: the service
decides at the threshold the validator sends). `operating_point=FILE` (a file `q2 calibrate`
wrote) sets the threshold to its own and names it in the signature (`op:`), on both paths.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from guardrails import Validator, register_validator
from guardrails.classes.validation.validation_result import (
    ErrorSpan,
    FailResult,
    PassResult,
    ValidationResult,
)

from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.frontend import Record, SpanRecord, decision, unchecked
from q2_metric.guardrails.client import DEFAULT_TIMEOUT, Q2Service, Q2ServiceError
from q2_metric.runtime.cache import engine_for

NAME = "q2/consistency"
DEFAULT_THRESHOLD = 0.5  # not calibrated: choose one on labelled data (`q2 calibrate`, then operating_point=)
KEY = "the validated text"  # the item's name in Q²'s sentences


def _error_spans(value: str, spans: tuple[SpanRecord, ...]) -> list[ErrorSpan]:
    """The unsupported spans (supported is False) that lie in `value`, as `ErrorSpan`s with their
    one phrase."""
    out = []
    for s in spans:
        start, end = s.start, s.end
        if s.supported is not False or not isinstance(start, int) or not isinstance(end, int):
            continue
        if 0 <= start < end <= len(value) and value[start:end] == s.text:
            out.append(ErrorSpan(start=start, end=end, reason=s.reason))
    return out


@register_validator(name=NAME, data_type="string")
class Q2Consistency(Validator):
    """Passes a response whose Q² against `metadata["knowledge"]` (a string or a list of passages;
    optional `metadata["history"]`, the turns before it) is above `threshold`; fails any other,
    with an `ErrorSpan` per unsupported span (the whole response when none is).

    In process by default (Q² options as keywords); with `service_url` (e.g.
    "http://127.0.0.1:8000") the Q² service decides (`api_key`: its key, `timeout`: seconds for the whole request)."""

    required_metadata_keys: ClassVar[list[str]] = ["knowledge"]

    def __init__(
        self,
        threshold: float | None = None,
        *,
        operating_point: Any = None,
        service_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        on_fail: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(
            on_fail=on_fail,
            threshold=threshold,
            operating_point=None if operating_point is None else str(operating_point),
            service_url=service_url,
            timeout=timeout,
            **options,
        )
        # the threshold (default 0.5), or an operating point's (a file `q2 calibrate` wrote), read
        # before any model work or request; the records' signature names the operating point
        self._decision = decision(operating_point, threshold)
        self.threshold = self._decision.threshold
        self._service: Q2Service | None = None
        self._engine: Any = None
        if service_url is not None:
            if options:
                raise Q2OptionError(
                    f"The Q² options {', '.join(sorted(options))} are the service's own: give them to "
                    "q2 serve, not to a validator with service_url."
                )
            self._service = Q2Service(service_url, api_key, timeout)
        else:
            self._engine, _ = engine_for(options, check=True, tiny_hint="`tiny=True`")

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        knowledge, history = metadata.get("knowledge"), metadata.get("history")
        if self._service is not None:
            return self._result(value, self._ask_service(value, knowledge, history))
        outcome = self._engine.score_items([self._decision.item(KEY, value, knowledge, history)])
        return self._result(value, self._decision.record(outcome.items[0], outcome.signature))

    def _ask_service(self, value: Any, knowledge: Any, history: Any) -> Record:
        assert self._service is not None
        item: dict[str, Any] = {"response": value, "knowledge": knowledge}
        if history is not None:
            item["history"] = history
        try:
            record = Record.from_dict(self._service.ask([item], threshold=self.threshold)[0], KEY)
            if record.signature:  # decided at this validator's threshold: its operating point named
                record = dataclasses.replace(record, signature=str(self._decision.sign(record.signature)))
            return record
        except (Q2ServiceError, Q2InputError) as err:  # fail closed: no answer is no pass
            return unchecked(KEY, str(err))

    def _result(self, value: Any, record: Record) -> ValidationResult:
        """The validation result of a record: a pass when consistent, else a failure saying why,
        with an `ErrorSpan` per unsupported span when Q² scored the response."""
        facts = record.to_dict("q2_")
        if record.consistent:
            return PassResult(metadata=facts)
        if record.score is None or not isinstance(value, str):
            return FailResult(error_message=f"Unverified: {record.reason}", metadata=facts)
        message = f"Q² {record.score:.4g} is not above {self.threshold:g}: {record.reason}"
        return self._fail(value, message, _error_spans(value, record.spans), facts)

    @staticmethod
    def _fail(value: str, message: str, spans: list[ErrorSpan], facts: dict[str, Any]) -> FailResult:
        """A failure with its spans; the whole response as one span when no span is unsupported
        (Q² fell back to end-to-end NLI, or its questions were answered only in part)."""
        if not spans and value:
            spans = [ErrorSpan(start=0, end=len(value), reason=message)]
        return FailResult(error_message=message, error_spans=spans, metadata=facts)


__all__ = ["DEFAULT_THRESHOLD", "NAME", "Q2Consistency"]
