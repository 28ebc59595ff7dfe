"""`q2 register`: `evaluate.load("q2")` loads the installed module, also after an upgrade, without a warning."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from support.data import ROOT


def test_registered_module_follows_upgrades_without_the_warning(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    reg = subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", "register"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert reg.returncode == 0, reg.stderr
    # "upgrade": another copy of the package, whose evaluate module says so, first on the path
    upgraded = tmp_path / "upgraded"
    shutil.copytree(ROOT / "q2_metric", upgraded / "q2_metric", ignore=shutil.ignore_patterns("__pycache__"))
    module = upgraded / "q2_metric" / "q2_metric.py"
    module.write_text(
        module.read_text().replace("Scores each prediction", "UPGRADED. Scores each prediction")
    )
    code = (
        "import q2_metric, evaluate; m = evaluate.load('q2'); "
        "print('UPGRADED' in m.inputs_description, type(m).__module__)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(upgraded)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "q2_metric.q2_metric"]
    assert "couldn't be found" not in run.stderr and "remotely" not in run.stderr
