"""A/B of `torch.compile` on the QA encoder: eager against inductor (`dynamic=True`), interleaved.

    python benchmarks/experiments/ab_compile.py --layers 2 --reps 3

An ALBERT-xlarge-width encoder (hidden 2048, feed-forward 8192, 16 heads; `--layers` of the 24, which
ALBERT runs with one shared set of weights, so every product has the paper model's shape) on the
engine's packed rows (several 64-token pairs per row, a 4D mask keeping each to itself, position
ids restarting per pair) with the engine's fused GELU. Prints the compile time, the largest logit
difference and whether every argmax agrees, then per repetition the time of the same three
batches eager and compiled, alternating which goes first, and the ratio compiled/eager.
"""

from __future__ import annotations

import time

import torch
from common import interleaved, parser
from transformers import AlbertConfig, AlbertForQuestionAnswering

from q2_metric.models.loading import fuse_tanh_gelu

SHAPES = [(2, 256), (3, 240), (1, 256)]  # (packed rows, row width) of three calls


def batch(rows: int, width: int, pair: int = 64) -> dict:
    ids = torch.randint(5, 8000, (rows, width))
    seg = torch.arange(width) // pair
    mask = torch.zeros(rows, 1, width, width).masked_fill_(
        seg[:, None] != seg[None, :], torch.finfo(torch.float32).min
    )
    return dict(
        input_ids=ids, position_ids=(torch.arange(width) % pair).expand(rows, width), attention_mask=mask
    )


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    cfg = AlbertConfig(
        vocab_size=8000,
        embedding_size=128,
        hidden_size=2048,
        num_hidden_layers=args.layers,
        num_attention_heads=16,
        intermediate_size=8192,
        max_position_embeddings=512,
    )
    model = AlbertForQuestionAnswering(cfg).eval()
    fuse_tanh_gelu(model)
    t0 = time.perf_counter()
    compiled = torch.compile(model, dynamic=True)
    with torch.inference_mode():
        b = batch(*SHAPES[0])
        ref, out = model(**b), compiled(**b)
        for shape in SHAPES[1:]:
            compiled(**batch(*shape))
    diff = float((ref.start_logits - out.start_logits).abs().max())
    same = bool(
        (ref.start_logits.argmax(-1) == out.start_logits.argmax(-1)).all()
        and (ref.end_logits.argmax(-1) == out.end_logits.argmax(-1)).all()
    )
    print(
        f"compile and first calls {time.perf_counter() - t0:.1f} s; largest logit difference {diff:.2e}; "
        f"argmax equal: {same}",
        flush=True,
    )
    times: dict[str, list[float]] = {"eager": [], "compiled": []}
    with torch.inference_mode():
        for rep in range(args.reps):
            for name, fn in interleaved(rep, [("eager", model), ("compiled", compiled)]):
                total = 0.0
                for shape in SHAPES:
                    b = batch(*shape)
                    t0 = time.perf_counter()
                    fn(**b)
                    total += time.perf_counter() - t0
                times[name].append(total)
    for rep, (e, c) in enumerate(zip(times["eager"], times["compiled"])):
        print(f"repetition {rep}: eager {e:.2f} s, compiled {c:.2f} s, compiled/eager {c / e:.3f}")


if __name__ == "__main__":
    main()
