"""`q2 score` interrupted (SIGINT, SIGTERM) at start-up and mid-run, and two runs on the same outputs:
one line, the cache and the earlier outputs kept, the next run resumes."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from support.cli import cli, tiny_flags
from support.files import HEADER, leftovers

from q2_metric.io import MANIFEST_SUFFIX, recover_outputs

PY = sys.executable


def start_paused(args, pause, tmp_path, env=None):
    flag = tmp_path / f"paused-{pause}"
    proc = subprocess.Popen(
        [PY, "-m", "q2_metric.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "Q2_TEST_PAUSE": pause,
            "Q2_TEST_PAUSE_FILE": str(flag),
            **(env or {}),
        },
    )
    deadline = time.time() + 300
    while not flag.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline
        time.sleep(0.1)
    return proc, flag


def test_sigint_at_start_up_is_one_line(tmp_path):
    (tmp_path / "in.csv").write_text(HEADER + "a,b\n")
    # held where start-up checks the models (a fixed sleep raced start-up on a fast machine)
    proc, _ = start_paused(
        ["score", str(tmp_path / "in.csv"), "-o", str(tmp_path / "o.csv")], "models-check", tmp_path
    )
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.count("\n") == 1 and err.startswith("q2: interrupted (SIGINT)"), err


@pytest.mark.parametrize(
    "sig, code, point",
    [
        (signal.SIGTERM, 143, "chunk-1"),
        (signal.SIGINT, 130, "chunk-1"),
        (signal.SIGTERM, 143, "temps-written"),
    ],
)
def test_signal_mid_run_keeps_cache_and_outputs(tiny_config, rows, tmp_path, sig, code, point):
    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(
            [["response", "knowledge"]] + [[r["response"], r["knowledge"]] for r in rows[:4]]
        )
    out = tmp_path / "out"
    out.mkdir()
    (out / "o.csv").write_text("old\n")
    args = [
        "score",
        str(data),
        "-o",
        str(out / "o.csv"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--chunk-size",
        "2",
        *tiny_flags(tiny_config, "--no-progress"),
    ]
    proc, _ = start_paused(args, point, tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    ours = [line for line in err.splitlines() if line.startswith("q2")]
    assert proc.returncode == code and ours == [
        f"q2: interrupted ({signal.Signals(sig).name}); run the same command again to resume from the cache."
    ]
    assert "Traceback" not in err
    assert (out / "o.csv").read_text() == "old\n" and leftovers(
        out
    ) == []  # the old set, nothing half-written
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    # chunks grow 1, 2, ... (score_files.chunked): a stop after the first chunk has cached 1 response
    cached = 4 if point == "temps-written" else 1
    assert f"({4 - cached} now, {cached} from the cache)" in res.stdout  # the finished work is reused


def test_recover_outputs_leaves_a_live_runs_manifest_alone(tiny_config, rows, tmp_path):
    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(
            [["response", "knowledge"]] + [[r["response"], r["knowledge"]] for r in rows[:2]]
        )
    out = tmp_path / "o.csv"
    args = [
        "score",
        str(data),
        "-o",
        str(out),
        "--summary",
        str(tmp_path / "s.json"),
        "--cache-dir",
        str(tmp_path / "cache"),
        *tiny_flags(tiny_config, "--no-progress"),
    ]
    proc, flag = start_paused(args, "manifest-written", tmp_path)  # run A: its set is being renamed
    manifest = tmp_path / f".o.csv{MANIFEST_SUFFIX}"
    assert manifest.exists()
    other = threading.Thread(target=recover_outputs, args=([out, tmp_path / "s.json"],))  # what run B does
    other.start()
    other.join(timeout=2)
    assert other.is_alive() and manifest.exists()  # B waits for A instead of completing A's manifest
    flag.unlink()  # let A go on
    _, err = proc.communicate(timeout=120)
    other.join(timeout=30)
    assert proc.returncode == 0, err
    assert not other.is_alive() and leftovers(tmp_path) == []
    assert json.loads((tmp_path / "s.json").read_text())["num_rows"] == 2
    res = cli(*args)  # a second run on the same outputs and cache
    assert res.returncode == 0 and "(0 now, 2 from the cache)" in res.stdout, res.stderr
