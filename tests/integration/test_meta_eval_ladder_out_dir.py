"""`q2 meta-eval --control/--ladder` honour --out-dir (issue 36): the tables are written there (with
the tiny-models note), and an --out-dir that is an input is refused before any model work."""

import shutil
import subprocess
import sys

import pytest
from support.data import ANNOTATED

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "q2_metric.cli", "meta-eval"]


@pytest.fixture()
def splits(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    for name in ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent"):
        shutil.copy(ANNOTATED / f"{name}.csv", d / f"{name}.csv")
    return d


def test_control_tables_go_to_out_dir(splits, tmp_path):
    out = tmp_path / "tables"
    res = subprocess.run(
        CLI
        + [
            "--annotated-dir",
            str(splits),
            "--control",
            "random-knowledge",
            "--tiny",
            "--limit",
            "1",
            "--device",
            "cpu",
            "--no-progress",
            "--out-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    text = (out / "control.md").read_text()
    assert text.startswith("# Table 8") and "| original | 4 |" in text and "meaningless" in text
    assert not (out / "ladder.md").exists()


def test_an_out_dir_that_is_an_input_is_refused(splits):
    before = {p: p.read_bytes() for p in splits.iterdir()}
    target = splits / "dodeca_consistent.csv"
    res = subprocess.run(
        CLI
        + [
            "--annotated-dir",
            str(splits),
            "--ladder",
            "--tiny",
            "--limit",
            "1",
            "--device",
            "cpu",
            "--out-dir",
            str(target),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"q2: The output '{target / 'ladder.md'}' (--out-dir (ladder.md)) lies inside the input '{target}' "
        "(--dodeca-consistent); write the output somewhere else, so that the input is kept as it is."
    ]
    assert {p: p.read_bytes() for p in splits.iterdir()} == before
