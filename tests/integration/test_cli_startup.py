"""`q2`'s start-up: help, the version, `register` and the input checks import neither torch nor
transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers")


IMPORTS_AFTER = """
import json, runpy, sys
sys.argv = ["q2", *json.loads(sys.argv[1])]
try:
    runpy.run_module("q2_metric.cli", run_name="__main__")
except SystemExit as exit:
    code = exit.code
print("\\nMODULES", json.dumps({"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}))
""".replace("HEAVY", repr(HEAVY))


def imports_after(args, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    run = subprocess.run(
        [sys.executable, "-c", IMPORTS_AFTER, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    line = [x for x in run.stdout.splitlines() if x.startswith("MODULES ")][-1]
    return json.loads(line[len("MODULES ") :]), run


@pytest.mark.parametrize(
    "args, code",
    [
        (["--help"], 0),
        (["score", "--help"], 0),
        (["agree", "--help"], 0),
        (["--version"], 0),
        (["register"], 0),
        (["score", "in.csv"], 2),  # argument error: -o missing
        (["score", "missing.csv", "-o", "out.csv"], 2),  # input check: no such file
        (["score", "bad.csv", "-o", "out.csv"], 2),  # input check: no response column
        (
            ["demo", "--qg-model", "nobody/qg", "--qa-model", "nobody/qa", "--nli-model", "nobody/nli"],
            2,
        ),  # offline
    ],
)
def test_no_torch_for_help_register_and_checks(args, code, tmp_path):
    (tmp_path / "bad.csv").write_text("reply,knowledge\nhi,there\n")
    seen, run = imports_after(args, tmp_path)
    assert seen["code"] in (code, None if code == 0 else code), run.stderr
    assert seen["heavy"] == [], f"{args} imported {seen['heavy']}"
