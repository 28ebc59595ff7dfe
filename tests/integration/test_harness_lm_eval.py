"""lm-evaluation-harness end to end, offline: a tiny random GPT-2 built here writes the replies
(`--model hf`, `--device cpu`: outside `--model_args`, and `accelerate` installed), the tiny Q²
models score them. Expected figures come from `q2 score --tiny` (the command line) on the same
(reply, knowledge) pairs, read back from lm-eval's own sample logs."""

from __future__ import annotations

import csv
import glob
import json
import math
import subprocess
from pathlib import Path

import pytest
from support.harness import BIN, ROOT, cli_score, close, count_engine, env, set_in_process

from q2_metric.signature import Signature

pytest.importorskip("lm_eval")
pytest.importorskip("accelerate")  # lm-eval's `hf` model needs it

TASKS = ROOT / "q2_metric" / "harness" / "lm_eval_tasks"
N = 6


def _run_lm_eval(args: list[str], environ: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [str(BIN / "lm_eval"), *args], env=environ, cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    return res


def _samples(out: Path, task: str) -> list[dict]:
    files = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    assert len(files) == 1, files
    with open(files[0], encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _results(out: Path) -> dict:
    files = glob.glob(str(out / "**" / "results_*.json"), recursive=True)
    assert len(files) == 1, files
    return json.loads(Path(files[0]).read_text(encoding="utf-8"))


def _row(table: str, metric: str) -> str:
    """The Value cell of `metric`'s row in lm-eval's printed table."""
    for line in table.replace("\\|", "\x00").splitlines():
        cells = [c.strip().replace("\x00", "|") for c in line.split("|")]
        if len(cells) > 7 and cells[5] == metric:
            return cells[7]
    raise AssertionError(f"no row {metric!r} in:\n{table}")


def _figure(value) -> float | None:
    return None if value in (None, "n/a") else float(value)


@pytest.mark.slow
def test_lm_eval_q2_wow_prints_q2s_figures_equal_to_q2_score(harness_tiny, tmp_path):
    environ = env(harness_tiny["q2"], tmp_path)
    out = tmp_path / "out"
    res = _run_lm_eval(
        [
            "--model",
            "hf",
            "--model_args",
            f"pretrained={harness_tiny['lm']}",
            "--device",
            "cpu",
            "--tasks",
            "q2_wow",
            "--include_path",
            str(TASKS),
            "--limit",
            str(N),
            "--batch_size",
            "4",
            "--gen_kwargs",
            "max_gen_toks=16",
            "--output_path",
            str(out),
            "--log_samples",
        ],
        environ,
        tmp_path,
    )
    table = res.stdout
    for metric in ("q2", "q2_no_nli", "coverage", "scored", "empty", "bad", "signature"):
        _row(table, metric)
    samples = _samples(out, "q2_wow")
    assert len(samples) == N
    pairs = [(s["resps"][0][0].strip(), s["doc"]["knowledge"]) for s in samples]
    rows, summary = cli_score(pairs, tmp_path, environ)
    # each reply's Q² and reason in the --log_samples file, as `q2 score` gives them row by row
    for s, row in zip(samples, rows):
        got = s["q2"]
        assert close(got["q2"], row["q2"]) and close(got["q2_no_nli"], row["q2_no_nli"]), (got, row)
        assert got["reason"] == row["reason"] and got["status"] in ("scored", "empty")
    assert "Q² signature: " + summary["signature"] in res.stderr  # the full signature, on stderr
    assert "1/6 candidates" in res.stderr  # Q² progress while lm-eval aggregates
    assert res.stderr.count("These scores are meaningless") == 1  # the tiny models' note, said once
    assert "not a git repository" not in res.stderr  # lm-eval's git lookup, run from a plain folder
    results = _results(out)["results"]["q2_wow"]
    for metric in ("q2", "q2_no_nli", "coverage"):
        assert close(_figure(results[f"{metric},none"]), summary[metric]), (metric, results, summary)
        shown = _row(table, metric)
        want = summary[metric]
        assert (shown == "n/a") if want is None else math.isclose(float(shown), want, abs_tol=1e-4), (
            metric,
            shown,
        )
    # the results (and lm-eval's table) hold the signature's short form, whose hash names the full
    # one; every sample record holds the full signature
    assert results["signature,none"] == Signature.parse(summary["signature"]).short()
    assert {s["q2"]["signature"] for s in samples} == {summary["signature"]}
    assert results["scored,none"] == summary["num_scored"]
    assert results["scored,none"] + results["empty,none"] == N and results["bad,none"] == 0


@pytest.mark.slow
def test_lm_eval_batches_the_engine_and_loads_models_once(harness_tiny, tmp_path, monkeypatch):
    """In one process: both tasks (q2_wow and q2_dialogue on a user file) score each run in
    ceil(n / max_batch) engine calls (one component call per stage each), with one model load."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    from q2_metric.runtime import cache

    set_in_process(monkeypatch, env(harness_tiny["q2"], tmp_path))
    calls, loads = count_engine(monkeypatch)
    dialogues = tmp_path / "dialogues.csv"
    with open(dialogues, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["knowledge", "history"])
        w.writerow(
            ["Bob Ross hosted The Joy of Painting on PBS.", "Hi! ||| Hello! ||| Do you know Bob Ross?"]
        )
        w.writerow(["Gardening is a relaxing activity.", "I like gardening."])
        w.writerow(["Paris is the capital of France.", "Where is Paris?"])
    n, max_batch = 7, 3
    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={harness_tiny['lm']}",
        device="cpu",
        tasks=["q2_wow", "q2_dialogue"],
        task_manager=TaskManager(
            include_path=str(TASKS), metadata={"path": str(dialogues), "q2_options": {"max_batch": max_batch}}
        ),
        limit=n,
        batch_size=4,
        gen_kwargs="max_gen_toks=12",
    )
    assert set(out["results"]) == {"q2_wow", "q2_dialogue"}
    assert len(loads) == 1, "one Q² scorer (one model load) per process"
    expected_calls = math.ceil(n / max_batch) + math.ceil(3 / max_batch)
    assert len(calls) <= expected_calls, calls
    stages = {name for c in calls for name in c}
    for name in stages:
        assert sum(c.count(name) for c in calls) <= expected_calls, name
    (engine,) = cache.engines()
    assert engine.replies == n + 3
    for task in ("q2_wow", "q2_dialogue"):
        assert out["results"][task]["signature,none"].startswith("q2:")


@pytest.mark.slow
def test_lm_eval_route_to_the_evaluate_module(harness_tiny, tmp_path):
    """lm-eval's own route (`hf_evaluate: true`) to this package's `evaluate` module, after
    `q2-metric register`: the same figures as the batched task on the same replies."""
    environ = env(harness_tiny["q2"], tmp_path)
    reg = subprocess.run(
        [str(BIN / "q2-metric"), "register"], env=environ, capture_output=True, text=True, timeout=300
    )
    assert reg.returncode == 0, reg.stderr[-3000:]
    out = tmp_path / "out"
    _run_lm_eval(
        [
            "--model",
            "hf",
            "--model_args",
            f"pretrained={harness_tiny['lm']}",
            "--device",
            "cpu",
            "--tasks",
            "q2_wow_evaluate",
            "--include_path",
            str(TASKS),
            "--limit",
            "4",
            "--batch_size",
            "4",
            "--gen_kwargs",
            "max_gen_toks=16",
            "--output_path",
            str(out),
            "--log_samples",
        ],
        environ,
        tmp_path,
    )
    samples = _samples(out, "q2_wow_evaluate")
    pairs = [(s["resps"][0][0].strip(), s["doc"]["knowledge"]) for s in samples]
    _, summary = cli_score(pairs, tmp_path, environ)
    results = _results(out)["results"]["q2_wow_evaluate"]
    for metric in ("q2", "q2_no_nli", "coverage"):
        assert close(_figure(results[f"{metric},none"]), summary[metric]), (metric, results, summary)
    assert results["num_responses,none"] == 4
    assert results["signature,none"] == Signature.parse(summary["signature"]).short()


@pytest.mark.slow
def test_lm_eval_errors_are_one_sentence_before_generation(harness_tiny, tmp_path):
    """A bad Q² option, a missing Q² model and a file without the history column: each one
    sentence in lm-eval's words (`q2_options` in `--metadata`), a nonzero exit, no traceback."""
    environ = env(harness_tiny["q2"], tmp_path)
    missing = tmp_path / "no-qg-model"
    table = tmp_path / "d.csv"
    table.write_text("knowledge,turns\nParis is in France.,Where is Paris?\n", encoding="utf-8")
    cases = [
        ("q2_wow", {"q2_options": {"qg_batch_size": 0}}, 'Invalid Q² option q2_options["qg_batch_size"]=0'),
        ("q2_wow", {"q2_options": {"qg_model": str(missing)}}, 'q2_options["qg_model"]'),
        ("q2_dialogue", {"path": str(table)}, '"history_col" in --metadata'),
    ]
    for task, metadata, want in cases:
        res = subprocess.run(
            [
                str(BIN / "lm_eval"),
                "--model",
                "hf",
                "--model_args",
                f"pretrained={harness_tiny['lm']}",
                "--device",
                "cpu",
                "--tasks",
                task,
                "--include_path",
                str(TASKS),
                "--limit",
                "2",
                "--metadata",
                json.dumps(metadata),
            ],
            env=environ,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
        )
        err = res.stderr
        assert res.returncode != 0, err[-3000:]
        assert want in err and "Traceback" not in err and "--qg-model" not in err, err[-3000:]
        assert (
            "Error: " in err and len([line for line in err.splitlines() if line.startswith("Error: ")]) == 1
        )
