"""The Hub's Eval Results of real runs on the tiny models: `q2 score` on the bundled sample and
`q2 meta-eval` on a FaithDial-format set, their `.eval_results/` files written by the real code
and checked against the Hub's format (`hub.eval_results.check_file`: hub-docs' specification and
huggingface_hub's own reader). The figures expected are recomputed here from a separate `q2 score`
run's per-row scores. (The tiny models built by the `tiny_models` fixture are local folders, so
`q2 publish` takes their results; `--tiny`'s are refused, tests/unit/hub/test_eval_results.py.)"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries
from support.data import SAMPLE

from q2_metric.cli import main
from q2_metric.hub import eval_results as er

FAITHDIAL = Path(__file__).parents[1] / "data" / "faithdial" / "tiny.jsonl"


def tiny_flags(models) -> list[str]:
    """The tiny models, as `q2 score` and `q2 meta-eval` both take them."""
    flags = [f"--{role}-model" if i == 0 else models[role] for role in ("qg", "qa", "nli") for i in (0, 1)]
    return [*flags, "--device", "cpu", "--max-question-length", "8"]


def mean(values):
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept)


def read_scores(path: Path) -> tuple[list[float], list[float]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    num = lambda v: float(v) if v not in ("", None) else math.nan  # noqa: E731
    return [num(r["q2"]) for r in rows], [num(r["q2_no_nli"]) for r in rows]


def score(tmp_path: Path, source: Path, models, *extra: str) -> tuple[list[float], list[float]]:
    out = tmp_path / f"{source.stem}_scored.csv"
    argv = ["score", str(source), "-o", str(out), "--no-cache", "--no-progress", *extra, *tiny_flags(models)]
    assert main(argv) == 0
    return read_scores(out)


def read_files(folder: Path) -> dict[str, dict]:
    """Each file checked against the Hub's format and read by huggingface_hub; name -> its one entry."""
    files = {}
    for p in sorted(folder.iterdir()):
        text = p.read_text(encoding="utf-8")
        (entry,) = er.check_file(p.name, text)
        assert parse_eval_result_entries(yaml.safe_load(text))
        files[p.name] = entry
    return files


def test_the_bundled_sample_as_eval_results(tmp_path, tiny_models):
    summary = tmp_path / "summary.json"
    q2, f1 = score(tmp_path, SAMPLE, tiny_models, "--summary", str(summary))
    assert len(set(q2)) > 1  # the tiny models' scores differ by row
    results = json.loads(summary.read_text(encoding="utf-8"))
    repo = tmp_path / "repo"
    argv = [
        "publish",
        "--results",
        str(summary),
        "--dataset-id",
        "me/wow-sample",
        "--eval-results",
        str(repo),
    ]
    assert main(argv) == 0
    got = read_files(repo / ".eval_results")
    by_variant = {name.split("_")[1]: entry for name, entry in got.items()}
    assert set(by_variant) == {"q2-nli", "q2-f1"}
    assert by_variant["q2-nli"]["value"] == pytest.approx(mean(q2), abs=1e-4)
    assert by_variant["q2-f1"]["value"] == pytest.approx(mean(f1), abs=1e-4)
    for entry in by_variant.values():
        assert entry["dataset"] == {"id": "me/wow-sample", "task_id": "default"}
        assert entry["date"] == er.file_date(summary)
        assert entry["notes"].endswith(f"signature: {results['signature']}")


def test_a_faithdial_meta_eval_run_as_eval_results_beside_faithdials_tables(tmp_path, tiny_models):
    out = tmp_path / "bench"
    argv = [
        "meta-eval",
        "--dataset",
        f"fd={FAITHDIAL}",
        "--no-bertscore",
        "--bootstrap",
        "20",
        "--no-progress",
    ]
    assert main([*argv, "--no-cache", "--out-dir", str(out), *tiny_flags(tiny_models)]) == 0
    report = json.loads((out / "benchmark.json").read_text(encoding="utf-8"))
    # the mean Q² of FaithDial's five responses, from `q2 score` on them alone
    responses = tmp_path / "responses.csv"
    rows = [json.loads(line) for line in FAITHDIAL.read_text(encoding="utf-8").splitlines()]
    with open(responses, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge"])
        w.writerows((r["response"], r["knowledge"]) for r in rows)
    q2, f1 = score(tmp_path, responses, tiny_models)
    published = report["published"]["fd"]
    assert len(published) == 52 and {p["table"] for p in published} == {"Table 5", "Table 8"}
    for p in published:
        want = mean(q2) if p["measure"] == "mean_q2_nli" else mean(f1)
        assert p["measured"] == pytest.approx(want, abs=1e-9), p
    md = (out / "benchmark.md").read_text(encoding="utf-8")
    assert "mean Q²-NLI, T5-CTRL, trained on WoW then FaithDial, tested on FaithDial" in md
    repo = tmp_path / "repo"
    argv = ["publish", "--meta-eval", str(out / "benchmark.json"), "--eval-results", str(repo)]
    assert main(argv) == 0
    got = read_files(repo / ".eval_results")
    metrics = report["results"]["fd"]["metrics"]
    want_values = {
        "q2-nli_roc-auc": metrics["q2"]["roc_auc"],
        "q2-f1_roc-auc": metrics["q2_no_nli"]["roc_auc"],
        "q2-nli_mean": mean(q2),
        "q2-f1_mean": mean(f1),
    }
    values = {}
    for name, entry in got.items():
        assert entry["dataset"] == {"id": "McGill-NLP/FaithDial", "task_id": "default"}
        assert entry["notes"].endswith(f"signature: {report['signature']}")
        assert name.startswith("mcgill-nlp-faithdial_fd.")  # the set's stem, unique to id, task and set
        key = "_".join(name.removesuffix(".yaml").split("_")[2:4])
        values[key] = entry["value"]
    assert values == pytest.approx(want_values, abs=1e-4)
