"""The service's Prometheus metrics (`Metrics`: one registry per app, so that several apps in one
process do not clash) and the count of every `/v1/score` answer under its real status code
(`CountAnswers`: an ASGI middleware, so that an answer made outside the handler, a 500 included,
is counted as what the client got)."""

from __future__ import annotations

from typing import Any

SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
SCORE_PATH = "/v1/score"
STREAM_PATH = "/v1/score/stream"  # the streaming check's requests (docs/streaming.md)
# Prometheus' text exposition format, version 0.0.4 (what `prometheus_client` writes)
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Prometheus metrics of one app."""

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
        self.stream_sentences = Counter(
            "q2_serve_stream_sentences",
            "sentences scored by the streaming check (each once, when it completes)",
            registry=self.registry,
        )
        self.streams_opened = Counter(
            "q2_serve_streams_opened", "streams of the streaming check opened", registry=self.registry
        )
        self.streams_closed = Counter(
            "q2_serve_streams_closed",
            "streams closed, by reason (end, idle, cancelled, limit)",
            ["reason"],
            registry=self.registry,
        )
        self.streams_open = Gauge("q2_serve_streams_open", "streams open now", registry=self.registry)

    def text(self) -> bytes:
        """The metrics in Prometheus' text format (`PROMETHEUS_TEXT`)."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def engine_call(self, size: int, seconds: float) -> None:
        """One engine call of the micro-batcher: its size and its time."""
        self.batch_size.observe(size)
        self.engine.observe(seconds)


class CountAnswers:
    """ASGI middleware: each answer to `/v1/score` counted in `q2_serve_requests_total{code}` under
    the status the client was sent; an exception that escapes the app (Starlette then answers 500)
    is counted as a 500."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != SCORE_PATH:
            await self.app(scope, receive, send)
            return
        sent: list[int] = []

        async def counting(message: Any) -> None:
            if message["type"] == "http.response.start" and not sent:
                sent.append(message["status"])
                self.metrics.requests.labels(str(message["status"])).inc()
            await send(message)

        try:
            await self.app(scope, receive, counting)
        except Exception:  # a cancelled request (a stop past its drain time) was answered nothing
            if not sent:
                self.metrics.requests.labels("500").inc()
            raise
