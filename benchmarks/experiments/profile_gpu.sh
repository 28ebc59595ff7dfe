#!/usr/bin/env bash
# Where the engine's host time goes on a GPU: the speed benchmark's engine (paper shapes, random
# weights, scripted decisions) under cProfile, once per dtype, and the functions that took the most
# time by themselves and in all (a call that waits for the GPU shows its wait as its own time).
#
#   bash benchmarks/experiments/profile_gpu.sh OUTDIR [RESPONSES] [DTYPES]
set -u
out=${1:?usage: profile_gpu.sh OUTDIR [RESPONSES] [DTYPES]}
n=${2:-600}
dtypes=${3:-float32 bfloat16}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
for dtype in $dtypes; do
    timeout "${PROFILE_TIMEOUT:-200}" "$py" -m cProfile -o "$out/$dtype.prof" benchmarks/bench_speed.py \
        --device cuda --size paper --n "$n" --reference-n 1 --dtype "$dtype" > "$out/bench_$dtype.txt" 2>&1
    "$py" - "$out/$dtype.prof" > "$out/profile_$dtype.txt" <<'PY'
import pstats, sys
stats = pstats.Stats(sys.argv[1])
stats.sort_stats("tottime").print_stats(50)
stats.sort_stats("cumulative").print_stats("q2_metric", 70)
PY
    grep -A8 "^stage" "$out/bench_$dtype.txt"
done
