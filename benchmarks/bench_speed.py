"""Speed benchmark: the batched engine vs a one-example-at-a-time loop over the same components.

    python benchmarks/bench_speed.py                 # 600 annotated responses, paper models or
                                                     # same-architecture random ones
    python benchmarks/bench_speed.py --n 8 --size tiny   # CI-sized

The one-at-a-time loop is the released code's way of working: every QG, QA and NLI call gets one
example. Both runs use the same components, so their scores must agree; the script checks that.
"""

from __future__ import annotations

import argparse
import csv
import math
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

from q2_metric import ModelNotAvailable, Q2Config, Q2Scorer
from q2_metric.random_models import build_random_models

ROOT = Path(__file__).resolve().parents[1]
ANNOTATED = ROOT.parent / "shared" / "data" / "q2_wow"
SAMPLE = ROOT / "q2_metric" / "data" / "wow_sample.csv"


def load_pairs(n: int) -> list[tuple[str, str]]:
    files = sorted(ANNOTATED.glob("*_consistent.csv")) + sorted(ANNOTATED.glob("*_inconsistent.csv"))
    files = files or [SAMPLE]
    pairs = []
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            pairs += [(r["response"], r["knowledge"]) for r in csv.DictReader(f)]
    return [pairs[i % len(pairs)] for i in range(n)]


class OneAtATime:
    """Wraps a component so every call is split into single-example calls."""

    def __init__(self, component, method: str) -> None:
        self.component, self.method = component, method

    def __getattr__(self, name):
        if name != self.method:
            return getattr(self.component, name)
        fn = getattr(self.component, name)
        return lambda *lists: [fn(*[[x] for x in items])[0] for items in zip(*lists)]


def peak_memory_mb(device: torch.device) -> str:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if device.type == "cuda":
        return f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MB GPU, {rss:.0f} MB RSS"
    return f"{rss:.0f} MB RSS"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--size", choices=("paper", "tiny"), default="paper",
                    help="shape of the random models when the paper's weights are unavailable")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-question-length", type=int, default=24,
                    help="random weights never emit EOS: cap questions near a real question's length")
    ap.add_argument("--sequential-n", type=int, default=None,
                    help="responses for the one-at-a-time loop (default: same N)")
    args = ap.parse_args()

    pairs = load_pairs(args.n)
    responses, knowledge = [p[0] for p in pairs], [p[1] for p in pairs]
    base = dict(device=args.device, qg_batch_size=args.batch_size, qa_batch_size=args.batch_size,
                nli_batch_size=args.batch_size, max_question_length=args.max_question_length)
    try:
        scorer = Q2Scorer(Q2Config(**base)).load()
        which = "the paper's pretrained models"
    except ModelNotAvailable:
        tmp = tempfile.mkdtemp(prefix="q2-bench-")
        paths = build_random_models(tmp, responses + knowledge, size=args.size, vocab_size=8000)
        scorer = Q2Scorer(Q2Config(qg_model=paths["qg"], qa_model=paths["qa"], nli_model=paths["nli"],
                                   **base)).load()
        which = (f"random-weight models of the {args.size} shapes "
                 + ("(T5-base, ALBERT-xlarge, RoBERTa-large)" if args.size == "paper" else "(tiny)")
                 + " with a locally trained tokenizer")
    device = scorer.qa.device
    print(f"Models: {which}")
    print(f"Machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
          f"device {device}" + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else ""))

    t0 = time.perf_counter()
    batched = scorer.score(responses, knowledge)
    t_batched = time.perf_counter() - t0

    n_seq = args.sequential_n or args.n
    seq = Q2Scorer(scorer.config, parser=scorer.parser, qg=OneAtATime(scorer.qg, "generate"),
                   qa=OneAtATime(scorer.qa, "answer"), nli=OneAtATime(scorer.nli, "classify"))
    t0 = time.perf_counter()
    sequential = seq.score(responses[:n_seq], knowledge[:n_seq])
    t_seq = time.perf_counter() - t0

    same = all(math.isclose(a, b, abs_tol=1e-6) or (math.isnan(a) and math.isnan(b))
               for a, b in zip(batched.scores, sequential.scores))
    rate_b, rate_s = args.n / t_batched, n_seq / t_seq
    print(f"batched:        {args.n} responses in {t_batched:.1f} s = {rate_b:.2f} responses/s")
    print(f"one-at-a-time:  {n_seq} responses in {t_seq:.1f} s = {rate_s:.2f} responses/s")
    print(f"speed-up: {rate_b / rate_s:.1f}x   peak memory: {peak_memory_mb(device)}   same scores: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
