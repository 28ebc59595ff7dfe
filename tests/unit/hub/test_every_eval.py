"""`q2 publish --every-eval-ever DIR`: a `q2 score` run as an Every Eval Ever record beside the
Hub's `.eval_results`, with instance-level rows; the package's own validator accepts both files
(skipped where `every-eval-ever` is not installed: it needs Python 3.12).

Expected rows are written out here from the run's output file, not taken from the code under test."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import refused

from q2_metric.cli import main
from q2_metric.config import Q2Config
from q2_metric.signature import Signature

REAL = str(Signature.create(Q2Config.paper()))
# scripted figures: three responses scored 1.0, 0.5 and 0.0, one that could not be scored
ROWS = [
    {"id": "a", "response": "r1", "knowledge": "k1", "q2": "1.0", "q2_no_nli": "1.0", "reason": "ok", "decision": "consistent"},
    {"id": "b", "response": "r2", "knowledge": "k2", "q2": "0.5", "q2_no_nli": "0.25", "reason": "half", "decision": "inconsistent"},
    {"id": "c", "response": "r3", "knowledge": "k3", "q2": "0.0", "q2_no_nli": "0.0", "reason": "none", "decision": "inconsistent"},
    {"id": "d", "response": "", "knowledge": "k4", "q2": "", "q2_no_nli": "", "reason": "Not scored: empty response.", "decision": ""},
]  # fmt: skip
OP = {
    "threshold": 0.5,
    "rule": "balanced_accuracy",
    "dataset": "wow",
    "sha256": "c" * 64,
    "signature": "ba@cccccccccccc",
}
SUMMARY = {
    "q2": 0.5,
    "q2_no_nli": 0.41666,
    "coverage": 1.0,
    "signature": REAL,
    "num_rows": 4,
    "num_bad_rows": 0,
    "threshold": 0.5,
    "num_consistent": 1,
    "num_inconsistent": 2,
    "operating_point": OP,
}


def run(tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    summary, scores = tmp_path / "summary.json", tmp_path / "out.csv"
    summary.write_text(json.dumps(SUMMARY))
    with open(scores, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(ROWS[0]))
        w.writeheader()
        w.writerows(ROWS)
    out = tmp_path / "eee"
    argv = ["publish", "--results", str(summary), "--every-eval-ever", str(out), "--scores", str(scores)]
    argv += [
        "--model-id",
        "acme/chat-7b",
        "--dataset-id",
        "McGill-NLP/FaithDial",
        "--date",
        "2026-12-01",
        *extra,
    ]
    assert main(argv) == 0
    [aggregate] = out.glob("data/*/*/*/*.json")
    [samples] = out.glob("data/*/*/*/*_samples.jsonl")
    return aggregate, samples


def test_the_record_and_its_instance_rows(tmp_path):
    aggregate, samples = run(tmp_path, "--eval-results", str(tmp_path / "hub"))
    assert aggregate.relative_to(tmp_path / "eee").parts[:4] == (
        "data",
        "McGill-NLP_FaithDial",
        "acme",
        "chat-7b",
    )
    assert samples.name == aggregate.stem + "_samples.jsonl"
    record = json.loads(aggregate.read_text())
    assert record["model_info"]["id"] == "acme/chat-7b" and record["eval_library"]["name"] == "q2-metric"
    assert record["eval_library"]["additional_details"]["signature"] == REAL
    by_id = {r["evaluation_result_id"]: r for r in record["evaluation_results"]}
    assert (
        by_id["q2-nli"]["score_details"]["score"] == 0.5
        and by_id["q2-f1"]["score_details"]["score"] == 0.41666
    )
    assert by_id["q2-nli"]["score_details"]["uncertainty"] == {
        "num_samples": 3,
        "standard_deviation": statistics.stdev([1.0, 0.5, 0.0]),
    }
    details = by_id["q2-nli"]["metric_config"]["additional_details"]
    assert json.loads(details["operating_point"]) == OP and "consistent iff Q² > 0.5" in details["decision"]
    lines = samples.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    # one row per scored response and variant; the unscored response has none
    assert [(r["evaluation_result_id"], r["sample_id"]) for r in rows] == [
        ("q2-nli", "a"), ("q2-nli", "b"), ("q2-nli", "c"), ("q2-f1", "a"), ("q2-f1", "b"), ("q2-f1", "c"),
    ]  # fmt: skip
    assert [r["evaluation"] for r in rows[:3]] == [
        {"score": 1.0, "is_correct": True},
        {"score": 0.5, "is_correct": False},  # 0.5 <= 0.5: inconsistent, as the run decided
        {"score": 0.0, "is_correct": False},
    ]
    assert rows[1]["input"] == {"raw": "k2", "reference": ["k2"]} and rows[1]["output"] == {"raw": ["r2"]}
    assert all(r["evaluation_id"] == record["evaluation_id"] for r in rows)
    detailed = record["detailed_evaluation_results"]
    assert detailed["file_path"] == samples.relative_to(tmp_path / "eee").as_posix()
    assert (
        detailed["checksum"] == hashlib.sha256(samples.read_bytes()).hexdigest()
        and detailed["total_rows"] == 6
    )
    # beside the Hub's .eval_results, whose notes name the operating point
    hub = sorted((tmp_path / "hub" / ".eval_results").iterdir())
    assert (
        len(hub) == 2
        and "operating point balanced_accuracy on wow (threshold 0.5, op:ba@cccccccccccc)"
        in hub[0].read_text()
    )


def test_refusals(tmp_path, capsys):
    summary = tmp_path / "s.json"
    summary.write_text(json.dumps(SUMMARY))
    base = ["publish", "--results", str(summary), "--every-eval-ever", str(tmp_path / "eee")]
    refused(capsys, base, "--scores", "--model-id")
    refused(capsys, [*base, "--scores", str(summary), "--model-id", "flat", "--benchmark", "b"], "OWNER/NAME")


def test_its_own_validator_accepts_the_files(tmp_path):
    # the validator's own interpreter: this one, or Q2_EVERY_EVAL_EVER_PYTHON (every-eval-ever asks
    # for Python 3.12; its validator also runs on 3.11, installed with --ignore-requires-python)
    python = os.environ.get("Q2_EVERY_EVAL_EVER_PYTHON")
    if not python:
        pytest.importorskip(
            "every_eval_ever", reason="every-eval-ever is not installed (it needs Python 3.12)"
        )
    aggregate, samples = run(tmp_path)
    root = tmp_path / "eee"
    done = subprocess.run(
        [python or sys.executable, "-m", "every_eval_ever", "validate", "--format", "json",
         aggregate.relative_to(root).as_posix(), samples.relative_to(root).as_posix()],
        cwd=root, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    reports = json.loads(done.stdout)
    assert [(r["file_type"], r["valid"], r["errors"], r["warnings"]) for r in reports] == [
        ("aggregate", True, [], []),
        ("instance", True, [], []),
    ]
