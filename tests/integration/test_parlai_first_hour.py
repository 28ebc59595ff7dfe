"""ParlAI's first hour (issue 36): a streamed pass over the annotation file writes its `.lengths`
count under --datapath, never beside the file (that wrote into the installed package), and the
tiny-models warning is said once per process, not once per teacher."""

import csv
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from support.data import ROOT
from support.files import read_csv

pytest.importorskip("parlai")
pytestmark = pytest.mark.slow

PACKAGE_DATA = ROOT / "parlai_ext" / "data"


def tree(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()
    }


def test_streamed_annotations_count_their_lengths_under_datapath(tmp_path):
    rows = read_csv(PACKAGE_DATA / "cross_annotation.csv")[:3]
    mine = tmp_path / "in" / "ann.csv"
    mine.parent.mkdir()
    with open(mine, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    before, package = tree(mine.parent), tree(PACKAGE_DATA)
    datapath = tmp_path / "data"
    for annotations in ([], ["--q2-annotations", str(mine)]):
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "parlai.scripts.eval_model",
                "-t",
                "parlai_ext.teachers:CrossAnnotationTeacher",
                "-m",
                "parlai_ext.agents:ReplayAgent",
                "-dt",
                "valid:stream",
                "--datapath",
                str(datapath),
                "--num-examples",
                "2",
                "--log-every-n-secs",
                "-1",
                *annotations,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, res.stderr[-2000:]
    assert tree(mine.parent) == before and tree(PACKAGE_DATA) == package
    counts = sorted((datapath / "q2_cross_annotation").glob("*.lengths"))
    assert len(counts) == 2 and "3\n3" in {p.read_text() for p in counts}  # 3 episodes of one turn each


def test_tiny_warning_once_per_process(monkeypatch):
    from parlai.utils import logging as parlai_logging

    from parlai_ext import report

    said = []
    monkeypatch.setattr(parlai_logging, "warning", lambda msg, *a, **k: said.append(msg))
    monkeypatch.setattr(report, "_TINY_WARNED", [])
    opt = {"q2_tiny": True, "q2_device": "cpu", "datatype": "valid", "task": "t", "log_every_n_secs": -1}
    for _ in range(4):  # train_model's teachers: dictionary pass, train, valid, test
        report.Q2Buffer(opt)
    assert len([m for m in said if "tiny random models" in m]) == 1
