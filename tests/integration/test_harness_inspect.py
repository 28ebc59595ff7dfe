"""Inspect AI end to end, offline: `inspect eval q2_metric/q2_wow` with a local Hugging Face model
(a tiny random GPT-2 built here: `--model hf/local -M model_path=DIR`), `inspect score --scorer
q2_metric/q2` from the command line, and the scorer in Python on fixed replies (`mockllm`, whose
outputs carry their usage: without it mockllm counts tokens with tiktoken's o200k_base, a download).
Expected values come from `q2 score --tiny` (the command line) on the same (reply, knowledge) pairs."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from support.harness import BIN, cli_score, close, count_engine, env, set_in_process

pytest.importorskip("inspect_ai")

N = 6


def _check_against_cli(samples, tmp_path: Path, environ: dict[str, str]) -> None:
    pairs = [(s.scores["q2"].answer, s.metadata["knowledge"]) for s in samples]
    rows, summary = cli_score(pairs, tmp_path, environ)
    for s, row in zip(samples, rows):
        score = s.scores["q2"]
        value = None if isinstance(score.value, float) and math.isnan(score.value) else score.value
        assert close(value, row["q2"]), (value, row)
        assert close(score.metadata["q2_no_nli"], row["q2_no_nli"])
        assert score.metadata["q2_fallback"] == row["fallback"]
        assert len(score.metadata["q2_questions"]) == row["num_questions"]
        assert score.explanation and score.explanation.endswith(".") and "\n" not in score.explanation
        assert score.metadata["q2_signature"] == summary["signature"]  # the full signature
        assert score.explanation == row["reason"]  # the same sentence as q2 score's reason column
        assert (
            score.metadata["q2_signature"].startswith("q2:")
            and "tiny-random" in score.metadata["q2_signature"]
        )
        assert score.metadata["q2_status"] == ("scored" if value is not None else "empty")
        # its record's verdict at 0.5 (q2 score's decision; unverified when not scored) and reason
        decision = "unverified" if value is None else "consistent" if value > 0.5 else "inconsistent"
        assert score.metadata["q2_verdict"] == decision and score.metadata["q2_reason"] == row["reason"]


@pytest.mark.slow
def test_inspect_eval_and_score_commands(harness_tiny, tmp_path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    environ = env(harness_tiny["q2"], tmp_path)
    logs = tmp_path / "logs"
    res = subprocess.run(
        [
            str(BIN / "inspect"),
            "eval",
            "q2_metric/q2_wow",
            "--model",
            "hf/local",
            "-M",
            f"model_path={harness_tiny['lm']}",
            "-M",
            "device=cpu",
            "-T",
            f"limit={N}",
            "-T",
            "max_tokens=16",
            "--log-dir",
            str(logs),
            "--display",
            "plain",
        ],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    # the tiny models' note: said once, and short (it took 13 lines under `inspect eval`)
    out = res.stdout + res.stderr
    assert out.count("These scores are meaningless") == 1, out[-5000:]
    (info,) = list_eval_logs(str(logs))
    log = read_eval_log(info.name)
    assert log.status == "success" and len(log.samples) == N
    assert all("q2" in s.scores for s in log.samples), "every sample scored with q2"
    _check_against_cli(log.samples, tmp_path, environ)
    (evalscore,) = log.results.scores
    assert set(evalscore.metrics) == {"mean", "stderr"}
    statuses = [s.scores["q2"].metadata["q2_status"] for s in log.samples]
    assert evalscore.metadata["q2_counts"] == {k: statuses.count(k) for k in ("scored", "empty", "bad")}
    assert evalscore.metadata["q2_signature"] == log.samples[0].scores["q2"].metadata["q2_signature"]
    # `inspect score --scorer q2_metric/q2`: any log re-scored with Q² from the command line
    rescored = tmp_path / "rescored.eval"
    res = subprocess.run(
        [
            str(BIN / "inspect"),
            "score",
            info.name,
            "--scorer",
            "q2_metric/q2",
            "-S",
            "max_batch=4",
            "--action",
            "overwrite",
            "--output-file",
            str(rescored),
            "--display",
            "plain",
        ],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    again = read_eval_log(str(rescored))
    assert [s.scores["q2"].value for s in again.samples] == [
        s.scores["q2"].value for s in log.samples
    ] or all(
        math.isnan(a) and math.isnan(b)
        for a, b in zip(
            [s.scores["q2"].value for s in again.samples], [s.scores["q2"].value for s in log.samples]
        )
    )


REPLIES = [
    "Bob Ross hosted The Joy of Painting on PBS.",
    "",
    "it aired in the us , canada and latin america",
    "i love gardening as well . it is considered to be relaxing .",
    "Paris is the capital of France.",
    "he died in orlando of lymphoma",
    "yes they are very well behaved .",
]


@pytest.mark.slow
def test_inspect_scorer_batches_concurrent_samples(harness_tiny, tmp_path, monkeypatch):
    """In Python: concurrent samples go through ceil(n / max_batch) engine calls (one component call
    per stage each) and one model load; every score equals `q2 score`'s; the empty reply is left
    out of the mean."""
    import inspect_ai
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    from q2_metric.harness.inspect_task import q2, wow_samples

    set_in_process(monkeypatch, env(harness_tiny["q2"], tmp_path))
    calls, loads = count_engine(monkeypatch)
    samples = wow_samples(limit=len(REPLIES))
    outputs = []
    for reply in REPLIES:
        out = ModelOutput.from_content(model="mockllm/model", content=reply)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # no tiktoken needed
        outputs.append(out)
    model = get_model("mockllm/model", custom_outputs=outputs)
    max_batch = 3
    task = Task(
        dataset=MemoryDataset(samples), solver=generate(), scorer=q2(max_batch=max_batch, max_wait=2.0)
    )
    (log,) = inspect_ai.eval(
        task, model=model, log_dir=str(tmp_path / "logs"), display="none", max_samples=len(REPLIES)
    )
    assert log.status == "success", log.error
    got = sorted(log.samples, key=lambda s: s.id)
    assert [s.scores["q2"].answer for s in got] == REPLIES
    _check_against_cli(got, tmp_path, dict(env(harness_tiny["q2"], tmp_path)))
    assert got[1].scores["q2"].reason == "no_response"
    assert len(loads) == 1
    expected = math.ceil(len(REPLIES) / max_batch)
    assert len(calls) <= expected, calls
    for name in {n for c in calls for n in c}:
        assert sum(c.count(name) for c in calls) <= expected
    scored = [s.scores["q2"].value for s in got if not math.isnan(s.scores["q2"].value)]
    mean = log.results.scores[0].metrics["mean"].value
    assert math.isclose(mean, sum(scored) / len(scored))


@pytest.mark.slow
def test_inspect_eval_checks_the_q2_models_before_generating(harness_tiny, tmp_path):
    """A missing Q² model given with `-T qg_model=DIR`: one sentence naming `-T qg_model`, a
    nonzero exit, and nothing generated (no sample in any log)."""
    environ = env(harness_tiny["q2"], tmp_path)
    missing = tmp_path / "no-qg-model"
    logs = tmp_path / "logs"
    res = subprocess.run(
        [
            str(BIN / "inspect"),
            "eval",
            "q2_metric/q2_wow",
            "--model",
            "hf/local",
            "-M",
            f"model_path={harness_tiny['lm']}",
            "-M",
            "device=cpu",
            "-T",
            "limit=2",
            "-T",
            f"qg_model={missing}",
            "--log-dir",
            str(logs),
            "--display",
            "plain",
        ],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert str(missing) in out and "-T qg_model" in out and "Traceback" not in out, out[-3000:]
    assert "--qg-model" not in out and "Task interrupted" not in out
    assert not list(logs.glob("*.eval")) or all("samples" not in p.name for p in logs.iterdir())
    # an option error: one sentence too
    res = subprocess.run(
        [
            str(BIN / "inspect"),
            "eval",
            "q2_metric/q2_wow",
            "--model",
            "hf/local",
            "-M",
            f"model_path={harness_tiny['lm']}",
            "-T",
            "qg_batch_size=0",
            "--log-dir",
            str(logs),
            "--display",
            "plain",
        ],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "Invalid Q² option -T qg_batch_size=0" in out and "Traceback" not in out, (
        out[-3000:]
    )
