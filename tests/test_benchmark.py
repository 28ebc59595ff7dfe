"""The speed benchmark runs to completion in CI-sized mode and prints the ratio."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_ci_sized():
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_speed.py"), "--n", "6", "--size",
                          "tiny", "--device", "cpu"], capture_output=True, text=True, timeout=600,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert "speed-up:" in res.stdout and "responses/s" in res.stdout and "same scores: True" in res.stdout
