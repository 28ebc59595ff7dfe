"""A real `q2 serve` on a free 127.0.0.1 port (a subprocess: uvicorn, as a user starts it)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GOOD = {"response": "Bob Ross hosted the show.", "knowledge": "Bob Ross hosted the show."}


def app_client(scorer: Any = None, operating_point: Any = None, **limits: Any) -> Any:
    """FastAPI's test client of the real `q2 serve` app (in process) over `scorer` (default: the
    scripted one) under `limits`, deciding at `operating_point` (a file) when given; use it in a
    `with` block, and `ready(client)` first."""
    from fastapi.testclient import TestClient

    from q2_metric.config import Q2Config
    from q2_metric.serve.app import create_app
    from q2_metric.serve.limits import Limits
    from q2_metric.testing.scripted import scripted_scorer

    scorer = scorer if scorer is not None else scripted_scorer()
    app = create_app(Q2Config(), Limits(**limits), scorer=scorer, operating_point=operating_point)
    return TestClient(app, raise_server_exceptions=False)


def ready(client: Any) -> None:
    """Waits until the in-process app's models are loaded (its /ready answers 200)."""
    deadline = time.time() + 60
    while client.get("/ready").status_code != 200:
        assert time.time() < deadline, client.get("/ready").text
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    log: Path

    def rss_mb(self) -> float:
        """The server process's resident memory (Linux /proc)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def metric(self, name: str, **labels: str) -> float:
        """A sample's value from /metrics (0 when absent)."""
        import httpx
        from prometheus_client.parser import text_string_to_metric_families

        text = httpx.get(self.url + "/metrics", timeout=30).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    return float(sample.value)
        return 0.0


@contextlib.contextmanager
def q2_serve(
    flags: list[str], tmp: Path, env: dict[str, str] | None = None, wait: float = 300
) -> Iterator[Server]:
    """`q2 serve FLAGS --port <free>`, ready (its /ready answers 200), stopped at the end."""
    import httpx

    port = free_port()
    log = tmp / f"serve-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "q2_metric.cli", "serve", "--port", str(port), *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        )
    url = f"http://127.0.0.1:{port}"
    server = Server(url, proc, log)
    try:
        deadline = time.time() + wait
        while True:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/ready", timeout=5).status_code == 200:
                    break
            assert time.time() < deadline, log.read_text()
            time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


@contextlib.contextmanager
def q2_service(
    scorer: Any,
    *,
    api_key: str | None = None,
    threshold: float = 0.5,
    operating_point: Any = None,
    **limits: Any,
) -> Iterator[str]:
    """The real `q2 serve` app (`serve.app.create_app`) over `scorer` (and `limits`, `serve.limits.Limits`'
    fields), on uvicorn in a thread on a free 127.0.0.1 port, ready: its URL while the block runs
    (in-process, so a scripted scorer can serve; `q2_serve` starts the command itself)."""
    import threading

    import httpx
    import uvicorn

    from q2_metric.serve.app import create_app
    from q2_metric.serve.limits import Limits

    app = create_app(
        scorer.config,
        Limits(api_key=api_key, threshold=threshold, **limits),
        scorer=scorer,
        operating_point=operating_point,
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="q2-serve-test", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while True:
            assert thread.is_alive(), "the service stopped while starting"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/ready", timeout=5).status_code == 200:
                    break
            assert time.time() < deadline, "the service was not ready in 300 s"
            time.sleep(0.1)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def refusing_service(status: int) -> Iterator[str]:
    """A server on a free 127.0.0.1 port that answers every request with `status` and
    `Retry-After: 1`, as an overloaded or stopping `q2 serve` answers (429/503): for the clients'
    fail-closed paths, which a real service gives only under load."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _refuse(self) -> None:
            data = json.dumps({"error": "The queue is full (1024 items waiting); try again later."}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Retry-After", "1")
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _refuse

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="q2-serve-refusing", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def closed_port_url() -> str:
    """A 127.0.0.1 URL where nothing listens (a port bound, then released)."""
    return f"http://127.0.0.1:{free_port()}"


# One item's reply as `q2 serve` gives it, `consistent`: what a misbehaving stand-in cuts, trickles or
# bends (a client that takes any of those as a pass lets through an answer nobody checked).
CONSISTENT_REPLY = (
    b'{"results": [{"id": "0", "status": "scored", "score": 0.93, "verdict": "consistent", '
    b'"reason": "Every question was answered alike.", "spans": [], "error": null}]}'
)
MISBEHAVIOURS = (
    "not http",
    "cut body",
    "not utf-8",
    "not json",
    "wrong shape",
    "trickle",
    "stall",
    "deaf",
    "close",
    "reset",
)


def http_reply(body: bytes, length: int | None = None, status: str = "200 OK") -> bytes:
    """A whole HTTP/1.1 reply carrying `body`, its Content-Length `length` (default: the body's)."""
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def _read_request(conn: socket.socket) -> None:
    """Reads one HTTP request (its head, then the body its Content-Length announces)."""
    import re

    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    found = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    length = int(found.group(1)) if found else 0
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextlib.contextmanager
def misbehaving_service(
    mode: str, *, body: bytes = b'{"results": "none"}', step: float = 0.1
) -> Iterator[str]:
    """A stand-in for the Q² service that misbehaves on purpose: a raw socket server on a free
    127.0.0.1 port (a thread, one more per connection) that reads each request and then, by `mode`:
    "not http" answers a first line that is not HTTP; "cut body" announces the whole consistent reply
    and closes after 40 bytes of it (a server killed mid-answer); "not utf-8" and "not json" answer
    200 with such a body; "wrong shape" answers 200 with `body` (valid JSON, off the contract);
    "trickle" sends the whole consistent reply, status line included, one byte every `step` seconds;
    "stall" reads the request and never answers; "deaf" never even reads it (a large request waits to be
    sent); "close" closes without a word; "reset" resets the connection.
    Its URL while the block runs."""
    import struct
    import threading

    assert mode in MISBEHAVIOURS, mode
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()
    conns: list[socket.socket] = []

    def answer(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:  # the client gone (it gave up): nothing to do
            conn.settimeout(30)
            if mode == "deaf":
                stop.wait()
                return
            _read_request(conn)
            if mode == "not http":
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
            elif mode == "cut body":
                conn.sendall(http_reply(CONSISTENT_REPLY[:40], len(CONSISTENT_REPLY)))
            elif mode == "not utf-8":
                conn.sendall(http_reply(CONSISTENT_REPLY.replace(b"alike", b"\xe0\xff\xfe")))
            elif mode == "not json":
                conn.sendall(http_reply(b"<html><body><h1>502 Bad Gateway</h1></body></html>"))
            elif mode == "wrong shape":
                conn.sendall(http_reply(body))
            elif mode == "trickle":
                for byte in http_reply(CONSISTENT_REPLY):
                    if stop.wait(step):
                        return
                    conn.sendall(bytes([byte]))
            elif mode == "stall":
                stop.wait()
            elif mode == "reset":  # SO_LINGER 0: close sends RST, not FIN
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conns.append(conn)
            threading.Thread(target=answer, args=(conn,), name=f"q2-stand-in-{mode}", daemon=True).start()

    thread = threading.Thread(target=serve, name="q2-stand-in", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
