"""LightEval end to end, offline: its own runner (`lighteval accelerate`, and its Python `Pipeline`)
runs the `q2_wow` custom task, a tiny random GPT-2 built here writes the replies, the tiny Q² models
score them. Expected figures come from `q2 score --tiny` (the command line) on the same (reply,
knowledge) pairs, read back from LightEval's own details file."""

from __future__ import annotations

import glob
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.harness import BIN, cli_score, close, count_engine, env, set_in_process

pytest.importorskip("lighteval")

TASKS = "q2_metric.harness.lighteval_task"
N = 6


def _offline(monkeypatch) -> None:
    """Offline, LightEval 0.13 starts only with its tinyBenchmarks tasks left out (their file is
    downloaded when LightEval lists its tasks): as `python -m q2_metric.harness.lighteval_offline` does."""
    from q2_metric.harness.lighteval_offline import TINY_BENCHMARKS, leave_out_unfetched_tasks

    monkeypatch.delitem(sys.modules, TINY_BENCHMARKS, raising=False)  # restored (absent) after the test
    leave_out_unfetched_tasks()


def _model(harness_tiny, tmp_path: Path) -> str:
    """The tiny LM copied under the run's folder, named relatively: LightEval keeps its generation
    cache under `cache_dir/model_name`, which an absolute name would put inside the model folder."""
    shutil.copytree(harness_tiny["lm"], tmp_path / "tiny-lm")
    return f"model_name=tiny-lm,batch_size=4,cache_dir={tmp_path / 'cache'},generation_parameters={{max_new_tokens:16}}"


def _run(args: list[str], environ: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "python"), "-m", "q2_metric.harness.lighteval_offline", *args],
        env=environ,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _details(out: Path) -> list[dict]:
    import datasets

    files = glob.glob(str(out / "details" / "**" / "*.parquet"), recursive=True)
    assert len(files) == 1, files
    return list(datasets.load_dataset("parquet", data_files=files[0], split="train"))


def _results(out: Path) -> dict:
    files = glob.glob(str(out / "results" / "**" / "results_*.json"), recursive=True)
    assert len(files) == 1, files
    return json.loads(Path(files[0]).read_text(encoding="utf-8"))["results"]["q2_wow|0"]


def _nan(value) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


@pytest.mark.slow
def test_lighteval_accelerate_gives_q2_score_row_by_row(harness_tiny, tmp_path):
    environ = env(harness_tiny["q2"], tmp_path)
    out = tmp_path / "out"
    res = _run(
        [
            "accelerate",
            _model(harness_tiny, tmp_path),
            "q2_wow|0",
            "--custom-tasks",
            TASKS,
            "--max-samples",
            str(N),
            "--output-dir",
            str(out),
            "--save-details",
        ],
        environ,
        tmp_path,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    for metric in ("q2", "q2_no_nli", "coverage", "scored", "empty", "bad"):
        assert f"|{metric}" in res.stdout.replace(" ", ""), res.stdout
    details = _details(out)
    assert len(details) == N
    # the pairs LightEval recorded: the reply it kept for metrics, the knowledge of the row
    pairs = [
        (d["model_response"]["text_post_processed"][0], d["doc"]["specific"]["knowledge"]) for d in details
    ]
    rows, summary = cli_score(pairs, tmp_path, environ)
    for d, row in zip(details, rows):
        specific, metric = d["doc"]["specific"], d["metric"]
        assert close(_nan(metric["q2"]), row["q2"]) and close(_nan(metric["q2_no_nli"]), row["q2_no_nli"]), (
            metric,
            row,
        )
        assert specific["q2_reason"] == row["reason"] and specific["q2_status"] in ("scored", "empty")
        assert specific["q2_signature"] == summary["signature"]  # the FULL signature, per sample
        assert specific["q2_key"].startswith("row ")
    # the tiny models' scores differ by row: a swap of rows would show
    assert len({_nan(d["metric"]["q2"]) for d in details}) >= 2, [d["metric"] for d in details]
    assert "Q² signature: " + summary["signature"] in res.stderr
    assert res.stderr.count("These scores are meaningless") == 1  # the tiny models' note, said once
    results = _results(out)
    for metric in ("q2", "q2_no_nli", "coverage"):
        assert close(_nan(results[metric]), summary[metric]), (metric, results, summary)
    assert results["scored"] == summary["num_scored"] and results["scored"] + results["empty"] == N
    assert results["bad"] == 0


@pytest.mark.slow
def test_the_pipeline_scores_a_task_in_one_engine_call_with_one_model_load(
    harness_tiny, tmp_path, monkeypatch
):
    """LightEval's Python `Pipeline`, in process: the six figures of a task's run cost one engine
    call (and one model load); with `max_batch`, ceil(n / max_batch) calls."""
    _offline(monkeypatch)
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.models.transformers.transformers_model import TransformersModelConfig
    from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

    set_in_process(monkeypatch, env(harness_tiny["q2"], tmp_path))
    monkeypatch.chdir(tmp_path)
    shutil.copytree(harness_tiny["lm"], tmp_path / "tiny-lm")
    tasks = tmp_path / "my_tasks.py"
    tasks.write_text(
        "from q2_metric.harness.lighteval_task import wow_task\n"
        # replies of different lengths: the second task's items are not the first's (whose outcome
        # the engine would give again)
        "TASKS_TABLE = [wow_task(name='q2_all', generation_size=8),\n"
        "               wow_task(name='q2_by3', generation_size=6, max_batch=3)]\n",
        encoding="utf-8",
    )
    calls, loads = count_engine(monkeypatch)
    n = 7
    pipeline = Pipeline(
        tasks="q2_all|0,q2_by3|0",
        pipeline_parameters=PipelineParameters(
            launcher_type=ParallelismManager.ACCELERATE, custom_tasks_directory=str(tasks), max_samples=n
        ),
        evaluation_tracker=EvaluationTracker(output_dir=str(tmp_path / "out")),
        model_config=TransformersModelConfig(
            model_name="tiny-lm",
            batch_size=4,
            cache_dir=str(tmp_path / "cache"),
        ),
    )
    pipeline.evaluate()
    assert len(calls) == 1 + 3 and all(len(stages) == 6 for stages in calls), calls
    assert len(loads) == 1  # both tasks share the process's engine
    results = pipeline.get_results()["results"]
    for task in ("q2_all", "q2_by3"):  # (results name a task "NAME:0", details "NAME|0")
        assert results[f"{task}:0"]["scored"] + results[f"{task}:0"]["empty"] == n
        assert len(pipeline.get_details()[f"{task}|0"]) == n


@pytest.mark.slow
def test_a_bad_option_is_one_line_before_the_model_runs(harness_tiny, tmp_path):
    environ = env(harness_tiny["q2"], tmp_path)
    tasks = tmp_path / "bad_tasks.py"
    tasks.write_text(
        "from q2_metric.harness.lighteval_task import wow_task\nTASKS_TABLE = [wow_task(qg_batch_size=0)]\n",
        encoding="utf-8",
    )
    res = _run(
        ["accelerate", "model_name=no-such-model", "q2_wow|0", "--custom-tasks", str(tasks)],
        environ,
        tmp_path,
    )
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    want = "Error: Invalid Q² option qg_batch_size=0: use an integer >= 1 or None."
    assert last == want, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "─" not in res.stderr  # no (rich) traceback
