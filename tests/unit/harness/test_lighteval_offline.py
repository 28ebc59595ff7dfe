"""`python -m q2_metric.harness.lighteval_offline`: LightEval's tinyBenchmarks task module, which
downloads a file when imported, is registered as empty when that file is missing, and left alone when
it is there; nothing is written into the installed package. A stand-in `lighteval` package built here
(its `tiny_benchmarks` fails as the real one does offline) takes the real one's place in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.data import ROOT

SCRIPT = """
import importlib, sys
from q2_metric.harness.lighteval_offline import leave_out_unfetched_tasks
left_out = leave_out_unfetched_tasks()
module = importlib.import_module("lighteval.tasks.tasks.tiny_benchmarks")
print(left_out, module.TASKS_TABLE)
"""


def fake_lighteval(tmp_path: Path, with_file: bool) -> Path:
    tasks = tmp_path / "site" / "lighteval" / "tasks" / "tasks"
    tasks.mkdir(parents=True)
    for init in (tasks.parents[1] / "__init__.py", tasks.parent / "__init__.py"):
        init.write_text("", encoding="utf-8")
    (tasks / "tiny_benchmarks.py").write_text(
        "import os\n"
        "if not os.path.isfile(os.path.join(os.path.dirname(__file__), 'tinyBenchmarks.pkl')):\n"
        "    raise ConnectionError('raw.githubusercontent.com is not reachable')\n"
        "TASKS_TABLE = ['tiny:winogrande']\n",
        encoding="utf-8",
    )
    if with_file:
        (tasks / "tinyBenchmarks.pkl").write_bytes(b"downloaded")
    return tmp_path / "site"


def run(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env={"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def tree(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_without_the_file_the_module_is_left_out_and_nothing_is_written(tmp_path):
    site = fake_lighteval(tmp_path, with_file=False)
    before = tree(site)
    res = run(site)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "['lighteval.tasks.tasks.tiny_benchmarks'] []"
    assert tree(site) == before  # no stand-in file, nothing else


def test_with_the_file_lighteval_s_own_tasks_load(tmp_path):
    site = fake_lighteval(tmp_path, with_file=True)
    res = run(site)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[] ['tiny:winogrande']"


def test_without_lighteval_the_launcher_says_how_to_install_it(tmp_path):
    res = subprocess.run(
        [sys.executable, "-S", "-m", "q2_metric.harness.lighteval_offline", "--help"],
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert res.returncode == 2 and res.stderr.strip() == (
        "q2: LightEval is not installed; install it with pip install 'q2-metric[lighteval]'."
    ), res.stderr
