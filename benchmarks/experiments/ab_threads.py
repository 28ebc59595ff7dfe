"""A/B of torch's intra-op threads on T5-base beam search (the QG stage), interleaved.

    python benchmarks/experiments/ab_threads.py --threads 1 2 --reps 3

A random T5-base (the paper's QG shape, vocabulary 8,000) generates for `--batch` prompts of ~60
tokens with the paper's beam search (5 beams, 5 returned, no_repeat_ngram_size=3) for exactly
`--steps` steps. For each thread count, alternating the order, it prints the seconds, the model
FLOPs (`FlopMeter`), the `torch.mm` peak at that thread count measured just before, and the
fraction of it reached.
"""

from __future__ import annotations

import time

import torch
from common import interleaved, paper_beam_search, parser, random_t5_base

from q2_metric.models.speed.flops import FlopMeter, matmul_peak


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    model = random_t5_base(vocab_size=8000)
    meter = FlopMeter.attach(model)
    ids = torch.randint(2, 8000, (args.batch, 60))
    kwargs = paper_beam_search(args.steps)
    with torch.inference_mode():
        model.generate(input_ids=ids[:2], **kwargs)  # warm-up
        for rep in range(args.reps):
            for n in interleaved(rep, args.threads):
                torch.set_num_threads(n)
                peak = matmul_peak(torch.float32, n=2048, seconds=1.0)
                f0, s0, t0 = meter.flops, meter.seconds, time.perf_counter()
                model.generate(input_ids=ids, **kwargs)
                secs, flops = time.perf_counter() - t0, meter.flops - f0
                print(
                    f"repetition {rep}, {n} thread(s): {secs:.2f} s ({(meter.seconds - s0) / secs:.0%} in model), "
                    f"{flops / 1e9:.1f} GFLOP, {flops / secs / 1e9:.1f} GFLOP/s, peak {peak / 1e9:.1f} GFLOP/s, "
                    f"{flops / secs / peak:.1%} of it",
                    flush=True,
                )


if __name__ == "__main__":
    main()
