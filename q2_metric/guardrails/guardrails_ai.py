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

Streams: with `on_fail="fix"`, `Guard(...)(llm_api, stream=True, metadata=...)` (Guardrails AI's
own streaming runner) sends each chunk to `validate_stream`, which feeds it to one streaming check
per answer (`runtime.stream.Q2Stream` in process, the service's stream session with
`service_url`): the chunking is Q²'s sentences. Each sentence is checked once, when it completes;
the runner lets out a sentence whose (provisional) verdict is consistent; a sentence that is not,
or could not be checked, is held back with everything after it (the failure's fix is the text
before it). At the end the final result of the whole answer (the batch result, `q2_final_*` in the
last result's metadata) decides what is left: let out when consistent, withheld otherwise
(docs/streaming.md: when a caller may release a sentence). Any other `on_fail` fails every chunk of a
stream: Guardrails AI's runner streams those chunks out before the validator sees them and never
asks it about the text after the last completed sentence (docs/guardrails.md).

Fail closed: a response Q² could not check (an empty response or knowledge, a bad value, no
knowledge in the metadata, a service that cannot be reached, refuses, answers off its contract or
not within `timeout` seconds, a deadline for the whole request) fails, never passes; its error
message says why. Consistent means Q² > threshold (`q2 score --threshold`'s rule: the service
decides at the threshold the validator sends). `operating_point=FILE` (a file `q2 calibrate`
wrote) sets the threshold to its own and names it in the signature (`op:`), on both paths.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from guardrails import Validator, register_validator
from guardrails.classes.validation.validation_result import (
    ErrorSpan,
    FailResult,
    PassResult,
    ValidationResult,
)

from q2_metric.errors import Q2Error, Q2InputError, Q2OptionError
from q2_metric.frontend import Record, SpanRecord, decision, unchecked
from q2_metric.guardrails.client import DEFAULT_TIMEOUT, Q2Service, Q2ServiceError, Q2ServiceStream
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


@dataclass(frozen=True)
class _Sentence:
    """A checked sentence of a streamed answer: its [start, end) in the answer and its record."""

    start: int
    end: int
    record: Record


class _ServiceSession:
    """A stream on the Q² service (`Q2ServiceStream`), its results as `_Sentence`s."""

    def __init__(self, service: Q2Service, knowledge: Any, threshold: float) -> None:
        self._stream: Q2ServiceStream = service.open_stream(knowledge, threshold=threshold)

    def feed(self, text: str, length: int) -> list[_Sentence]:
        return [_sentence(d, length) for d in self._stream.feed(text)]

    def end(self, text: str, length: int) -> tuple[list[_Sentence], Record]:
        sentences, final = self._stream.end(text)
        return [_sentence(d, length) for d in sentences], Record.from_dict(final, KEY)

    def cancel(self) -> None:
        self._stream.cancel()


def _sentence(data: dict[str, Any], length: int) -> _Sentence:
    """A sentence result from the service; offsets outside the answer so far are off its contract."""
    start, end = data.get("start"), data.get("end")
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= length):
        raise Q2InputError(
            f"The Q² service placed a sentence at {start!r}..{end!r}, outside the {length} characters streamed."
        )
    return _Sentence(start, end, Record.from_dict(data, KEY))


class _LocalSession:
    """The streaming check in process (`runtime.stream.Q2Stream`, over the process's engine)."""

    def __init__(self, knowledge: Any, threshold: float, options: dict[str, Any]) -> None:
        from q2_metric.runtime.stream import Q2Stream

        self._stream = Q2Stream(knowledge, threshold=threshold, **options)

    def feed(self, text: str, length: int) -> list[_Sentence]:
        return [_Sentence(r.sentence.start, r.sentence.end, r.record) for r in self._stream.feed(text)]

    def end(self, text: str, length: int) -> tuple[list[_Sentence], Record]:
        before = len(self._stream.sentences)
        final = self._stream.end(text)
        done = self._stream.sentences[before:]
        return [_Sentence(r.sentence.start, r.sentence.end, r.record) for r in done], final

    def cancel(self) -> None:
        pass


@dataclass
class _StreamState:
    """One streamed answer: its session (None once it failed), the text so far, how much of it the
    runner has been given back (`released`), and the metadata the runner passes on next (the user's,
    then each result's own: a call with any other is a new stream)."""

    session: _ServiceSession | _LocalSession | None
    metadata: Any
    text: str = ""
    released: int = 0
    failure: Record | None = None
    holding: bool = False  # a sentence failed: the rest waits for the final result


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
        self._options = dict(options)
        self._stream: _StreamState | None = None

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

    def validate_stream(self, chunk: Any, metadata: dict[str, Any], **kwargs: Any) -> ValidationResult | None:
        """Guardrails AI's streaming hook: `chunk` is the answer's next text, `remainder=True` its
        end. Returns the result of the text up to the last sentence this chunk completed (None
        when it completed none, or while the text is held back), each sentence checked once, when
        it completes (see the module)."""
        text = chunk if isinstance(chunk, str) else ""
        if self.on_fail_descriptor != "fix":
            reason = (
                'Q² checks a streamed answer only with on_fail="fix": with any other, Guardrails AI '
                "streams each chunk out before checking it and never checks the text after the last "
                "complete sentence."
            )
            record = unchecked(KEY, reason)
            return FailResult(
                error_message=f"Unverified: {reason}",
                fix_value="",
                error_spans=[ErrorSpan(start=0, end=max(len(text), 1), reason=reason)],
                metadata={**metadata, **record.to_dict("q2_")},
                validated_chunk=text,
            )
        state = self._stream
        if state is None or metadata is not state.metadata:  # a new answer (a stale one is given up)
            if state is not None and state.session is not None:
                state.session.cancel()
            state = self._stream = self._open(metadata)
        state.text += text
        end = bool(kwargs.get("remainder"))
        final: Record | None = None
        sentences: list[_Sentence] = []
        if state.session is not None:
            try:
                if end:
                    sentences, final = state.session.end(text, len(state.text))
                else:
                    sentences = state.session.feed(text, len(state.text))
            except (Q2Error, ValueError, TypeError) as err:  # fail closed: the rest is unverified
                state.session.cancel()
                state.session, state.failure = None, unchecked(KEY, str(err))
        if end:
            self._stream = None
        result: ValidationResult
        if state.failure is not None:
            if state.holding and not end:
                return None
            result = self._stream_failure(state)
        elif end:
            assert final is not None
            result = self._stream_end(state, sentences, final)
        elif state.holding or not sentences:
            return None
        else:
            result = self._stream_sentences(state, sentences)
        state.metadata = result.metadata  # (the result's own copy: what the runner passes on next)
        return result

    def _open(self, metadata: dict[str, Any]) -> _StreamState:
        """A new stream's state and session; a session that cannot open is the stream's failure."""
        knowledge = metadata.get("knowledge")
        state = _StreamState(None, metadata)
        try:
            if self._service is not None:
                state.session = _ServiceSession(self._service, knowledge, self.threshold)
            else:
                state.session = _LocalSession(knowledge, self.threshold, self._options)
        except (Q2Error, ValueError, TypeError) as err:
            state.failure = unchecked(KEY, str(err))
        return state

    def _facts(
        self, state: _StreamState, record: Record | None, sentences: list[_Sentence]
    ) -> dict[str, Any]:
        """A result's metadata: the runner's, the record's (`q2_...`) and the sentences it covers."""
        facts: dict[str, Any] = {**state.metadata, **(record.to_dict("q2_") if record else {})}
        facts["q2_sentences"] = [
            {"start": s.start, "end": s.end, "verdict": s.record.verdict, "reason": s.record.reason}
            for s in sentences
        ]
        return facts

    def _message(self, record: Record, whole: bool = False) -> str:
        if record.score is None:
            return f"Unverified: {record.reason}"
        what = "The whole answer's Q²" if whole else "Q²"
        return f"{what} {record.score:.4g} is not above {self.threshold:g}: {record.reason}"

    def _stream_failure(self, state: _StreamState) -> FailResult:
        """Everything not yet given back withheld (Q² could not check it), and held from here on."""
        assert state.failure is not None
        covered = state.text[state.released :]
        state.released, state.holding = len(state.text), True
        message = self._message(state.failure)
        spans = [ErrorSpan(start=0, end=len(covered), reason=message)] if covered else []
        return FailResult(
            error_message=message,
            fix_value="",
            error_spans=spans,
            metadata=self._facts(state, state.failure, []),
            validated_chunk=covered,
        )

    def _stream_sentences(self, state: _StreamState, sentences: list[_Sentence]) -> ValidationResult:
        """Sentences completed mid-stream: the text up to the last one let out when each is
        consistent; else a failure that lets out the text before the first that is not, and holds
        back that sentence and everything after it until the final result decides."""
        begin = state.released
        failed = next((s for s in sentences if not s.record.consistent), None)
        if failed is None:
            upto = sentences[-1].end
            state.released = upto
            return PassResult(
                metadata=self._facts(state, sentences[-1].record, sentences),
                validated_chunk=state.text[begin:upto],
            )
        covered = state.text[begin : failed.end]
        state.released, state.holding = failed.start, True
        spans = [
            ErrorSpan(start=e.start - begin, end=e.end - begin, reason=e.reason)
            for e in _error_spans(state.text, failed.record.spans)
            if failed.start <= e.start and e.end <= failed.end
        ]
        message = self._message(failed.record)
        if not spans:
            spans = [ErrorSpan(start=failed.start - begin, end=failed.end - begin, reason=message)]
        return FailResult(
            error_message=f"A sentence of the streamed answer failed, so it is held back: {message}",
            fix_value=state.text[begin : failed.start],
            error_spans=spans,
            metadata=self._facts(state, failed.record, [s for s in sentences if s.end <= failed.end]),
            validated_chunk=covered,
        )

    def _stream_end(self, state: _StreamState, sentences: list[_Sentence], final: Record) -> ValidationResult:
        """The end: the final result of the whole answer decides what is left (held back or not):
        let out when it is consistent, withheld otherwise."""
        covered = state.text[state.released :]
        state.released = len(state.text)
        facts = self._facts(state, sentences[-1].record if sentences else final, sentences)
        facts.update(final.to_dict("q2_final_"))
        if final.consistent:
            return PassResult(metadata=facts, validated_chunk=covered)
        message = self._message(final, whole=True)
        spans = [ErrorSpan(start=0, end=len(covered), reason=message)] if covered else []
        return FailResult(
            error_message=message, fix_value="", error_spans=spans, metadata=facts, validated_chunk=covered
        )

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
