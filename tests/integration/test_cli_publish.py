"""`q2 publish` against a Hub that cannot be reached: one sentence, fast."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time


def test_publish_fails_fast_when_the_hub_cannot_be_reached(tmp_path):
    with socket.socket() as s:  # a local port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": "q2:x"}))
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": f"http://127.0.0.1:{port}",
        "HF_HOME": str(tmp_path / "hf"),
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
        "HF_TOKEN": "",
    }
    start = time.monotonic()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "publish",
            "--results",
            str(results),
            "--model-name",
            "m",
            "--repo-id",
            "me/m",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - start
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().startswith(f"q2: The Hub cannot be reached (127.0.0.1:{port}: ")
    assert took < 15, took  # the client's own retries took ~23 s
