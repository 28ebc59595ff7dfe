"""`q2 meta-eval --dataset` (`q2_metric.cli.meta_eval.benchmark`): checks before any work, --limit,
RAGTruth selections of one class, per-task figures and ids in the per-response outputs."""

from __future__ import annotations

import csv
import json

import pytest
from support.cli import refused
from support.ragtruth import R1, row, write_ragtruth

import q2_metric.meta.benchmark as benchmark
from q2_metric.cli import main

NO_WORK = ["meta-eval", "--baselines-only", "--no-bertscore", "--bootstrap", "20"]


@pytest.fixture
def no_work(monkeypatch):
    """Any work (baselines, Q²'s models) fails the test: a refusal must come before it."""

    def fail(*args, **kwargs):
        raise AssertionError("work started before the refusal")

    monkeypatch.setattr(benchmark, "baseline_scores", fail)
    monkeypatch.setattr("q2_metric.cli.meta_eval.benchmark.q2_runner", fail)


def _true_set(path, n=6):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["grounding", "generated_text", "label"])
        for i in range(n):
            w.writerow([f"Knowledge {i} about topic {i}.", f"Response {i}.", i % 2])
    return path


def test_a_bad_spans_file_is_refused_before_scoring_and_writes_nothing(tmp_path, capsys, no_work):
    """Before, it was read after the baselines, Q² and the bootstrap, and Q²'s files were left."""
    rt = write_ragtruth(tmp_path / "rt")
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps({"id": "1", "spans": [{"start": 0, "end": 999}]}) + "\n")
    out = tmp_path / "bench"
    argv = ["--dataset", f"rt={rt}", "--ragtruth-spans", f"x={spans}", "--out-dir", str(out)]
    refused(capsys, [*NO_WORK, *argv], "spans.jsonl line 1 (id 1): field 'spans' item 0")
    refused(capsys, ["meta-eval", "--no-progress", *argv], "spans.jsonl line 1 (id 1)")  # before Q²'s models
    assert not out.exists()


def test_an_out_dir_that_cannot_be_made_is_refused_before_any_work(tmp_path, capsys, no_work):
    data = _true_set(tmp_path / "t.csv")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    refused(
        capsys,
        [*NO_WORK, "--dataset", f"t={data}", "--out-dir", str(blocker / "bench")],
        "which is a file, not a folder",
    )


def test_limit_keeps_the_first_rows_of_each_dataset(tmp_path):
    """Before, --limit with --dataset was ignored in silence: every row was scored."""
    data = _true_set(tmp_path / "t.csv", n=10)
    out = tmp_path / "bench"
    assert main([*NO_WORK, "--dataset", f"t={data}", "--limit", "4", "--out-dir", str(out)]) == 0
    report = json.loads((out / "benchmark.json").read_text())
    assert report["datasets"]["t"]["n"] == 4 and report["datasets"]["t"]["consistent"] == 2


def test_limit_is_refused_where_nothing_takes_it(tmp_path, capsys):
    refused(capsys, ["meta-eval", "--annotated-dir", str(tmp_path), "--limit", "3"], "--limit applies to")


def test_a_ragtruth_selection_of_one_class_reports_its_figures(tmp_path, capsys):
    """Before: exit 2 for want of a ROC AUC, which RAGTruth's figures do not need."""
    responses = [
        row("1", "s1", R1),
        row("2", "s2", "The council approved the park."),
        row("3", "s3", "Cafe."),
    ]
    rt = write_ragtruth(tmp_path / "rt", responses)
    judge = tmp_path / "judge.csv"
    judge.write_text("id,score\nrt:1,0.2\nrt:2,0.9\nrt:3,0.8\n")
    out = tmp_path / "bench"
    argv = [*NO_WORK, "--dataset", f"rt={rt}", "--scores", f"judge={judge}", "--out-dir", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "ROC AUC is not defined on rt: every one of its 3 responses is consistent" in printed
    report = json.loads((out / "benchmark.json").read_text())
    assert report["results"]["rt"]["metrics"]["judge"]["roc_auc"] is None
    judged = report["ragtruth"]["rt"]["metrics"]["judge"]
    # flagged iff <= 0.5: response 1 only, no hallucinated response: precision 0 of 1, no recall
    assert judged["responses"] == 3 and judged["response"]["precision"] == 0.0
    assert judged["response"]["recall"] is None


def test_per_task_figures(tmp_path, capsys):
    rt = write_ragtruth(
        tmp_path / "rt"
    )  # kept: 1 (QA, hallucinated), 2, 10 (Summary), 3 (Data2txt, hallucinated)
    judge = tmp_path / "judge.csv"
    judge.write_text("id,score\nrt:1,0.2\nrt:2,0.5\nrt:3,0.9\nrt:4,0.7\n")
    out = tmp_path / "bench"
    assert main([*NO_WORK, "--dataset", f"rt={rt}", "--scores", f"judge={judge}", "--out-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    by_task = json.loads((out / "benchmark.json").read_text())["ragtruth"]["rt"]["by_task"]
    assert list(by_task) == ["QA", "Summary", "Data2txt"]
    # QA: response 1 flagged (0.2) and hallucinated: P = R = F1 = 1; Summary: 2 flagged (0.5), none
    # hallucinated: P 0; Data2txt: 3 hallucinated, not flagged (0.9): R 0
    assert by_task["QA"]["judge"]["response"]["f1"] == 1.0 and by_task["QA"]["judge"]["responses"] == 1
    assert by_task["Summary"]["judge"]["response"]["precision"] == 0.0
    assert by_task["Data2txt"]["judge"]["response"]["recall"] == 0.0
    assert "| judge | QA | 1 | 1.000 | 1.000 | 1.000 | - | - |" in printed


@pytest.mark.slow  # seconds: Q² on tiny models
def test_q2s_per_response_outputs_carry_the_ragtruth_id(tmp_path, tiny_models):
    rt = write_ragtruth(tmp_path / "rt")
    out = tmp_path / "bench"
    flags = [
        "--qg-model",
        tiny_models["qg"],
        "--qa-model",
        tiny_models["qa"],
        "--nli-model",
        tiny_models["nli"],
    ]
    argv = ["meta-eval", "--no-bertscore", "--bootstrap", "20", "--dataset", f"rt={rt}", "--no-cache"]
    assert main([*argv, *flags, "--device", "cpu", "--no-progress", "--out-dir", str(out)]) == 0
    with open(out / "q2" / "rt.scores.csv", newline="", encoding="utf-8") as f:
        scored = list(csv.DictReader(f))
    assert [(r["id"], r["task_type"]) for r in scored] == [
        ("1", "QA"),
        ("2", "Summary"),
        ("3", "Data2txt"),
        ("10", "Summary"),
    ]
    spans = [json.loads(line) for line in (out / "q2" / "rt.spans.jsonl").read_text().splitlines()]
    assert [s["id"] for s in spans] == ["1", "2", "3", "10"]
