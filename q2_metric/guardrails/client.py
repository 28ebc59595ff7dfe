"""A client of the Q² service (`q2 serve`): `POST /v1/score` with a batch of items (`Q2Service.ask`), and
the streaming check (`Q2Service.open_stream`: `POST /v1/score/stream` with the knowledge, then the
answer's text as it arrives, `Q2ServiceStream.feed`, `end` and `cancel`); standard library only (no
HTTP package needed).

Fail closed: whatever keeps the service from answering (it cannot be reached, a timeout, a status
other than 200, a reply that is not the contract's, however broken: not HTTP, cut short, not UTF-8,
not JSON, JSON of another shape) is one `Q2ServiceError` sentence, never a verdict; a caller that
guards answers treats it as `unverified`. Each request of a stream has the same rules (a stream the
service closed, idle too long, is its refusal: one sentence). The timeout is a deadline for the whole request
(connecting, sending and reading the reply), not for each read: a reply that trickles in is given
up when the time is spent. A result's `verdict` is the service's own (`consistent`, `inconsistent`
or `unverified`); `is_consistent` is True only for exactly `consistent`.
"""

from __future__ import annotations

import http.client
import io
import json
import math
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from q2_metric.errors import Q2Error, Q2OptionError
from q2_metric.frontend import VERDICTS
from q2_metric.telemetry.events import traceparent_header

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0  # seconds for one whole request: connecting, sending and reading the reply


class Q2ServiceError(Q2Error, RuntimeError):
    """The Q² service gave no usable answer (unreachable, timed out, refused, or off the contract)."""


def is_consistent(result: Mapping[str, Any]) -> bool:
    """Whether the service said `consistent` for this item (anything else is not)."""
    return result.get("verdict") == "consistent" and result.get("status") == "scored"


@dataclass(frozen=True)
class Q2Service:
    """Where the service listens (`url`, e.g. "http://127.0.0.1:8000"), its API key if it asks for
    one (sent as `Authorization: Bearer KEY`) and the seconds a whole request may take (a deadline:
    connecting, sending and reading the reply)."""

    url: str = DEFAULT_URL
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise Q2OptionError(
                f"Invalid Q² service timeout={timeout!r}: give the seconds a request may take, a number above 0."
            )
        try:
            parts = urllib.parse.urlsplit(self.url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except (ValueError, TypeError, AttributeError):
            ok = False
        if not ok:
            raise Q2OptionError(
                f"Invalid Q² service url={self.url!r}: give its address as http://HOST:PORT (e.g. {DEFAULT_URL})."
            )

    def ask(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        threshold: float | None = None,
        spans: bool = True,
    ) -> list[dict[str, Any]]:
        """The service's result for each item (`response`, `knowledge`: a string or a list of
        passages, optional `history` and `id`), in order: `id`, `status`, `score`, `verdict`,
        `reason`, `spans`, `error` and the reply's full `signature`. `Q2ServiceError` when the service gives no usable answer."""
        sent = [dict(i) for i in items]
        body: dict[str, Any] = {"items": sent, "spans": spans}
        if threshold is not None:
            body["threshold"] = threshold
        reply = self._post("/v1/score", body)
        wrong = _off_contract(reply, sent)
        if wrong:
            raise Q2ServiceError(
                f"The Q² service at {self.url} answered off the /v1/score contract: {wrong}."
            )
        results: list[dict[str, Any]] = reply["results"]
        signature = reply.get("signature")
        if isinstance(signature, str):  # each result with the reply's full signature (its record's)
            for result in results:
                result.setdefault("signature", signature)
        return results

    def open_stream(
        self,
        knowledge: Any,
        *,
        threshold: float | None = None,
        spans: bool = True,
    ) -> Q2ServiceStream:
        """A streaming check of one answer against `knowledge` (a string or a list of passages):
        `POST /v1/score/stream`. Feed it the answer's text as it arrives (`feed`), then `end` it;
        `cancel` gives it up. `Q2ServiceError` when the service gives no usable answer."""
        body: dict[str, Any] = {"knowledge": knowledge, "spans": spans}
        if threshold is not None:
            body["threshold"] = threshold
        reply = self._post(STREAM_PATH, body)
        stream = reply.get("stream") if isinstance(reply, dict) else None
        if not isinstance(stream, str) or not stream or len(stream) > 200:
            raise Q2ServiceError(
                f"The Q² service at {self.url} answered off the {STREAM_PATH} contract: "
                f"its stream is {_short(repr(stream), 60)}, not an id."
            )
        return Q2ServiceStream(self, stream)

    def _post(self, path: str, body: dict[str, Any] | None, method: str = "POST") -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        headers.update(traceparent_header())  # the service parents its events to the caller's span
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.url.rstrip("/") + path,
            data=None if body is None else json.dumps(body).encode("utf-8"),
            headers=headers,
            method=method,
        )
        try:
            with _OPENER.open(request, timeout=self.timeout) as answer:
                data = answer.read()
        except urllib.error.HTTPError as err:
            detail = _detail(err)
            retry = err.headers.get("Retry-After") if err.headers else None
            raise Q2ServiceError(
                f"The Q² service at {self.url} refused the request: HTTP {err.code}"
                + (f" ({detail})" if detail else "")
                + (f", retry after {' '.join(str(retry).split())[:40]} s" if retry else "")
                + "."
            ) from None
        except (OSError, http.client.HTTPException, ValueError) as err:
            raise Q2ServiceError(f"The Q² service at {self.url} {_failed(err, self.timeout)}.") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Q2ServiceError(
                f"The Q² service at {self.url} answered with text that is not UTF-8."
            ) from None
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise Q2ServiceError(
                f"The Q² service at {self.url} answered with something that is not JSON."
            ) from None


STREAM_PATH = "/v1/score/stream"


class Q2ServiceStream:
    """One open streaming check on the service (`Q2Service.open_stream`): `feed` sends the answer's
    next text and returns the results of the sentences it completed (each checked once, when it
    completes, the sentence before it as context); `end` sends the last text and returns the last
    sentences' results and the final result of the whole answer (the same record as `ask`'s);
    `cancel` closes it. Every result is a dict of the `/v1/score` result's shape, checked as `ask`
    checks them; a reply off the contract, or none, is one `Q2ServiceError` sentence. After
    `end`, `cancel` or an error the stream is closed: a later `feed` or `end` is refused here (a
    stream whose request failed is left to the service, which closes it when it goes quiet)."""

    def __init__(self, service: Q2Service, stream: str) -> None:
        self.service, self.id = service, stream
        self._path = f"{STREAM_PATH}/{urllib.parse.quote(stream, safe='')}"
        self.closed = False

    def feed(self, text: str) -> list[dict[str, Any]]:
        """The results of the sentences `text` completed (often none)."""
        reply = self._send(self._path, {"text": text})
        return self._sentences(reply)

    def end(self, text: str = "") -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The results of the sentences left, and the final result of the whole answer."""
        reply = self._send(f"{self._path}/end", {"text": text} if text else {})
        self.closed = True
        sentences = self._sentences(reply)
        final = reply.get("final")
        wrong = _result_off_contract(final, {})
        if wrong:
            self._off(f"its final result{wrong}")
        return sentences, final

    def cancel(self) -> None:
        """Closes the stream on the service (nothing is raised: a stream the service no longer
        holds, or a service gone, leaves nothing to close)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.service._post(self._path, None, method="DELETE")
        except Q2ServiceError:
            pass

    def _send(self, path: str, body: dict[str, Any]) -> Any:
        if self.closed:
            raise Q2ServiceError(f"The stream {self.id!r} on the Q² service at {self.service.url} is closed.")
        try:
            return self.service._post(path, body)
        except Q2ServiceError:
            self.closed = True
            raise

    def _sentences(self, reply: Any) -> list[dict[str, Any]]:
        sentences = reply.get("sentences") if isinstance(reply, dict) else None
        if not isinstance(sentences, list):
            self._off("its sentences are not a list")
        for n, result in enumerate(sentences):
            wrong = _result_off_contract(result, {})
            if wrong:
                self._off(f"sentence {n}{wrong}")
        return sentences

    def _off(self, wrong: str) -> NoReturn:
        self.closed = True
        raise Q2ServiceError(
            f"The Q² service at {self.service.url} answered off the {STREAM_PATH} contract: {wrong}."
        )


def _failed(err: BaseException, timeout: float) -> str:
    """What kept the service from answering, as the end of a sentence that names it. urllib wraps
    what fails while connecting and sending (`URLError`); what fails while reading comes bare."""
    connecting = isinstance(err, urllib.error.URLError)
    if isinstance(err, urllib.error.URLError):
        if not isinstance(err.reason, BaseException):
            return f"could not be reached: {_short(err.reason)}"
        err = err.reason
    if isinstance(err, TimeoutError):
        return f"did not answer within {timeout:g} s"
    if isinstance(err, http.client.RemoteDisconnected):
        return "closed the connection without answering"
    if isinstance(err, http.client.IncompleteRead):
        got = len(err.partial)
        if err.expected is None:
            return f"cut its answer short after {got} bytes"
        return f"cut its answer short: {got} of {got + err.expected} bytes came"
    if isinstance(err, http.client.BadStatusLine):
        return f"answered with something that is not HTTP (its first line: {_short(err)!r})"
    if isinstance(err, http.client.HTTPException):
        return f"answered with something that is not HTTP ({_short(err) or 'a broken head'})"
    if isinstance(err, ValueError):
        return "answered with something that is not HTTP"
    why = _short(err.strerror if isinstance(err, OSError) and err.strerror else err) or type(err).__name__
    return f"could not be reached: {why}" if connecting else f"broke the connection off: {why}"


def _short(value: object, most: int = 80) -> str:
    """`value` as text on one line, at most `most` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= most else text[: most - 1] + "…"


def _off_contract(reply: Any, sent: list[dict[str, Any]]) -> str:
    """What makes the reply something other than one result per item sent, in order, each of the
    contract's shape (the words after "answered off the contract:"); empty when it is the contract."""
    if not isinstance(reply, dict):
        return "its reply is not an object"
    results = reply.get("results")
    if not isinstance(results, list):
        return "its results are not a list"
    if len(results) != len(sent):
        return f"{len(results)} results for {len(sent)} item{'s' if len(sent) != 1 else ''}"
    for n, (result, item) in enumerate(zip(results, sent)):
        wrong = _result_off_contract(result, item)
        if wrong:
            return f"item {n}{wrong}"
    return ""


def _result_off_contract(result: Any, item: Mapping[str, Any]) -> str:
    """What is wrong with one item's result, after "item N" (empty when nothing is)."""
    if not isinstance(result, dict):
        return " is not an object"
    got = {key: _short(repr(result.get(key)), 60) for key in ("verdict", "status", "score", "spans", "id")}
    verdict, status, score = result.get("verdict"), result.get("status"), result.get("score")
    if verdict not in VERDICTS:
        return f"'s verdict is {got['verdict']}, not one of {', '.join(VERDICTS)}"
    if not isinstance(status, str):
        return f"'s status is {got['status']}, not text"
    for key in ("reason", "error", "id"):
        if result.get(key) is not None and not isinstance(result[key], str):
            return f"'s {key} is {_short(repr(result[key]), 60)}, not text"
    if "id" in item and result.get("id") != item["id"]:
        return f"'s id is {got['id']}, not {_short(repr(item['id']), 60)}"
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1
    ):
        return f"'s score is {got['score']}, not a number from 0 to 1"
    spans = result.get("spans")
    if spans is not None and (not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans)):
        return f"'s spans are {got['spans']}, not a list of objects"
    if verdict == "consistent" and status != "scored":
        return " is consistent without being scored"
    if verdict == "consistent" and score is None:
        return " is consistent without a score"
    return ""


def _detail(err: urllib.error.HTTPError) -> str:
    """The error's sentence (`error` in `q2 serve`'s error body, `detail` in FastAPI's own) or its
    first 200 characters, on one line (nothing when the body cannot be read by the deadline)."""
    try:
        text = err.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, ValueError):
        return ""
    try:
        body = json.loads(text)
        found = body.get("error", body.get("detail"))
    except (ValueError, RecursionError, AttributeError):
        found = None
    return _short(found if found is not None else text, 200)


class _DeadlineReader(io.RawIOBase):
    """A connected socket's bytes, each read waiting at most the time left before `end` (a
    `time.monotonic()` instant); past it, `TimeoutError`."""

    def __init__(self, sock: socket.socket, end: float) -> None:
        super().__init__()
        self._sock, self._raw, self._end = sock, sock.makefile("rb", buffering=0), end

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(left)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """A reply whose whole reading, status line, headers and body, ends by one deadline: the
    socket's timeout when the reply begins (`_DeadlineConnection.getresponse` sets it to the time
    left), not a wait for each read."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        timeout = sock.gettimeout()
        if timeout is not None:
            self.fp.close()
            self.fp = io.BufferedReader(_DeadlineReader(sock, time.monotonic() + timeout))


class _DeadlineConnection(http.client.HTTPConnection):
    """An HTTP connection whose `timeout` is a deadline for the whole exchange, counted from its
    making: connecting, sending and reading the reply each wait at most the time left (plain
    http.client, and urllib with it, waits up to the timeout for each read)."""

    response_class = _DeadlineResponse

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.timeout, (int, float)):
            raise TypeError("a deadline needs the seconds the request may take")
        self._end = time.monotonic() + self.timeout

    def _left(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        return left

    def connect(self) -> None:
        self.timeout = self._left()
        super().connect()

    def send(self, data: Any) -> None:
        if self.sock is not None:
            self.sock.settimeout(self._left())
        super().send(data)

    def getresponse(self) -> http.client.HTTPResponse:
        if self.sock is not None:
            self.sock.settimeout(self._left())
        return super().getresponse()


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    """The same over TLS (its handshake waits at most the time left when connecting, per read)."""


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_DeadlineConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_DeadlineHTTPSConnection, req)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer like any other status (a POST redirected would be sent again as a
    GET, on a new deadline): refused, never followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# urllib's opener (proxies from the environment as before) over connections with a deadline
_OPENER = urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler(), _NoRedirect())
