"""A/B on T5-base beam search (the QG stage): one generate of all prompts on 2 intra-op threads
against two concurrent generates of half the prompts each (two Python threads, 1 intra-op thread).

    python benchmarks/experiments/ab_streams.py --batch 16 --reps 2

A random T5-base (the paper's QG shape, vocabulary 32,128) generates for `--batch` prompts of 45
tokens with the paper's beam search (5 beams, 5 returned, no_repeat_ngram_size=3) for exactly
`--steps` steps. It prints seconds, GFLOP/s (`FlopMeter`), the fraction of the 2-thread `torch.mm`
peak measured just before, and whether both ways generated the same ids.
"""

from __future__ import annotations

import threading
import time

import torch
from common import paper_beam_search, parser, random_t5_base

from q2_metric.models.speed.flops import FlopMeter, matmul_peak


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=14)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    model = random_t5_base(vocab_size=32128)
    meter = FlopMeter.attach(model)
    ids = torch.randint(2, 8000, (args.batch, 45))
    kwargs = paper_beam_search(args.steps)

    def generate(x: torch.Tensor, out: dict, key: int) -> None:
        with torch.inference_mode():
            out[key] = model.generate(input_ids=x, **kwargs)

    generate(ids[:2], {}, 0)  # warm-up
    half = args.batch // 2
    for rep in range(args.reps):
        torch.set_num_threads(2)
        peak = matmul_peak(torch.float32, n=2048, seconds=1.0)
        one: dict = {}
        f0, t0 = meter.flops, time.perf_counter()
        generate(ids, one, 0)
        secs, flops = time.perf_counter() - t0, meter.flops - f0
        print(
            f"repetition {rep}, 2 threads, one generate: {secs:.2f} s, {flops / secs / 1e9:.1f} GFLOP/s, "
            f"{flops / secs / peak:.1%} of {peak / 1e9:.1f}",
            flush=True,
        )
        torch.set_num_threads(1)
        two: dict = {}
        workers = [
            threading.Thread(target=generate, args=(ids[i * half : (i + 1) * half], two, i)) for i in range(2)
        ]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        secs = time.perf_counter() - t0
        same = torch.equal(torch.cat([two[0], two[1]]), one[0])
        print(
            f"repetition {rep}, 1 thread x 2 generates: {secs:.2f} s, {flops / secs / 1e9:.1f} GFLOP/s, "
            f"{flops / secs / peak:.1%}; same ids: {same}",
            flush=True,
        )
    torch.set_num_threads(2)


if __name__ == "__main__":
    main()
