"""The FastAPI app of `q2 serve` (the HTTP contract: docs/serve.md): routes only, each a module-level
handler that goes down one path: route -> `protocol` (the body read and the request checked) ->
`service` (the one item check, the queue, the micro-batcher, the engine) -> the records.

`create_app(config, limits)` builds the app without loading anything; its lifespan loads the models
once in the background (`/health` answers at once, `/ready` once they are loaded and warmed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from q2_metric.config import Q2Config
from q2_metric.errors import Q2Error
from q2_metric.serve.limits import Limits
from q2_metric.serve.metrics import PROMETHEUS_TEXT, SCORE_PATH, STREAM_PATH, CountAnswers
from q2_metric.serve.protocol import (
    OPENAPI_SCORE,
    OPENAPI_STREAM_OPEN,
    OPENAPI_STREAM_TEXT,
    ErrorOut,
    RequestError,
    ScoreResponse,
    StreamChunkOut,
    StreamClosedOut,
    StreamEndOut,
    StreamOpenedOut,
    parse_open,
    parse_request,
    parse_text,
    read_body,
    read_json,
)
from q2_metric.serve.service import Service

UNAUTHORIZED = "Missing or wrong API key (Authorization: Bearer <key>)."


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _refused(err: RequestError) -> JSONResponse:
    return JSONResponse({"error": err.message}, status_code=err.code, headers=err.headers)


def _authorize(service: Service, request: Request) -> None:
    """Nothing when no key is set or the request's `Authorization: Bearer <key>` is it; else 401."""
    key = service.limits.api_key
    if key is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if not (scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())):
        raise RequestError(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})


async def health() -> dict[str, str]:
    """200 while the process lives."""
    return {"status": "ok"}


async def ready(request: Request) -> Any:
    """200 once the models are loaded and warmed; 503 before (with Retry-After) and while stopping."""
    service = _service(request)
    try:
        service.refuse_now()
    except RequestError as err:
        why = service.failed or ("shutting down" if service.draining else "loading the models")
        return _refused(RequestError(503, why, err.headers))
    return {"status": "ready", "signature": service.signature}


async def info(request: Request) -> Any:
    """The signature, the options, the limits, the versions and batch invariance."""
    service = _service(request)
    try:
        _authorize(service, request)
    except RequestError as err:
        return _refused(err)
    return service.info()


async def metrics(request: Request) -> Response:
    """The Prometheus metrics, in Prometheus' text format."""
    return Response(_service(request).metrics.text(), media_type=PROMETHEUS_TEXT)


def swagger_assets() -> str | None:
    """The folder of Swagger UI's files when the `swagger-ui-bundle` package is installed, else None."""
    try:
        import swagger_ui_bundle  # type: ignore[import-not-found]
    except ImportError:
        return None
    found = getattr(swagger_ui_bundle, "swagger_ui_path", None) or getattr(
        swagger_ui_bundle, "swagger_ui_3_path", None
    )
    return str(found) if found else None


async def docs(request: Request) -> HTMLResponse:
    """The API's documentation, offline: Swagger UI from the packaged `swagger-ui-bundle` files
    when installed, else a plain page of the endpoints and their schemas (no script, no network)."""
    import html
    import json

    app = request.app
    if swagger_assets() is not None:
        from fastapi.openapi.docs import get_swagger_ui_html

        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )
    spec = app.openapi()
    rows = "".join(
        f"<li><code>{html.escape(method.upper())} {html.escape(path)}</code>: "
        f"{html.escape(op.get('summary', ''))}</li>"
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(app.title)}</title></head>"
        f"<body><h1>{html.escape(app.title)} {html.escape(app.version)}</h1><p>{html.escape(app.description)}"
        "</p><ul>" + rows + "</ul><p>The schema: <a href='/openapi.json'>/openapi.json</a> (Swagger UI here "
        "needs its files: <code>pip install swagger-ui-bundle</code>).</p><pre>"
        + html.escape(json.dumps(spec, indent=2, ensure_ascii=False))
        + "</pre></body></html>"
    )
    return HTMLResponse(page)


async def score(request: Request) -> Response:
    """Score one item or a list of items (docs/serve.md: the HTTP contract)."""
    service = _service(request)
    started = time.perf_counter()
    try:
        _authorize(service, request)
        service.refuse_now()
        limits = service.limits
        body = read_json(await read_body(request, limits.max_body_bytes, limits.read_timeout))
        asked = parse_request(body, limits.max_items, limits.threshold)
        out, engine = await service.answer(asked, request)
    except RequestError as err:
        return _refused(err)
    except Exception as err:  # fail closed: the client sees an error, never a verdict
        message = str(err) if isinstance(err, Q2Error) else f"Scoring failed: {type(err).__name__}: {err}"
        return JSONResponse({"error": message}, status_code=500)
    total = time.perf_counter() - started
    service.metrics.latency.observe(total)
    # the standard Server-Timing header: how much of the request was the engine call(s) it waited for
    timing = f"engine;dur={1000 * engine:.2f}, total;dur={1000 * total:.2f}"
    return JSONResponse(out, headers={"Server-Timing": timing})  # plain JSON already: not re-encoded


# -- the streaming check (docs/streaming.md) -----------------------------------------------------------


def _failed(err: Exception) -> JSONResponse:
    """Fail closed: the client sees an error, never a verdict."""
    message = str(err) if isinstance(err, Q2Error) else f"Scoring failed: {type(err).__name__}: {err}"
    return JSONResponse({"error": message}, status_code=500)


async def _body(service: Service, request: Request) -> Any:
    limits = service.limits
    return read_json(await read_body(request, limits.max_body_bytes, limits.read_timeout))


async def stream_open(request: Request) -> Response:
    """Open a stream: the knowledge checked once; nothing scored."""
    service = _service(request)
    try:
        _authorize(service, request)
        service.refuse_now()
        opened = parse_open(await _body(service, request), service.limits.threshold)
        session = service.open_stream(opened)
    except RequestError as err:
        return _refused(err)
    limits = service.limits
    return JSONResponse(
        {
            "stream": session.id,
            "idle_timeout": limits.stream_idle_timeout,
            "max_chars": limits.max_stream_chars,
        }
    )


async def _stream_text(request: Request, end: bool) -> Response:
    service = _service(request)
    try:
        _authorize(service, request)
        session = service.session(request.path_params["stream"])
        service.refuse_now()
        text = parse_text(await _body(service, request), required=not end)
        out = await service.feed_stream(session, text, end)
    except RequestError as err:
        return _refused(err)
    except Exception as err:
        return _failed(err)
    return JSONResponse(out)


async def stream_text(request: Request) -> Response:
    """The answer's next chunk: the results of the sentences it completed."""
    return await _stream_text(request, end=False)


async def stream_end(request: Request) -> Response:
    """The last chunk (optional): the last sentences and the final record; the stream closes."""
    return await _stream_text(request, end=True)


async def stream_cancel(request: Request) -> Response:
    """Cancel a stream (the client is gone): closed at once, counted as cancelled."""
    service = _service(request)
    try:
        _authorize(service, request)
        session = service.session(request.path_params["stream"])
    except RequestError as err:
        return _refused(err)
    service.close_stream(session, "cancelled", "The stream was cancelled by its client.")
    return JSONResponse({"stream": session.id, "closed": "cancelled"})


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The models loaded in the background while the server answers; stopping: new requests refused."""
    service: Service = app.state.service
    loading = asyncio.ensure_future(service.start())
    yield
    service.draining = True
    loading.cancel()
    service.stop_sweeping()
    service.say("q2 serve: stopped")


_REFUSALS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in {
        401: "no valid API key",
        408: "the request body did not arrive in time",
        413: "the body, the items, or more items than the queue can ever hold",
        422: "a request that is not JSON text of the contract's shape",
        429: "the queue is full: retry after Retry-After",
        500: "the scoring failed (fail closed: no verdict)",
        503: "the models are loading (Retry-After) or the service is stopping",
        504: "the scoring took longer than the timeout",
    }.items()
}


def create_app(config: Q2Config, limits: Limits | None = None, *, scorer: Any = None) -> Any:
    """The FastAPI app serving `config` (checked: `frontend.configure`) under `limits`. Nothing is
    loaded until its lifespan starts (then in the background: `/ready` says when)."""
    from q2_metric.version import __version__

    service = Service(config, limits or Limits(), scorer)
    app = FastAPI(
        title="Q² guardrail service",
        version=__version__,
        description="Factual consistency of a response with its knowledge (Q²); see docs/serve.md.",
        lifespan=lifespan,
        docs_url=None,  # served offline below (FastAPI's own page loads Swagger UI from a CDN)
        redoc_url=None,
    )
    app.state.service = service
    app.add_middleware(CountAnswers, metrics=service.metrics)
    assets = swagger_assets()
    if assets is not None:
        from fastapi.staticfiles import StaticFiles

        app.mount("/docs/assets", StaticFiles(directory=assets), name="swagger-ui")
    app.add_api_route("/docs", docs, methods=["GET"], include_in_schema=False)
    app.add_api_route("/health", health, methods=["GET"], summary="200 while the process lives")
    app.add_api_route(
        "/ready", ready, methods=["GET"], summary="200 once the models are loaded and warmed, 503 before"
    )
    app.add_api_route(
        "/v1/info", info, methods=["GET"], summary="signature, options, limits, versions, batch invariance"
    )
    app.add_api_route(
        "/metrics",
        metrics,
        methods=["GET"],
        summary="Prometheus metrics",
        response_class=Response,
        responses={200: {"content": {PROMETHEUS_TEXT: {"schema": {"type": "string"}}}}},
    )
    app.add_api_route(
        SCORE_PATH,
        score,
        methods=["POST"],
        summary="score one item or a list of items",
        response_model=None,
        responses={200: {"model": ScoreResponse, "description": "one entry per item"}, **_REFUSALS},
        openapi_extra=OPENAPI_SCORE,
    )
    stream_refusals: dict[int | str, dict[str, Any]] = {
        k: v for k, v in _REFUSALS.items() if k in (401, 408, 413, 422, 429, 500, 503, 504)
    }
    stream_refusals[404] = {"model": ErrorOut, "description": "no such stream"}
    stream_refusals[410] = {"model": ErrorOut, "description": "the stream was closed: the sentence says why"}
    app.add_api_route(
        STREAM_PATH,
        stream_open,
        methods=["POST"],
        summary="open a stream: the knowledge, checked once (the streaming check, docs/streaming.md)",
        response_model=None,
        responses={200: {"model": StreamOpenedOut, "description": "the stream's id"}, **stream_refusals},
        openapi_extra=OPENAPI_STREAM_OPEN,
    )
    app.add_api_route(
        STREAM_PATH + "/{stream}",
        stream_text,
        methods=["POST"],
        summary="the answer's next chunk: the sentences it completed, each scored once (provisional)",
        response_model=None,
        responses={
            200: {"model": StreamChunkOut, "description": "the completed sentences"},
            **stream_refusals,
        },
        openapi_extra=OPENAPI_STREAM_TEXT,
    )
    app.add_api_route(
        STREAM_PATH + "/{stream}/end",
        stream_end,
        methods=["POST"],
        summary="the last chunk: the last sentences and the final record (the batch result of the answer)",
        response_model=None,
        responses={200: {"model": StreamEndOut, "description": "the final record"}, **stream_refusals},
        openapi_extra=OPENAPI_STREAM_TEXT,
    )
    app.add_api_route(
        STREAM_PATH + "/{stream}",
        stream_cancel,
        methods=["DELETE"],
        summary="cancel a stream (the client is gone)",
        response_model=None,
        responses={200: {"model": StreamClosedOut, "description": "closed"}, **stream_refusals},
    )
    return app


def uvicorn_server(
    app: Any,
    host: str,
    port: int,
    *,
    log_level: str = "info",
    access_log: bool = False,
    on_stop: Callable[[], None] | None = None,
) -> Any:
    """A uvicorn server of `app` whose SIGTERM is a graceful stop: new requests refused (503, and
    the listening socket closed), in-flight ones answered for at most the limits' `drain_timeout`
    (then their connections are closed), and exit 0 (uvicorn would raise the signal again once
    stopped). `access_log`: one line per request on stderr (uvicorn's), whatever `log_level`."""
    import logging
    import signal

    import uvicorn

    service: Service = app.state.service

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if not service.draining:
                service.say(
                    f"q2 serve: stopping (requests in flight get up to {service.limits.drain_timeout:g} s)"
                )
            service.draining = True
            if on_stop is not None:
                on_stop()
            super().handle_exit(sig, frame)
            if sig == signal.SIGTERM:  # stopped as asked: nothing to raise again
                self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=max(1, math.ceil(service.limits.drain_timeout)),
        access_log=access_log,
    )
    if access_log:  # uvicorn set its access logger to `log_level` (warning by default: silent)
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    return Server(config)
