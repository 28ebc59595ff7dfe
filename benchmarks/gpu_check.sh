#!/usr/bin/env bash
# The GPU checks and figures in one call, for a GPU machine whose time is short: the machine's CPU,
# the tests marked `gpu`, the beam-search unit tests on that machine's CPU (another CPU family than
# the developers'), then the speed benchmark at paper shapes in float32 (fast QG path and reference
# path) and bfloat16 (responses/s, per-stage fractions of the GPU's measured peaks). Everything is
# written to OUTDIR, the figures also as gpu-DATE.json (commit it to benchmarks/results/).
#
#   bash benchmarks/gpu_check.sh OUTDIR [RESPONSES]
#
# PYTHON picks the interpreter (default python3); the paper's weights are used where the Hub or
# its cache has them, random-weight models of the paper's shapes otherwise.
set -u
out=${1:?usage: gpu_check.sh OUTDIR [RESPONSES]}
n=${2:-400}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/nvidia-smi.txt"
"$py" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" | tee -a "$out/nvidia-smi.txt"
(lscpu | grep -E "Model name|^CPU\(s\)|Flags") >> "$out/nvidia-smi.txt" 2>&1
HF_HUB_OFFLINE=1 timeout 150 "$py" -m pytest -q -rs -s -m gpu tests/gpu 2>&1 | tee "$out/pytest_gpu.txt"
HF_HUB_OFFLINE=1 timeout 150 "$py" -m pytest -q tests/unit/models/paper tests/unit/models/speed/test_qg_fast.py \
    tests/unit/models/speed/test_t5_beam_cache.py 2>&1 | tail -15 | tee "$out/pytest_cpu_models.txt"
timeout 420 "$py" benchmarks/bench_speed.py --device cuda --size paper --n "$n" --reference-n 8 \
    --precisions float32,float32-ref,bfloat16 --json "$out/gpu-$(date +%F).json" 2>&1 | tee "$out/bench_gpu.txt"
