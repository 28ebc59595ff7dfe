"""The Makefile and the checkout: `make run` offline ends in one sentence; outputs are ignored by git."""

from __future__ import annotations

import os
import subprocess

import pytest
from support.data import ROOT


def test_make_run_offline_ends_in_one_sentence_pointing_to_make_try(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("Q2_", "MAKE"))}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    res = subprocess.run(
        ["make", "-s", "--no-print-directory", "run"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode != 0
    lines = [x for x in res.stderr.splitlines() if x.startswith("q2:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    sentence = lines[0]
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    assert (
        "`make try`" in sentence
        and "`hf download mrm8488/t5-base-finetuned-question-generation-ap`" in sentence
    )
    assert "cannot give it" not in sentence


def test_meta_eval_default_folder_is_ignored_by_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("meta_eval/meta_eval.md", "site/index.html"):  # q2 meta-eval's default folder, make docs'
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0, path


def _recipe(tmp_path, *targets: str) -> list[str]:
    """The commands `make` would run (-n: none is run) for a fresh .venv under tmp_path."""
    venv = tmp_path / "venv"
    res = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", f"VENV={venv}", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")},
    )
    assert res.returncode == 0, res.stderr
    return [line.replace(str(venv), "VENV") for line in res.stdout.splitlines() if not line.startswith("#")]


def _installs(lines: list[str]) -> list[str]:
    return [
        line.split("pip install -q --disable-pip-version-check ", 1)[1]
        for line in lines
        if " pip install " in line
    ]


def test_make_run_and_try_set_up_the_core_and_serve_only(tmp_path):
    for target in ("run", "try"):
        lines = _recipe(tmp_path, target)
        assert _installs(lines) == ["torch==2.13.0", "-e '.[serve]'"], lines


def test_make_test_adds_what_the_tests_need_and_writes_into_no_other_package(tmp_path):
    lines = _recipe(tmp_path, "VENV/.installed".replace("VENV", str(tmp_path / "venv")))
    installs = _installs(lines)
    assert installs[:2] == ["torch==2.13.0", "-e '.[serve]'"] and any(
        "'.[test,ray,lint]'" in i for i in installs
    )
    # nothing but pip writes into the environment: no file placed inside an installed package
    others = [line for line in lines if " pip " not in line and "python3 -m venv" not in line]
    assert all(line.startswith(("test -x", "touch VENV/.")) or " pip freeze " in line for line in others), (
        others
    )
    assert not [line for line in lines if "__file__" in line or "site-packages" in line]
    # pip reports the unmet requirements of what is installed without them when it next resolves: every
    # --no-deps install comes after the last resolving one (no expected `ERROR` line in the set-up)
    resolving = [n for n, i in enumerate(installs) if "--no-deps" not in i]
    first_no_deps = min(n for n, i in enumerate(installs) if "--no-deps" in i)
    assert max(resolving) < first_no_deps, installs
