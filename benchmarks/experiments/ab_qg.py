"""QG alone at the benchmark's shapes: time, model FLOPs and fraction of the float32 peak, and a
profile of where beam search spends its time.

    python benchmarks/experiments/ab_qg.py --profile             # torch.profiler table, one pass
    python benchmarks/experiments/ab_qg.py --reps 3              # timing, FLOPs, fraction of peak
    python benchmarks/experiments/ab_qg.py --reps 3 --ab         # the preallocated cache against
                                                                 # transformers' (A B B A ...)
    python benchmarks/experiments/ab_qg.py --reps 3 --ab reference  # the fast path against the
                                                                 # reference path
    python benchmarks/experiments/ab_qg.py --reps 3 --ab merged  # the batches' decoder steps merged
                                                                 # (`t5_merged_decoder`) against
                                                                 # each batch alone
    python benchmarks/experiments/ab_qg.py --reps 3 --ab gqa     # the cross-attention's beam slots
                                                                 # in one grouped-query call against
                                                                 # one call per slot
    python benchmarks/experiments/ab_qg.py --reps 3 --ab all     # both against neither
    python benchmarks/experiments/ab_qg.py --reps 3 --ab limits  # batches of other length limits
                                                                 # merged, against equal settings only
    python benchmarks/experiments/ab_qg.py --profile --ab all    # the profile of an A/B's old arm

With `--ab merged` (and `all`) the fraction of peak of both arms is computed from the FLOPs the meter counts
on the old arm (each batch alone): the same questions are the same useful work, and the meter
counts a merged step's cross-attention at the longest batch's length.

The inputs are the benchmark's (`bench_speed.py`): the spaCy candidates of its first `--n`
responses, each asked of its response, on a random T5-base of the paper's shapes generating to the
scripted question's length, as the benchmark's QG stage does.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_speed  # noqa: E402

from q2_metric import Q2Config, Q2Scorer  # noqa: E402
from q2_metric.models.speed.flops import FlopMeter, matmul_peak  # noqa: E402
from q2_metric.models.speed.qg_fast import FastSettings  # noqa: E402
from q2_metric.models.tiny_builder import build_tiny_models  # noqa: E402
from q2_metric.results import Pair, ResponseScore  # noqa: E402
from q2_metric.steps.candidates import find_candidates  # noqa: E402


def qg_keys(n: int, parser: object) -> list[tuple[str, str]]:
    """The distinct (candidate, response) pairs of the benchmark's first `n` responses."""
    pairs = [
        Pair(r, k, ResponseScore(index=i, q2=float("nan"), q2_no_nli=float("nan")))
        for i, (r, k) in enumerate(bench_speed.load_pairs(n))
    ]
    find_candidates(pairs, parser, ["i"])
    return list(dict.fromkeys((c, p.response) for p in pairs for c in p.result.candidates))


# each A/B's old arm: the reference path, or the fast path's settings with one idea off
OLD_ARMS: dict[str, FastSettings | None] = {
    "cache": FastSettings(in_place_cache=False),
    "reference": None,
    "merged": FastSettings(merged_rows=0),
    "gqa": FastSettings(grouped_query=False),
    "all": FastSettings(merged_rows=0, grouped_query=False),
    "limits": FastSettings(merge_limits=False),
    "layout": FastSettings(time_major=False),
}


def arm(qg: bench_speed.WorkingQG, settings: FastSettings | None) -> bench_speed.WorkingQG:
    """The generator of one arm: the same model, by the reference path (None) or these settings."""
    return qg.with_decoder("reference") if settings is None else qg.with_decoder("fast", settings)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--models", default=None, help="a folder of built random models (built if missing)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument(
        "--ab",
        nargs="?",
        const="cache",
        choices=list(OLD_ARMS),
        help="alternate new and old: the fast path with the reference path (reference), "
        "the preallocated cache with transformers' (cache, the default), "
        "the merged decoder steps with each batch alone (merged), the cross-attention's beam slots in one "
        "grouped-query call with one call per slot (gqa), both with neither (all), batches of other length "
        "limits merged with only batches of the same settings merged (limits), the self-attention cache's "
        "buffers time-major with heads-major (layout)",
    )
    ap.add_argument(
        "--length",
        type=int,
        default=None,
        help="generate exactly this many tokens for every input (one setting for all batches, as the "
        "generator's own max_length) instead of each batch's scripted question length",
    )
    ap.add_argument("--merged-rows", type=int, default=None, help="the merged steps' row limit (--ab merged)")
    args = ap.parse_args()
    if args.models:
        return run(args, Path(args.models))
    with tempfile.TemporaryDirectory(prefix="q2-qg-") as folder:  # the models' 2 GB go with it
        return run(args, Path(folder))


def run(args: argparse.Namespace, folder: Path) -> int:
    """The profile or the timed repetitions, with the random models in `folder`."""
    pairs = bench_speed.load_pairs(args.n)
    if not (folder / "qg").exists():
        build_tiny_models(folder, bench_speed.model_texts(pairs), size="paper")
    from q2_metric.models.loading import resolve_device

    options: dict = {}
    if resolve_device("auto").type == "cuda":  # the benchmark's GPU sizes
        options.update(qg_batch_size=bench_speed.GPU_RUNTIME["qg_batch_size"])
        options.update(qg_max_tokens=bench_speed.GPU_RUNTIME["qg_max_tokens"])
    if args.batch_size:
        options["qg_batch_size"] = args.batch_size
    config = Q2Config(
        qg_model=str(folder / "qg"), qa_model=str(folder / "qa"), nli_model=str(folder / "nli"), **options
    )
    keys = qg_keys(args.n, Q2Scorer(config).parser)
    qg = bench_speed.WorkingQG(config, bench_speed.Decisions({p[0] for p in pairs}))
    new = FastSettings(merged_rows=args.merged_rows) if args.merged_rows else FastSettings()
    arms = {"new": arm(qg, new), "old": arm(qg, OLD_ARMS[args.ab]) if args.ab else None}
    lengths = (lambda n: [args.length] * n) if args.length else (lambda n: None)
    answers, contexts = [a for a, _ in keys], [c for _, c in keys]
    arms["new"].generate(answers[:2], contexts[:2])  # warm up
    meter = FlopMeter.attach(qg.model)
    print(f"{len(keys)} QG inputs, batch {qg.batch_size}, {torch.get_num_threads()} threads")
    if args.profile:
        profiled = arms["old"] if args.ab else arms["new"]  # with --ab: the old arm's profile
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            profiled.generate(answers, contexts, lengths(len(answers)))
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=25))
        return 0
    times: dict[str, list[float]] = {"new": [], "old": []}
    useful: list[float] = []  # the old arm's FLOPs (--ab merged)
    digests: dict[str, set[str]] = {"new": set(), "old": set()}
    for rep in range(args.reps):
        peak = matmul_peak(torch.float32, n=8192 if qg.device.type == "cuda" else 2048, device=qg.device)
        order = (["new", "old"] if rep % 2 == 0 else ["old", "new"]) if args.ab else ["new"]
        for name in order:
            generator = arms[name]
            assert generator is not None
            flops0, model0 = meter.flops, meter.seconds
            generator.model_decisions.clear()
            t0 = time.perf_counter()
            generator.generate(answers, contexts, lengths(len(answers)))
            dt = time.perf_counter() - t0
            times[name].append(dt)
            flops, model = meter.flops - flops0, meter.seconds - model0
            ids = hashlib.sha256(repr(generator.model_decisions).encode()).hexdigest()[:12]
            digests[name].add(ids)
            if args.ab in ("merged", "all", "reference"):
                if name == "old":
                    useful.append(flops)
                    counted = flops
                else:
                    counted = useful[-1] if useful else flops
                print(
                    f"rep {rep} {name}: {dt:.2f} s, {model / dt:.0%} in model, meter {flops / 1e9:.1f} GFLOP, "
                    f"useful {counted / 1e9:.1f} GFLOP, {counted / dt / 1e9:.1f} GFLOP/s = "
                    f"{counted / dt / peak:.1%} of peak {peak / 1e9:.1f}; questions {ids}",
                    flush=True,
                )
                continue
            print(
                f"rep {rep} {name}: {dt:.2f} s, {model / dt:.0%} in model, {flops / 1e9:.1f} GFLOP, "
                f"{flops / dt / 1e9:.1f} GFLOP/s = {flops / dt / peak:.1%} of peak {peak / 1e9:.1f}; "
                f"questions {ids}",
                flush=True,
            )
    for note in arms["new"].profile_notes():
        print(note)
    if args.ab:
        ratios = sorted(o / n for o, n in zip(times["old"], times["new"]))
        print(f"old/new time per repetition: {', '.join(f'{r:.2f}' for r in ratios)}")
        print(f"question digests: new {sorted(digests['new'])}, old {sorted(digests['old'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
