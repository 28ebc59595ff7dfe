"""Replies per second through each evaluation harness against `q2 score` on the same pairs.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_harness.py [--n 40] [--max-batch 64]

The pairs are the bundled sample's (response, knowledge) rows (repeated to --n), on the tiny random
Q² models (`Q2_TINY=1`: tiny shapes, meaningless scores). Each harness is handed the same replies:
lm-eval through a replay model (`q2_dialogue` on a file of the pairs, the model answering each
prompt with its reply), Inspect AI through `mockllm` with the replies as its outputs, ragas through
an `EvaluationDataset`. For each: the wall time of the whole harness run, the time inside the Q²
engine, engine calls and the replies/s over each; `q2 score` is timed as a command (process start
and model load included) and in process (a warm engine, one call). Each route runs --repeat times
(a fresh engine each time but the first load is not repeated in process) and the fastest run is
shown: on a shared machine the spread is wide. Prints one line per route.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pairs(n: int) -> list[tuple[str, str]]:
    with open(ROOT / "q2_metric" / "data" / "wow_sample.csv", newline="", encoding="utf-8") as f:
        rows = [(r["response"], r["knowledge"]) for r in csv.DictReader(f)]
    return [rows[i % len(rows)] for i in range(n)]


class Timed:
    """Time spent in the runtime's `Engine.score_checked` (all of this process)."""

    def __init__(self) -> None:
        from q2_metric.runtime.engine import Engine

        self.seconds, self.calls = 0.0, 0
        real = Engine.score_checked

        def timed(engine, checked, max_batch=None, progress=None):
            start = time.perf_counter()
            try:
                return real(engine, checked, max_batch, progress)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        Engine.score_checked = timed  # type: ignore[method-assign]

    def reset(self) -> None:
        self.seconds, self.calls = 0.0, 0


def line(route: str, n: int, wall: float, engine: float | None = None, calls: int | None = None) -> str:
    """One printed result (the fastest of the repeats)."""
    out = f"{route:<28} {n} replies  wall {wall:7.2f}s = {n / wall:7.1f} replies/s"
    if engine is not None:
        out += f"  | Q² engine {engine:6.2f}s = {n / engine:7.1f} replies/s in {calls} call(s)"
    return out


def bench_cli(p: list[tuple[str, str]], tmp: Path) -> tuple:
    src = tmp / "pairs.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for r, k in p:
            f.write(json.dumps({"response": r, "knowledge": k}) + "\n")
    start = time.perf_counter()
    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "q2"),
            "score",
            str(src),
            "-o",
            str(tmp / "out.jsonl"),
            "--tiny",
            "--quiet",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    assert res.returncode == 0, res.stderr[-2000:]
    return wall, None, None


_SCORER = []


def bench_warm(p: list[tuple[str, str]]) -> tuple:
    import q2_metric
    from q2_metric.runtime.cache import runtime_config

    if not _SCORER:
        config, _ = runtime_config({})
        _SCORER.append(q2_metric.Q2Scorer(config))
        _SCORER[0].score([p[0][0]], [p[0][1]])  # load the models
    start = time.perf_counter()
    _SCORER[0].score([r for r, _ in p], [k for _, k in p])
    return time.perf_counter() - start, None, None


_REPLAYS: list = []


def bench_lm_eval(p: list[tuple[str, str]], tmp: Path, timed: Timed, max_batch: int) -> tuple:
    import lm_eval
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model
    from lm_eval.tasks import TaskManager

    from q2_metric.harness import lm_eval_include_path

    path = tmp / "dialogues.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["knowledge", "history"])
        for i, (_, k) in enumerate(p):
            w.writerow([k, f"Tell me more. (#{i})"])
    replies = {f"Tell me more. (#{i})": r for i, (r, _) in enumerate(p)}

    @register_model(f"q2_replay_{len(_REPLAYS)}")
    class Replay(LM):
        def generate_until(self, requests, disable_tqdm: bool = False):
            out = []
            for req in requests:
                prompt = req.args[0]
                key = next(k for k in replies if f"User: {k}\n" in prompt)
                out.append(replies[key])
            return out

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    timed.reset()
    start = time.perf_counter()
    _REPLAYS.append(Replay)
    out = lm_eval.simple_evaluate(
        model=f"q2_replay_{len(_REPLAYS) - 1}",
        tasks=["q2_dialogue"],
        task_manager=TaskManager(
            include_path=lm_eval_include_path(),
            metadata={"path": str(path), "q2_options": {"max_batch": max_batch}},
        ),
    )
    wall = time.perf_counter() - start
    assert out["results"]["q2_dialogue"]["signature,none"].startswith("q2:")
    return wall, timed.seconds, timed.calls


def bench_inspect(p: list[tuple[str, str]], tmp: Path, timed: Timed, max_batch: int) -> tuple:
    import inspect_ai
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate

    from q2_metric.harness.inspect_task import q2

    outputs = []
    for r, _ in p:
        o = ModelOutput.from_content("mockllm/model", r)
        o.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outputs.append(o)
    samples = [
        Sample(id=i, input=f"turn {i}", target=k, metadata={"knowledge": k}) for i, (_, k) in enumerate(p)
    ]
    task = Task(dataset=samples, solver=generate(), scorer=q2(max_batch=max_batch))
    timed.reset()
    start = time.perf_counter()
    (log,) = inspect_ai.eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        display="none",
        log_dir=str(tmp / f"inspect-logs-{time.time_ns()}"),
        max_samples=len(p),
        max_connections=len(p),
    )
    wall = time.perf_counter() - start
    assert log.status == "success", log.error
    return wall, timed.seconds, timed.calls


def bench_ragas(p: list[tuple[str, str]], tmp: Path, timed: Timed, max_batch: int) -> tuple:
    from ragas import EvaluationDataset

    from q2_metric.harness.ragas_metric import Q2Faithfulness, evaluate

    ds = EvaluationDataset.from_list(
        [{"user_input": "hi", "response": r, "retrieved_contexts": [k]} for r, k in p]
    )
    timed.reset()
    start = time.perf_counter()
    result = evaluate(ds, Q2Faithfulness(options={"max_batch": max_batch}))
    wall = time.perf_counter() - start
    assert result.signature is not None
    return wall, timed.seconds, timed.calls


def best(runs: list[tuple]) -> tuple:
    return min(runs, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (and OMP_NUM_THREADS of the command); 1 is the steadiest on a shared machine",
    )
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["Q2_TINY"] = "1"
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    p = pairs(args.n)
    from q2_metric.runtime import cache

    timed = Timed()
    routes = [
        ("q2 score (command)", lambda tmp: bench_cli(p, tmp)),
        ("Q2Scorer.score (warm)", lambda tmp: bench_warm(p)),
        ("lm-eval (q2_dialogue)", lambda tmp: bench_lm_eval(p, tmp, timed, args.max_batch)),
        ("Inspect AI (q2 scorer)", lambda tmp: bench_inspect(p, tmp, timed, args.max_batch)),
        ("ragas (Q2Faithfulness)", lambda tmp: bench_ragas(p, tmp, timed, args.max_batch)),
    ]
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for route, run in routes:
            runs = []
            for _ in range(args.repeat):
                cache.reset()  # a fresh `Engine` (and model load) per harness run, as in a new process
                runs.append(run(Path(tmp)))
            lines.append(line(route, len(p), *best(runs)))
    print(
        f"tiny shapes, {args.n} (reply, knowledge) pairs of the bundled sample, max_batch {args.max_batch}, "
        f"{args.threads} thread(s), fastest of {args.repeat}:"
    )
    for text in lines:
        print(text)


if __name__ == "__main__":
    main()
