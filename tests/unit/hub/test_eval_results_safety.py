"""`q2 publish`'s Eval Results never mislead and never overwrite: a dry run shows the files of any
results (tiny random models' included) and says when they cannot be published; benchmarks whose
ids slug alike, and tasks of one benchmark, get files of their own (or a refusal naming both); a
figure outside its range [0, 1] is refused in one sentence before anything is written.

Expected names and values are written out here by hand; the files are read back with yaml."""

from __future__ import annotations

import json

import pytest
import yaml
from support.cli import refused
from support.files import snapshot

from q2_metric.cli import main
from q2_metric.config import Q2Config
from q2_metric.hub import eval_results as er
from q2_metric.signature import Signature

REAL = str(Signature.create(Q2Config.paper()))
TINY = str(Signature.create(Q2Config.paper(), {"qg": "tiny-random-0a1b2c3d"}))
RESULTS = {"q2": 0.61234, "q2_no_nli": 0.5, "coverage": 0.9, "signature": REAL}


def write(tmp_path, name: str, results: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(results), encoding="utf-8")
    return str(path)


def folder_entries(repo) -> dict[tuple[str, str, str], float]:
    """(dataset id, task id, variant in the notes) -> value, over every file of the folder."""
    got = {}
    for p in sorted((repo / ".eval_results").iterdir()):
        for entry in yaml.safe_load(p.read_text(encoding="utf-8")):
            variant = entry["notes"].split(":")[0]
            got[(entry["dataset"]["id"], entry["dataset"]["task_id"], variant)] = entry["value"]
    return got


def test_a_dry_run_shows_the_files_of_tiny_results_and_says_they_cannot_be_published(tmp_path, capsys):
    tiny = write(tmp_path, "tiny.json", {**RESULTS, "signature": TINY})
    out = tmp_path / "repo"
    argv = ["publish", "--results", tiny, "--dataset-id", "me/d", "--date", "2026-01-15"]
    assert main([*argv, "--dry-run", "--eval-results", str(out)]) == 0
    captured = capsys.readouterr()
    assert "# .eval_results/me-d_q2-nli.yaml\n" in captured.out
    assert "# .eval_results/me-d_q2-f1.yaml\n" in captured.out
    assert "value: 0.6123" in captured.out and "value: 0.5" in captured.out
    (note,) = [line for line in captured.err.splitlines() if line.strip()]
    assert "tiny random models" in note and "cannot be published" in note
    assert "model card" not in note and "Eval Results" in note
    assert not out.exists()
    # without --dry-run: refused, in words about what it would have written (Eval Results)
    line = refused(capsys, [*argv, "--eval-results", str(out)], "tiny random models", "Eval Results")
    assert "model card" not in line
    assert not out.exists()
    # the model card's dry run too: the metadata shown, and the same note
    assert main(["publish", "--results", tiny, "--model-name", "m", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "model-index:" in captured.out and "value: 0.6123" in captured.out
    (note,) = [line for line in captured.err.splitlines() if line.strip()]
    assert "tiny random models" in note and "cannot be published" in note and "model card" in note


def test_benchmarks_whose_ids_slug_alike_keep_their_own_files(tmp_path):
    results = write(tmp_path, "r.json", RESULTS)
    repo = tmp_path / "repo"
    for dataset in ("me/my-bench", "me/my.bench", "me-my/bench"):
        argv = ["publish", "--results", results, "--dataset-id", dataset, "--date", "2026-01-15"]
        assert main([*argv, "--eval-results", str(repo)]) == 0
    got = folder_entries(repo)
    assert len(got) == 6 and len(list((repo / ".eval_results").iterdir())) == 6
    for dataset in ("me/my-bench", "me/my.bench", "me-my/bench"):
        assert got[(dataset, "default", "Q²-NLI (Q² with its NLI step)")] == 0.6123
        assert got[(dataset, "default", "Q²-F1 (token F1 only)")] == 0.5
    # the pull request's paths are unique the same way (nothing on the Hub is read to make them)
    paths = [
        f.path_in_repo
        for d in ("me/my-bench", "me/my.bench", "me-my/bench")
        for f in er.results_files(RESULTS, dataset_id=d, date="2026-01-15")
    ]
    assert len(set(paths)) == 6


def test_tasks_of_one_benchmark_keep_their_own_files(tmp_path):
    repo = tmp_path / "repo"
    for task, q2 in (("easy", 0.75), ("hard", 0.25), ("Hard", 0.5)):
        results = write(tmp_path, f"{task}.json", {**RESULTS, "q2": q2})
        argv = ["publish", "--results", results, "--dataset-id", "me/d", "--task-id", task]
        assert main([*argv, "--date", "2026-01-15", "--eval-results", str(repo)]) == 0
    got = folder_entries(repo)
    assert got[("me/d", "easy", "Q²-NLI (Q² with its NLI step)")] == 0.75
    assert got[("me/d", "hard", "Q²-NLI (Q² with its NLI step)")] == 0.25
    assert got[("me/d", "Hard", "Q²-NLI (Q² with its NLI step)")] == 0.5
    assert len(got) == 6
    # the default task keeps the plain name, and a second run replaces its own file only
    results = write(tmp_path, "default.json", RESULTS)
    argv = ["publish", "--results", results, "--dataset-id", "me/d", "--date", "2026-01-15"]
    assert main([*argv, "--eval-results", str(repo)]) == 0
    assert (repo / ".eval_results" / "me-d_q2-nli.yaml").exists()
    before = snapshot(repo)
    assert main([*argv, "--eval-results", str(repo)]) == 0
    assert snapshot(repo) == before and len(folder_entries(repo)) == 8


def test_a_file_of_the_same_name_holding_another_benchmark_is_refused_naming_both(tmp_path, capsys):
    results = write(tmp_path, "r.json", RESULTS)
    folder = tmp_path / "repo" / ".eval_results"
    folder.mkdir(parents=True)
    (folder / "me-d_q2-nli.yaml").write_text("- dataset: {id: other/set, task_id: t}\n  value: 0.3\n")
    before = snapshot(tmp_path)
    argv = ["publish", "--results", results, "--dataset-id", "me/d", "--eval-results", str(tmp_path / "repo")]
    refused(capsys, argv, "me-d_q2-nli.yaml", "other/set", "me/d")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "field, value",
    [("q2", 42), ("q2_no_nli", -3), ("coverage", 1.5), ("q2", -0.0001)],
)
def test_a_figure_outside_its_range_is_refused_in_one_sentence(tmp_path, capsys, field, value):
    results = write(tmp_path, "r.json", {**RESULTS, field: value})
    before = snapshot(tmp_path)
    base = ["publish", "--results", results]
    for argv in (
        [*base, "--dataset-id", "me/d", "--eval-results", str(tmp_path / "repo")],
        [*base, "--dataset-id", "me/d", "--dry-run", "--eval-results", str(tmp_path / "repo")],
        [*base, "--model-name", "m", "--card", str(tmp_path / "README.md")],
        [*base, "--model-name", "m", "--dry-run"],
    ):
        refused(capsys, argv, f"{field}={value:g}", "[0, 1]", results)
    assert snapshot(tmp_path) == before


def test_a_meta_eval_figure_outside_its_range_is_refused(tmp_path, capsys):
    report = {
        "kind": "benchmark",
        "signature": REAL,
        "datasets": {"fd": {"format": "faithdial", "n": 8, "label_rule": "r"}},
        "results": {"fd": {"metrics": {"q2": {"roc_auc": 1.25}, "q2_no_nli": {"roc_auc": 0.5}}}},
        "published": {"fd": [{"measure": "mean_q2_nli", "measured": 0.7}]},
    }
    path = write(tmp_path, "benchmark.json", report)
    refused(capsys, ["publish", "--meta-eval", path, "--dry-run"], "fd", "roc_auc=1.25", "[0, 1]")
    report["results"]["fd"]["metrics"]["q2"]["roc_auc"] = 0.75
    report["published"]["fd"][0]["measured"] = -0.5
    path = write(tmp_path, "benchmark.json", report)
    refused(capsys, ["publish", "--meta-eval", path, "--dry-run"], "fd", "mean_q2_nli=-0.5", "[0, 1]")
