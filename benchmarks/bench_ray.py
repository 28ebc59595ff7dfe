"""Ray benchmark: `q2 score` locally vs `q2 score --ray` with 1 and 2 workers, same input, end to end.

    python benchmarks/bench_ray.py --n 600 --size tiny
    python benchmarks/bench_ray.py --n 16 --size paper --chunk-size 8

Each run is a fresh process calling the function behind its command (`score_file` or
`score_file_ray` with a new local Ray on this machine's CPUs) with an empty cache, and is timed
from the call to the written output: model loading and Ray's start-up included, as a user sees it.
The Ray runs' per-row scores and system score are checked against the local run's. The paper's
weights are not reachable here, so the models are random-weight ones of the chosen shapes (their
scores mean nothing, their compute is real), with questions capped at 24 tokens as in bench_speed.
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_speed import load_pairs  # noqa: E402 (found through the sys.path line above)

MODES = {"local": None, "ray-1": 1, "ray-2": 2}


def run_one(mode: str, config_json: str, input_path: str, out_dir: str, chunk_size: int) -> dict:
    """One timed run in this process; returns its figures."""
    from q2_metric.config import Q2Config
    from q2_metric.corpus.files import score_file
    from q2_metric.scorer import Q2Scorer

    config = Q2Config(**json.loads(config_json))
    out = Path(out_dir)
    t0 = time.perf_counter()
    if mode == "local":
        report = score_file(
            Q2Scorer(config),
            input_path,
            out / f"{mode}.jsonl",
            cache_dir=out / f"cache-{mode}",
            chunk_size=chunk_size,
        )
    else:
        from q2_metric.corpus.ray import score_file_ray

        report = score_file_ray(
            Q2Scorer(config),
            input_path,
            out / f"{mode}.jsonl",
            cache_dir=out / f"cache-{mode}",
            chunk_size=chunk_size,
            workers=MODES[mode],
        )
    seconds = time.perf_counter() - t0
    return {"mode": mode, "seconds": seconds, "n": report.num_scored_now, "system": report.system.to_dict()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600, help="responses (the annotated set, repeated past 600)")
    ap.add_argument("--size", choices=("tiny", "paper"), default="tiny")
    ap.add_argument("--chunk-size", type=int, default=64, help="responses per engine call / Ray batch")
    ap.add_argument("--modes", default="local,ray-1,ray-2")
    ap.add_argument("--max-question-length", type=int, default=24)
    ap.add_argument("--one", nargs=4, metavar=("MODE", "CONFIG", "INPUT", "OUT_DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(*args.one, args.chunk_size)))
        return 0

    from q2_metric.models.tiny_builder import build_tiny_models

    pairs = load_pairs(args.n)
    if args.n > 600:  # repeats would be scored once (same pair key): make them distinct
        pairs = [(r if i < 600 else f"{r} ({i // 600})", k) for i, (r, k) in enumerate(pairs)]
    tmp = Path(tempfile.mkdtemp(prefix="q2-bench-ray-"))
    with open(tmp / "in.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge"])
        w.writerows(pairs)
    paths = build_tiny_models(tmp / "models", [t for p in pairs for t in p], size=args.size)
    config = json.dumps(
        dict(
            qg_model=paths["qg"],
            qa_model=paths["qa"],
            nli_model=paths["nli"],
            device="cpu",
            max_question_length=args.max_question_length,
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")

    results = {}
    for mode in args.modes.split(","):
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--chunk-size",
                str(args.chunk_size),
                "--one",
                mode,
                config,
                str(tmp / "in.csv"),
                str(tmp),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode or not line:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        results[mode] = json.loads(line[len("RESULT ") :])
        r = results[mode]
        print(
            f"{mode:>6}: {r['n']} responses in {r['seconds']:.1f} s = {r['n'] / r['seconds']:.2f} resp/s",
            flush=True,
        )

    def rows(mode):
        return [json.loads(line) for line in open(tmp / f"{mode}.jsonl", encoding="utf-8")]

    base = results.get("local")
    if base:
        for mode in results:
            if mode != "local":
                same = rows(mode) == rows("local") and json.dumps(results[mode]["system"]) == json.dumps(
                    base["system"]
                )
                over = results[mode]["seconds"] - base["seconds"]
                print(
                    f"{mode}: {over:+.1f} s against local ({results[mode]['seconds'] / base['seconds']:.2f}x); "
                    f"same per-row scores and system score: {same}"
                )
    print(f"load average after: {os.getloadavg()[0]:.1f}; inputs and outputs in {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
