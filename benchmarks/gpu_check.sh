#!/usr/bin/env bash
# The GPU checks and figures in one call, for a GPU machine whose time is short: the machine's CPU,
# the tests marked `gpu` (CUDA-graph steps against eager ones, the pipeline against the CPU's), QG
# alone by the fast path (CUDA graphs) and the reference path, alternating (`ab_qg.py`), the
# speed benchmark at paper shapes in float32 (the default: CUDA-graph QG behind the exactness gate),
# float32-ref (the eager reference path) and bfloat16, with the released loop beside them, then the
# engine's growth with the corpus, and the beam-search unit tests on that machine's CPU (another CPU
# family than the developers'). Everything is written to OUTDIR, the figures also as gpu-DATE.json
# (commit it to benchmarks/results/).
#
#   bash benchmarks/gpu_check.sh OUTDIR [RESPONSES] [GROWTH_SIZES]
#
# PYTHON picks the interpreter (default python3); TEST_TIMEOUT, AB_TIMEOUT, BENCH_TIMEOUT,
# GROWTH_TIMEOUT, PROFILE_TIMEOUT and CPU_TIMEOUT bound the steps in seconds (0 skips one; the
# profile, `experiments/profile_gpu.sh`'s engine under cProfile and torch's profiler, is skipped
# unless asked). GROWTH_DTYPE and PROFILE_DTYPE pick those steps' precision (float32, bfloat16).
# The paper's weights are used where the Hub or its cache has them, random-weight models of the
# paper's shapes otherwise.
set -u
out=${1:?usage: gpu_check.sh OUTDIR [RESPONSES] [GROWTH_SIZES]}
n=${2:-600}
sizes=${3:-600,2400,9600}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/nvidia-smi.txt"
"$py" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$out/nvidia-smi.txt"
(lscpu | grep -E "Model name|^CPU\(s\)|Flags") >> "$out/nvidia-smi.txt" 2>&1
# each step is skipped when its timeout is 0 (a short lease runs what it needs)
run_step() { [ "$1" != 0 ] && timeout "$@"; }
run_step "${TEST_TIMEOUT:-200}" "$py" -m pytest -q -rs -s -p no:cacheprovider -m gpu tests/gpu 2>&1 | tee "$out/pytest_gpu.txt"
run_step "${AB_TIMEOUT:-150}" "$py" benchmarks/experiments/ab_qg.py --n "$n" --reps 2 --ab reference 2>&1 \
    | tee "$out/ab_qg_gpu.txt"
run_step "${BENCH_TIMEOUT:-300}" "$py" benchmarks/bench_speed.py --device cuda --size paper --n "$n" --reference-n 8 \
    --precisions float32,float32-ref,bfloat16 --json "$out/gpu-$(date +%F).json" 2>&1 | tee "$out/bench_gpu.txt"
run_step "${GROWTH_TIMEOUT:-400}" "$py" benchmarks/bench_speed.py --device cuda --size paper --dtype "${GROWTH_DTYPE:-float32}" \
    --growth "$sizes" 2>&1 | tee "$out/growth_gpu.txt"
[ "${PROFILE_TIMEOUT:-0}" != 0 ] && PROFILE_TIMEOUT=$PROFILE_TIMEOUT PYTHON=$py \
    bash benchmarks/experiments/profile_gpu.sh "$out" "$n" "${PROFILE_DTYPE:-bfloat16}"
run_step "${CPU_TIMEOUT:-100}" "$py" -m pytest -q -p no:cacheprovider tests/unit/models/paper \
    tests/unit/models/speed/test_qg_fast.py tests/unit/models/speed/test_qg_graphs.py \
    tests/unit/models/speed/test_t5_beam_cache.py 2>&1 | tail -15 | tee "$out/pytest_cpu_models.txt"
