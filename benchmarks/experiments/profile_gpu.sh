#!/usr/bin/env bash
# Where the engine's time goes on a GPU: the speed benchmark's engine (paper shapes, random weights,
# scripted decisions), after its warm-up, under cProfile and torch's profiler, once per dtype
# (`bench_speed.py --engine-only --profile`: OUTDIR/profile_DTYPE.txt and .prof).
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
    timeout "${PROFILE_TIMEOUT:-200}" "$py" benchmarks/bench_speed.py --device cuda --size paper --n "$n" \
        --dtype "$dtype" --engine-only --profile "$out/profile_$dtype" > "$out/bench_$dtype.txt" 2>&1
    tail -9 "$out/bench_$dtype.txt"
done
