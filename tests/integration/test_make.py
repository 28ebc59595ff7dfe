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
