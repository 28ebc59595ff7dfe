"""The speed benchmark runs CI-sized: same scores as the reference loop, never more response-side QA."""

import json
import re
import subprocess
import sys

from support.data import ROOT


def test_benchmark_ci_sized():
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_speed.py"),
            "--n",
            "6",
            "--size",
            "tiny",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    last = res.stdout.strip().splitlines()[-1]
    assert re.match(r"speed-up: [\d.]+x .* same scores: True$", last), last
    ref, eng = map(int, re.search(r"qa response examples\s+(\d+)\s+(\d+)", res.stdout).groups())
    assert 0 < eng <= ref
    assert "peak memory:" in res.stdout and "QA tokens" in res.stdout
    # the machine's measured peak, and each model stage's FLOPs and fraction of it
    assert re.search(
        r"Matrix-product peak \(torch.mm unless named, measured now\): float32 [\d,.]+ GFLOP/s, "
        r"float32 oneDNN [\d,.]+ GFLOP/s",
        res.stdout,
    )
    assert re.search(r"Linear layers: (oneDNN|PyTorch default \(BLAS\))$", res.stdout, re.M)
    assert re.search(r"fraction of float32 peak\s+[\d.]+%\s+[\d.]+%", res.stdout)
    for role in ("qg", "qa"):
        assert re.search(
            rf"^{role}\s+[\d.]+\s+\d+%\s+\d+\s+[\d,]+\s+[\d.]+\s+[\d.]+\s+[\d.]+%", res.stdout, re.M
        ), role
    assert re.search(r"^questions\s+[\d.]+\s+[\d.]+%\s+[\d.]+\s+qg:[\d,]+", res.stdout, re.M)


def test_benchmark_gpu_path_on_a_cpu_stand_in():
    """What `--device cuda` runs, minus the device: bfloat16 models (and their peak), padded QA
    batches instead of packed rows, large batches and token budgets; the decisions are scripted,
    so the scores must still equal the loop's."""
    res = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_speed.py"),
            "--n",
            "3",
            "--size",
            "tiny",
            "--device",
            "cpu",
            "--dtype",
            "bfloat16",
            "--qa-packing",
            "off",
            "--batch-size",
            "256",
            "--max-tokens",
            "131072",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    assert "dtype bfloat16" in res.stdout and "QA packed: False" in res.stdout
    assert "batch sizes QG 256, QA 256, NLI 256" in res.stdout
    assert re.search(r"Matrix-product peak .*bfloat16 [\d,.]+ GFLOP/s", res.stdout)
    assert re.search(r"fraction of bfloat16 peak\s+[\d.]+%\s+[\d.]+%", res.stdout)
    assert res.stdout.strip().splitlines()[-1].endswith("same scores: True")


def test_benchmark_precisions_and_growth_ci_sized(tmp_path):
    """`--precisions` prints one row per mode (float32 against itself: every decision equal, the
    same scores) and the int8 peak, and `--json` the figures `gpu_check.sh` commits (issue 51's
    keys); `--growth` one row per size, from fresh processes."""
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    script = str(ROOT / "benchmarks" / "bench_speed.py")
    res = subprocess.run(
        [
            sys.executable,
            script,
            "--n",
            "4",
            "--size",
            "tiny",
            "--device",
            "cpu",
            "--precisions",
            "float32,float32-fast,int8",
            "--json",
            str(tmp_path / "figures.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    row = re.search(
        r"^float32\s+[\d.]+\s+[\d.]+\s+1\.00x\s+[\d.]+x\s+[\d.]+%\s+True\s+(.*)$", res.stdout, re.M
    )
    assert row and row.group(1).count("100.0%") == 3, res.stdout
    # beam search by the opt-in fast path: the default's scores, and the random QG's own questions equal
    ref = re.search(
        r"^float32-fast\s+[\d.]+\s+[\d.]+\s+[\d.]+x\s+[\d.]+x\s+[\d.]+%\s+True\s+(.*)$", res.stdout, re.M
    )
    assert ref and ref.group(1).startswith("100.0%"), res.stdout
    assert re.search(r"^int8\s+[\d.]+\s+[\d.]+\s+[\d.]+x\s+[\d.]+x\s+[\d.]+%\s+True", res.stdout, re.M)
    assert re.search(r"qa: int8 peak [\d.]+", res.stdout)
    figures = json.loads((tmp_path / "figures.json").read_text(encoding="utf-8"))
    assert figures["responses"] == 4 and figures["device"]
    assert figures["fp32_responses_per_s"] > 0 and figures["bf16_responses_per_s"] is None
    assert 0 < figures["qg_fp32_peak_fraction"] < 1
    assert figures["scores_equal"] is True and figures["scores_equal_released_loop"] is True
    assert set(figures["modes"]) == {"float32", "float32-fast", "int8"}
    assert res.stdout.strip().splitlines()[-1].endswith("same scores: True")
    res = subprocess.run(
        [sys.executable, script, "--size", "tiny", "--device", "cpu", "--growth", "2,4"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    # responses, seconds, s/response, peak RSS MB, peak GPU MB (0 on a CPU)
    rows = re.findall(r"^\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d,]+\s+([\d,]+)$", res.stdout, re.M)
    assert [(int(n), gpu) for n, gpu in rows] == [(2, "0"), (4, "0")], res.stdout


def test_benchmark_profiles_the_engine_run(tmp_path):
    """`--engine-only --profile PREFIX` (what `benchmarks/experiments/profile_gpu.sh` runs on a GPU):
    the stages, the Python functions by their own time and torch's operators, of the engine run."""
    prefix = tmp_path / "tiny"
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_speed.py"), "--size", "tiny", "--n", "4"]
        + ["--device", "cpu", "--engine-only", "--profile", str(prefix)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    report = (tmp_path / "tiny.txt").read_text()
    assert re.search(r"^engine seconds \(profiled\): [\d.]+; digest [0-9a-f]{16}$", report, re.M)
    assert re.search(r"^questions\s+[\d.]+\s+[\d.]+%", report, re.M)
    assert "torch operators by their own host time:" in report and "Self CPU" in report
    assert "q2_metric/scorer.py" in report and "tottime" in report
    assert (tmp_path / "tiny.prof").stat().st_size > 0
