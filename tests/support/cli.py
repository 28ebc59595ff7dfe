"""Running `q2`: flags for the tiny models, a subprocess run, and the check of a one-line refusal."""

from __future__ import annotations

import os
import subprocess
import sys

from q2_metric.cli import main


def tiny_flags(models, *extra: str) -> list[str]:
    """The tiny models (a dict of qg/qa/nli folders, or a Q2Config) on the CPU with greedy decoding,
    then `extra` flags."""
    folder = models.get if isinstance(models, dict) else lambda role: getattr(models, f"{role}_model")
    return [
        "--qg-model",
        folder("qg"),
        "--qa-model",
        folder("qa"),
        "--nli-model",
        folder("nli"),
        "--device",
        "cpu",
        "--decoding",
        "greedy",
        *extra,
    ]


def cli(*args, env=None, **kw):
    """`python -m q2_metric.cli ARGS` in a subprocess, offline."""
    return subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        **kw,
    )


def refused(capsys, argv: list[str], *needles: str) -> str:
    """`q2 ARGV` exits 2 with one line on stderr (no traceback) holding every needle."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("q2: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]
