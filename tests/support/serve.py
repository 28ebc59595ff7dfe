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
