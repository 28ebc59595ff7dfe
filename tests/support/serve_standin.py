"""A STAND-IN for `q2 serve`, until the real service lands: a small HTTP server on a free
127.0.0.1 port that speaks the service's contract (`POST /v1/score`: one item or `{"items": [...]}`,
each result's id, status, score, q2_no_nli, verdict, reason, spans and error; the full signature;
401 without the key when one is set) by scoring through the front-end contract
(`frontend.score_items`), so the guardrail clients can be tested against a real socket.

Only what the clients need: no queue, limits, metrics or readiness. A verdict is `consistent` iff
the item was scored and `display.decide` says so at the threshold (Q² > threshold, `q2 score
--threshold`'s rule); anything not scored is `unverified`. `fail_with` makes every request get that
HTTP status (with `Retry-After: 1`), as an overloaded service would answer.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def results_of(scorer: Any, items: list[dict], threshold: float, spans: bool) -> dict[str, Any]:
    """The contract's response body for these items, scored by `frontend.score_items`."""
    from q2_metric import display, frontend

    keys = [str(i.get("id", n)) if isinstance(i, dict) else str(n) for n, i in enumerate(items)]
    asked = [
        frontend.Item(
            f"item {key}",
            i.get("response") if isinstance(i, dict) else None,
            i.get("knowledge") if isinstance(i, dict) else None,
            i.get("history") if isinstance(i, dict) else None,
        )
        for key, i in zip(keys, items)
    ]
    outcome = frontend.score_items(scorer, asked)
    results = []
    for key, r in zip(keys, outcome.items):
        score = _number(r.score.q2) if r.score is not None and r.status == "scored" else None
        verdict = "unverified"
        if r.status == "scored":
            verdict = "consistent" if display.is_consistent(score, threshold) else "inconsistent"
        shown = []
        if spans and r.score is not None:
            for s in r.score.span_details()["spans"]:
                ok = s["supported"]
                shown.append(
                    {
                        "start": s["start"],
                        "end": s["end"],
                        "text": s["text"],
                        "supported": ok,
                        "score": s["score"],
                        "reason": "not checked" if ok is None else "supported" if ok else "unsupported",
                    }
                )
        results.append(
            {
                "id": key,
                "status": r.status,
                "score": score,
                "q2_no_nli": _number(r.score.q2_no_nli) if score is not None and r.score else None,
                "verdict": verdict,
                "reason": r.reason,
                "spans": shown,
                "error": r.error,
            }
        )
    return {"signature": str(outcome.signature), "results": results}


@contextlib.contextmanager
def standin_service(
    scorer: Any, *, api_key: str | None = None, fail_with: int | None = None, threshold: float = 0.5
) -> Iterator[str]:
    """The stand-in service's URL ("http://127.0.0.1:PORT") while the block runs."""
    lock = threading.Lock()  # one engine call at a time

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path in ("/health", "/ready"):
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if fail_with is not None:
                self._send(fail_with, {"detail": "the queue is full"}, {"Retry-After": "1"})
                return
            if api_key is not None and self.headers.get("Authorization") != f"Bearer {api_key}":
                self._send(401, {"detail": "a valid API key is needed"})
                return
            if self.path != "/v1/score":
                self._send(404, {"detail": "Not Found"})
                return
            try:
                request = json.loads(body)
            except ValueError:
                self._send(400, {"detail": "the body is not JSON"})
                return
            items = request.get("items", [request]) if isinstance(request, dict) else None
            if not isinstance(items, list):
                self._send(422, {"detail": "items must be a list"})
                return
            thr = request.get("threshold", threshold)
            with lock:
                out = results_of(scorer, items, float(thr), bool(request.get("spans", True)))
            self._send(200, out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="q2-serve-standin", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def closed_port_url() -> str:
    """A 127.0.0.1 URL where nothing listens (a port bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
