"""Which part of the fast question generator's step gives other numbers than the reference path's on
this machine: the exactness gate's whole-step check (`qg_fast.same_logits`) with each fast idea
switched off in turn, and the two kernels the fast path calls on other shapes than the reference
(the cross-attention's key/value projection on one row per input, the attention per beam slot).

    python benchmarks/experiments/probe_gate.py --device cuda --dtype float32
"""

from __future__ import annotations

import argparse
import sys

import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    ap.add_argument("--inputs", type=int, default=16)
    ap.add_argument("--beams", type=int, default=5)
    ap.add_argument("--keys", type=int, default=100, help="encoder tokens per input")
    ap.add_argument("--size", default="base", choices=("base", "small"))
    args = ap.parse_args()
    from transformers import T5Config, T5ForConditionalGeneration

    from q2_metric.models.speed.qg_fast import FastSettings, same_logits
    from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention

    dims = dict(d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_heads=12)
    if args.size == "small":
        dims = dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8)
    torch.manual_seed(0)
    config = T5Config(vocab_size=32128, decoder_start_token_id=0, **dims)
    dtype = getattr(torch, args.dtype)
    model = T5ForConditionalGeneration(config).to(args.device, dtype).eval()
    shared = attach_shared_cross_attention(model)
    assert shared is not None
    shape = [(args.inputs, args.keys)]
    print(
        f"{args.device} {args.dtype} T5-{args.size}, {args.inputs} inputs x {args.beams} beams, {args.keys} keys"
    )
    for name, settings in (
        ("fast path (default settings)", FastSettings()),
        ("  without grouped-query attention", FastSettings(grouped_query=False)),
        ("  without the in-place cache", FastSettings(in_place_cache=False)),
        ("  without either", FastSettings(grouped_query=False, in_place_cache=False)),
    ):
        ok = same_logits(model, shared, shape, args.beams, 20, settings, 3, "reference")
        print(f"{name:<40}{'the reference logits' if ok else 'OTHER logits'}")
    g = torch.Generator().manual_seed(1)
    rows = args.inputs * args.beams
    with torch.inference_mode():
        x = torch.randn((args.inputs, args.keys, dims["d_model"]), generator=g).to(args.device, dtype)
        k = model.decoder.block[0].layer[1].EncDecAttention.k
        per_input = k(x)
        per_row = k(x.repeat_interleave(args.beams, dim=0))[:: args.beams]
        print(f"{'key projection, one row per input':<40}{torch.equal(per_input, per_row)}")
        heads, size = dims["num_heads"], dims["d_kv"]
        q = torch.randn((rows, heads, 1, size), generator=g).to(args.device, dtype)
        kk, vv = (
            torch.randn((args.inputs, heads, args.keys, size), generator=g).to(args.device, dtype)
            for _ in "kv"
        )
        sdpa = torch.nn.functional.scaled_dot_product_attention
        full = sdpa(q, kk.repeat_interleave(args.beams, 0), vv.repeat_interleave(args.beams, 0))
        slots = torch.stack([sdpa(q[j :: args.beams], kk, vv) for j in range(args.beams)], 1).reshape(
            full.shape
        )
        print(f"{'attention per beam slot':<40}{torch.equal(full, slots)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
