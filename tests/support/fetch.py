"""A toy dataset for `q2 data fetch` on a local file:// mirror (no network)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from q2_metric.meta import fetch as fetch_mod
from q2_metric.meta.fetch import PinnedFile, Source

BODIES = {"a.tsv": b"x\ty\n" * 1000, "sub/b.tsv": b"hello\tworld\n" * 500}  # 4000 and 6000 bytes
COMMIT = "0" * 40


def serve_toy(monkeypatch, tmp_path: Path) -> str:
    """Register the dataset "toy" (two pinned files) and lay it out under tmp_path; the base URL."""
    files = tuple(PinnedFile(name, name, hashlib.sha256(body).hexdigest()) for name, body in BODIES.items())
    monkeypatch.setitem(fetch_mod.SOURCES, "toy", (Source("me/toy", COMMIT, files, "CC0"),))
    base = tmp_path / "server"
    for name, body in BODIES.items():
        (base / "me/toy" / COMMIT / name).parent.mkdir(parents=True, exist_ok=True)
        (base / "me/toy" / COMMIT / name).write_bytes(body)
    return base.as_uri()


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []
