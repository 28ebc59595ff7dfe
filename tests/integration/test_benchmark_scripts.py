"""Every benchmark and experiment script starts: `--help` runs its imports and its parser, so a
renamed module or a moved test helper it reads fails here, not on the day someone runs it.
(`conformance_ref32.py` is the worker `conformance.py` runs inside the transformers 3.2 venv: it
takes positional arguments and no `--help`.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKERS = {"conformance_ref32.py", "common.py"}
SCRIPTS = sorted(
    p
    for p in [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("benchmarks/experiments/*.py")]
    if p.name not in WORKERS
)


def test_scripts_are_found() -> None:
    names = {p.name for p in SCRIPTS}
    assert {"bench_speed.py", "ab_qg.py", "allennlp10_compare.py"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_script_help_runs(script: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "usage:" in run.stdout
