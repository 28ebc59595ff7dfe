"""A/B of T5 beam search with the cross-attention keys and values per beam (transformers' plain
path) and once per input (`q2_metric.models.speed.t5_shared_cross`), interleaved.

    python benchmarks/experiments/ab_shared_cross.py --reps 3

A random T5-base (the paper's QG shape, vocabulary 32,128) generates for `--batch` prompts of ~60
tokens with the paper's beam search (5 beams, 5 returned, no_repeat_ngram_size=3) for exactly
`--steps` steps. For each path, alternating the order, it prints the seconds, the model FLOPs
(`FlopMeter`) and whether the ids and sequence scores are bit for bit those of the plain path.
"""

from __future__ import annotations

import contextlib
import time

import torch
from common import interleaved, paper_beam_search, parser, random_t5_base

from q2_metric.models.speed.flops import FlopMeter, matmul_peak
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=15)
    args = ap.parse_args()
    model = random_t5_base(vocab_size=32128)
    shared = attach_shared_cross_attention(model)
    meter = FlopMeter.attach(model)
    ids = torch.randint(2, 32128, (args.batch, 60))
    kwargs = paper_beam_search(args.steps, output_scores=True, return_dict_in_generate=True)
    paths = {"per beam": lambda: contextlib.nullcontext(), "shared": lambda: shared.sharing(5)}
    with torch.inference_mode():
        model.generate(input_ids=ids[:2], **kwargs)  # warm-up
        plain = None
        for rep in range(args.reps):
            order = interleaved(rep, list(paths))
            peak = matmul_peak(torch.float32, n=2048, seconds=1.0)
            for name in order:
                f0, t0 = meter.flops, time.perf_counter()
                with paths[name]():
                    out = model.generate(input_ids=ids, **kwargs)
                secs, flops = time.perf_counter() - t0, meter.flops - f0
                if name == "per beam" and plain is None:
                    plain = out
                same = plain is None or (
                    torch.equal(out.sequences, plain.sequences)
                    and torch.equal(out.sequences_scores, plain.sequences_scores)
                )
                print(
                    f"repetition {rep}, {name:>8}: {secs:.2f} s, {flops / 1e9:.1f} GFLOP, "
                    f"{flops / secs / 1e9:.1f} GFLOP/s ({flops / secs / peak:.1%} of the torch.mm peak "
                    f"{peak / 1e9:.1f}), same ids and scores as per beam: {same}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
