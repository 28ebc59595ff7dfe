"""The FastAPI app of `q2 serve` (the HTTP contract: docs/serve.md).

`create_app(config, limits)` builds the app without loading anything; its lifespan loads the models
once in the background (`/health` answers at once, `/ready` once they are loaded and warmed). Each
request's items are checked one by one by the one item check (`frontend.validate_items`): a bad
item gets its own error entry, the good ones go to the runtime's micro-batcher (`MicroBatcher`), which scores
them with other requests' items in engine calls through `frontend.score_items`. Fail closed: an
item Q² could not check is `unverified`, never `consistent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from q2_metric import display, frontend
from q2_metric.config import Q2Config
from q2_metric.errors import Q2Error, Q2OptionError
from q2_metric.frontend import Item, ItemResult
from q2_metric.runtime.engine import Engine
from q2_metric.runtime.micro import MicroBatcher
from q2_metric.runtime.policy import DEFAULT_MAX_BATCH, DEFAULT_MAX_WAIT, BatchPolicy
from q2_metric.runtime.threads import in_engine_thread, trim_heap

API_KEY_ENV = "Q2_SERVE_API_KEY"
WARM_ITEM = Item(
    "warm-up", "Bob Ross hosted The Joy of Painting.", "Bob Ross hosted the show The Joy of Painting."
)


@dataclass(frozen=True)
class Limits:
    """The service's limits and batching (every one a `q2 serve` flag)."""

    max_body_bytes: int = 1_000_000  # a larger request body: 413
    max_items: int = 256  # more items in one request: 413
    max_queue: int = 1024  # items accepted and not yet answered; more: 429 with Retry-After
    timeout: float = 60.0  # seconds a request may take; past it: 504 (its items leave their batch)
    max_batch: int = DEFAULT_MAX_BATCH  # items per engine call
    max_wait: float = DEFAULT_MAX_WAIT  # the longest quiet gap a batch waits out for the items it expects
    threshold: float = 0.5  # the default decision threshold (`display.decide`)
    retry_after: int = 1  # seconds, in Retry-After
    api_key: str | None = field(default=None, repr=False)  # Authorization: Bearer <key>

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_items", "max_queue", "max_batch", "retry_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise Q2OptionError(f"Invalid {name.replace('_', '-')}={value!r}: use an integer >= 1.")
        for name in ("timeout", "max_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise Q2OptionError(f"Invalid {name.replace('_', '-')}={value!r}: use a number of seconds.")
        if self.timeout <= 0 or self.max_wait < 0:
            raise Q2OptionError("Invalid timeout or max-wait: the timeout must be > 0 and max-wait >= 0.")
        display.check_threshold(self.threshold)


def api_key_from(path: str | None = None) -> str | None:
    """The API key: the file `path` (its first line), else the environment variable Q2_SERVE_API_KEY;
    None: no key asked for."""
    if path:
        with open(path, encoding="utf-8") as f:
            key = f.readline().strip()
        if not key:
            raise Q2OptionError(f"The API key file '{path}' is empty.")
        return key
    return os.environ.get(API_KEY_ENV) or None


SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    """Prometheus metrics of one app (its own registry: several apps in one process do not clash)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter(
            "q2_serve_requests", "HTTP requests to /v1/score by status code", ["code"], registry=self.registry
        )
        self.items = Counter(
            "q2_serve_items",
            "items by outcome (scored, empty, bad, dropped, timeout)",
            ["outcome"],
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "q2_serve_batch_size",
            "items per engine call",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
            registry=self.registry,
        )
        self.latency = Histogram(
            "q2_serve_request_seconds",
            "seconds per /v1/score request answered 200",
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.engine = Histogram(
            "q2_serve_engine_seconds",
            "seconds per engine call (one micro-batch scored)",
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )
        self.queue = Gauge(
            "q2_serve_queue_depth", "items accepted and not yet answered", registry=self.registry
        )

    def text(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class Service:
    """The models, the micro-batcher and the state of one serving process."""

    def __init__(self, config: Q2Config, limits: Limits, scorer: Any = None) -> None:
        self.config, self.limits, self.scorer = config, limits, scorer
        self.metrics = Metrics()
        self.ready = False
        self.draining = False  # SIGTERM: new requests refused, in-flight ones finished
        self.failed: str | None = None  # why the models could not be loaded
        self.queued = 0  # items accepted and not yet answered
        self.signature = ""
        self.engine: Engine | None = None
        self.micro: MicroBatcher | None = None

    def load(self) -> None:
        """The models checked, loaded once and warmed on one item (blocking: in the engine thread,
        where every engine call runs)."""
        engine = Engine(self.config, self.limits.max_batch, scorer=self.scorer)
        if self.scorer is None:  # a given scorer (tests: a scripted one) has no model files to check
            engine.check()
        engine.scorer.load()
        outcome = engine.score_items([WARM_ITEM])
        self.signature = str(outcome.signature)
        self.engine = engine
        policy = BatchPolicy(self.limits.max_batch, self.limits.max_wait, adaptive=True)
        self.micro = MicroBatcher(engine, policy, observe=self.observe)
        self.ready = True

    def observe(self, size: int, seconds: float) -> None:
        """Each engine call of the micro-batcher (in the engine thread): its size and time in the
        metrics, then the C heap's free memory handed back (`trim_heap`)."""
        self.metrics.batch_size.observe(size)
        self.metrics.engine.observe(seconds)
        trim_heap()

    async def start(self) -> None:
        try:
            await in_engine_thread(asyncio.get_running_loop(), self.load)  # the engine calls' thread
        except Exception as err:  # the service stays up and says why in /ready
            self.failed = str(err) if isinstance(err, Q2Error) else f"{type(err).__name__}: {err}"

    def info(self) -> dict[str, Any]:
        from q2_metric.signature import batch_invariant, library_versions
        from q2_metric.version import __version__

        return {
            "signature": self.signature,
            "ready": self.ready,
            "batch_invariant": batch_invariant(self.config) and self._device() == "cpu",
            "batch": "invariant" if batch_invariant(self.config) else "batch-dependent",
            "device": self._device(),
            "options": {k: _plain(v) for k, v in self.config.to_dict().items()},
            "limits": {k: v for k, v in asdict(self.limits).items() if k != "api_key"},
            "auth": self.limits.api_key is not None,
            "versions": {"q2-metric": __version__, **library_versions()},
        }

    def _device(self) -> str:
        from q2_metric.devices import cuda_count

        device = str(self.config.device)
        return ("cuda" if cuda_count() else "cpu") if device == "auto" else device.partition(":")[0]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -- the request ------------------------------------------------------------------------------------


class RequestError(Q2Error):
    """A request the service refuses: its HTTP status, its one sentence and its headers."""

    def __init__(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.headers = code, message, headers or {}


@dataclass
class Asked:
    """One item of a request: its id, its `Item`, its threshold and whether it wants its spans, or
    the sentence why it is bad before any text check (not an object, a bad threshold)."""

    id: str
    item: Item
    threshold: float
    spans: bool
    error: str | None = None


def _flag(value: Any, default: bool, where: str) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise Q2OptionError(f"{where}field 'spans' must be true or false, got {type(value).__name__}.")
    return value


def parse_request(body: Any, limits: Limits) -> list[Asked]:
    """The items of a request body (one item, or `{"items": [...]}`), each with its key and
    settings; a malformed body is a `RequestError` (422), too many items one (413)."""
    if not isinstance(body, dict):
        raise RequestError(422, 'The request body must be a JSON object: one item, or {"items": [...]}.')
    try:
        threshold = display.check_threshold(body.get("threshold", limits.threshold))
        spans = _flag(body.get("spans"), True, "")
    except Q2OptionError as err:
        raise RequestError(422, f"{err}.".replace("..", ".")) from None
    if "items" in body:
        raw = body["items"]
        if not isinstance(raw, list):
            raise RequestError(422, "Field 'items' must be a list of items.")
    else:
        raw = [body]
    if len(raw) > limits.max_items:
        raise RequestError(413, f"{len(raw)} items in one request: at most {limits.max_items} are taken.")
    out = []
    for n, entry in enumerate(raw):
        given = entry.get("id") if isinstance(entry, dict) else None
        ident = str(n) if given is None else str(given)
        key = f"item {n}" if given is None else f"item {n} (id {ident!r})"
        if not isinstance(entry, dict):
            bad = f"{key}: must be a JSON object with 'response' and 'knowledge', got {type(entry).__name__}."
            out.append(Asked(ident, Item(key, None, None), threshold, False, bad))
            continue
        asked = Asked(
            ident,
            Item(key, entry.get("response"), entry.get("knowledge"), entry.get("history")),
            threshold,
            spans,
        )
        try:
            if "threshold" in entry and "items" in body:
                asked.threshold = display.check_threshold(entry["threshold"])
            if "items" in body:
                asked.spans = _flag(entry.get("spans"), spans, f"{key}: ")
        except Q2OptionError as err:
            asked.error = str(err) if str(err).startswith(key) else f"{key}: {err}."
        out.append(asked)
    return out


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def item_json(asked: Asked, result: ItemResult | None, error: str | None = None) -> dict[str, Any]:
    """One item's entry of the response (`result` None: `error` says why it was not checked): its
    `id` and its record (`frontend.Record.to_dict`; the signature is the response's, not the
    item's). Fail closed: an item not scored is `unverified` (`frontend.verdict_of`)."""
    if result is None or error is not None:
        result = ItemResult(asked.item.key, "bad", None, error or asked.error or "not checked")
    entry = frontend.record_of(result, "", asked.threshold).to_dict(spans=asked.spans)
    del entry["signature"]
    return {"id": asked.id, **entry}


def span_json(span: Any) -> dict[str, Any]:
    """One span of an item's entry (`frontend.SpanRecord`)."""
    return frontend.SpanRecord.of(span).to_dict()


async def _read_body(request: Any, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"The request body has {int(declared)} bytes: at most {limit} are taken.")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"The request body is over {limit} bytes, the most taken.")
        chunks.append(chunk)
    return b"".join(chunks)


async def _until_disconnected(request: Any) -> None:
    """Returns once the client has gone. The body is read, so the server's next message is the
    disconnect: waiting for it costs nothing (polling every request would wake the event loop, and
    take the engine's cores and GIL, hundreds of times a second under load)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def score_request(service: Service, request: Any) -> tuple[dict[str, Any], float]:
    """The response of one /v1/score request and the seconds of the engine calls it waited for (the
    longest), or a `RequestError`."""
    limits = service.limits
    if service.draining:
        raise RequestError(503, "The service is shutting down.", {"Retry-After": str(limits.retry_after)})
    if not service.ready or service.micro is None:
        why = f" ({service.failed})" if service.failed else ""
        raise RequestError(
            503, f"The models are not loaded yet{why}.", {"Retry-After": str(limits.retry_after)}
        )
    raw = await _read_body(request, limits.max_body_bytes)
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RequestError(422, f"The request body is not JSON: {err}.") from None
    asked = parse_request(body, limits)
    checked = [a for a in asked if a.error is None]
    _, bad = frontend.validate_items([a.item for a in checked])  # the one item check
    errors = {r.key: r.error for r in bad}
    for a in checked:
        if a.item.key in errors:
            a.error = errors[a.item.key]
    good = [a for a in asked if a.error is None]
    if service.queued + len(good) > limits.max_queue:
        raise RequestError(
            429,
            f"The queue is full ({service.queued} items waiting); try again later.",
            {"Retry-After": str(limits.retry_after)},
        )
    metrics = service.metrics
    service.queued += len(good)
    metrics.queue.set(service.queued)
    micro = service.micro
    tasks = [asyncio.ensure_future(micro.score(a.item)) for a in good]
    watcher = asyncio.ensure_future(_until_disconnected(request))
    try:
        if tasks:
            done = asyncio.ensure_future(asyncio.wait_for(asyncio.gather(*tasks), limits.timeout))
            await asyncio.wait({done, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if not done.done():  # the client went away: its items leave their batch
                done.cancel()
                metrics.items.labels("dropped").inc(len(good))
                raise RequestError(499, "The client disconnected.")
            try:
                scored = done.result()
            except asyncio.TimeoutError:
                metrics.items.labels("timeout").inc(len(good))
                raise RequestError(504, f"Scoring took longer than {limits.timeout:g} s.") from None
        else:
            scored = []
    finally:
        watcher.cancel()
        for t in tasks:
            t.cancel()
        service.queued -= len(good)
        metrics.queue.set(service.queued)
    results = dict(zip((id(a) for a in good), (s.result for s in scored)))
    out = [item_json(a, results.get(id(a))) for a in asked]
    signature = scored[0].signature if scored else service.signature
    for entry in out:
        metrics.items.labels(entry["status"]).inc()
    return {"signature": str(signature), "results": out}, max((s.seconds for s in scored), default=0.0)


# -- the app ----------------------------------------------------------------------------------------


def create_app(config: Q2Config, limits: Limits | None = None, *, scorer: Any = None) -> Any:
    """The FastAPI app serving `config` (checked: `frontend.configure`) under `limits`. Nothing is
    loaded until its lifespan starts (then in the background: `/ready` says when)."""
    from q2_metric.version import __version__

    service = Service(config, limits or Limits(), scorer)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.ensure_future(service.start())
        yield
        service.draining = True
        loading.cancel()

    app = FastAPI(
        title="Q² guardrail service",
        version=__version__,
        description="Factual consistency of a response with its knowledge (Q²); see docs/serve.md.",
        lifespan=lifespan,
    )
    app.state.service = service

    def authorized(request: Request) -> bool:
        key = service.limits.api_key
        if key is None:
            return True
        given = request.headers.get("authorization", "")
        scheme, _, token = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())

    def refused(code: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=code, headers=headers)

    @app.get("/health", summary="200 while the process lives")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ready", summary="200 once the models are loaded and warmed, 503 before")
    async def ready() -> Any:
        if service.ready and not service.draining:
            return {"status": "ready", "signature": service.signature}
        why = service.failed or ("shutting down" if service.draining else "loading the models")
        return refused(503, why, {"Retry-After": str(service.limits.retry_after)})

    @app.get("/v1/info", summary="signature, options, limits, versions, batch invariance")
    async def info(request: Request) -> Any:
        if not authorized(request):
            return refused(
                401, "Missing or wrong API key (Authorization: Bearer <key>).", {"WWW-Authenticate": "Bearer"}
            )
        return service.info()

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics() -> Response:
        body, kind = service.metrics.text()
        return Response(body, media_type=kind)

    @app.post("/v1/score", summary="score one item or a list of items", openapi_extra=OPENAPI_SCORE)
    async def score(request: Request) -> Any:
        started = time.perf_counter()
        if not authorized(request):
            service.metrics.requests.labels("401").inc()
            return refused(
                401, "Missing or wrong API key (Authorization: Bearer <key>).", {"WWW-Authenticate": "Bearer"}
            )
        try:
            out, engine = await score_request(service, request)
        except RequestError as err:
            service.metrics.requests.labels(str(err.code)).inc()
            return refused(err.code, err.message, err.headers)
        except Exception as err:  # fail closed: the client sees an error, never a verdict
            service.metrics.requests.labels("500").inc()
            message = str(err) if isinstance(err, Q2Error) else f"Scoring failed: {type(err).__name__}: {err}"
            return refused(500, message)
        service.metrics.requests.labels("200").inc()
        total = time.perf_counter() - started
        service.metrics.latency.observe(total)
        # the standard Server-Timing header: how much of the request was the engine call(s) it waited for
        timing = f"engine;dur={1000 * engine:.2f}, total;dur={1000 * total:.2f}"
        return JSONResponse(out, headers={"Server-Timing": timing})  # plain JSON already: not re-encoded

    return app


_ITEM_SCHEMA = {
    "type": "object",
    "properties": {
        "response": {"type": "string"},
        "knowledge": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "history": {"type": "array", "items": {"type": "string"}},
        "id": {"type": "string"},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "spans": {"type": "boolean"},
    },
    "required": ["response", "knowledge"],
}
OPENAPI_SCORE: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "oneOf": [
                        _ITEM_SCHEMA,
                        {
                            "type": "object",
                            "properties": {
                                "items": {"type": "array", "items": _ITEM_SCHEMA},
                                "threshold": {"type": "number", "minimum": 0, "maximum": 1},
                                "spans": {"type": "boolean"},
                            },
                            "required": ["items"],
                        },
                    ]
                }
            }
        },
    }
}


def uvicorn_server(
    app: Any, host: str, port: int, *, log_level: str = "info", on_stop: Callable[[], None] | None = None
) -> Any:
    """A uvicorn server of `app` whose SIGTERM is a graceful stop: new requests refused (503, and
    the listening socket closed), in-flight ones answered, then exit 0 (uvicorn would raise the
    signal again once stopped)."""
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            app.state.service.draining = True
            if on_stop is not None:
                on_stop()
            super().handle_exit(sig, frame)
            if sig == signal.SIGTERM:  # stopped as asked: nothing to raise again
                self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=None)
    return Server(config)
