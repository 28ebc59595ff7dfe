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


def test_gpu_check_parses_and_asks_for_its_folder() -> None:
    script = ROOT / "benchmarks" / "gpu_check.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert run.returncode != 0 and "usage: gpu_check.sh OUTDIR" in run.stderr


def test_the_extras_check_knows_every_extra_and_finds_each_page_s_first_example() -> None:
    """benchmarks/check_extras.py: an example for every extra of setup.cfg, each found on its page
    (the page's first runnable block after the set-up block, or the extra's own command), and the
    rotation CI uses picks distinct extras."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import check_extras as C
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    extras = C.declared_extras()
    assert set(extras) == set(C.EXAMPLES) and {"inspect", "deepeval", "lighteval"} <= set(extras)
    for extra in extras:
        lang, code, env = C.first_example(C.EXAMPLES[extra])
        assert lang in ("bash", "python") and code.strip(), extra
        if not C.EXAMPLES[extra].command:
            assert env.get("Q2_TINY") == "1" and env.get("HF_HUB_OFFLINE") == "1", extra
    assert "q2_metric.harness.lighteval_offline accelerate" in C.first_example(C.EXAMPLES["lighteval"])[1]
    assert "from guardrails import" in C.first_example(C.EXAMPLES["guardrails"])[1]
    assert "nemoguardrails" in C.first_example(C.EXAMPLES["nemo"])[1]
