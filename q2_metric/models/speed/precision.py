"""The fast precisions: bfloat16 where the hardware computes it, int8 dynamic quantization of the
QA and NLI encoders on a CPU. Both change scores (a little), so both are options named in the
signature (`dtype`, `quantize`); float32 is the default on every device, the released code's.

- bfloat16 on a CPU runs at speed only where the cores multiply bfloat16 natively (AVX512-BF16 or
  AMX-BF16); elsewhere PyTorch emulates it, slower than float32, so it is refused.
- `quantize="int8"` replaces the `nn.Linear` layers of the QA and NLI encoders (ALBERT's and
  RoBERTa's transformer layers, about 90% of the engine's FLOPs) by
  `torch.ao.nn.quantized.dynamic.Linear`: int8 weights quantized per output channel once at load,
  activations quantized per batch on the fly, int32 accumulation (VNNI where the CPU has it). The
  heads (2 QA logits, 3 NLI labels) and T5 stay float32. The engine's CPU path keeps working:
  QA packing (the masks are float32), the fused GELU (an activation module, not a Linear) and
  oneDNN's float32 Linear layers (`cpu_matmul`: the heads that are left).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from q2_metric.errors import DeviceNotAvailable

if TYPE_CHECKING:
    import torch

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
FP16_FLAGS = frozenset({"avx512_fp16", "amx_fp16"})


def cpu_flags_have_bf16(flags: set[str] | frozenset[str], capability: str = "") -> bool:
    """Whether a CPU with these /proc/cpuinfo `flags` (or torch's `get_cpu_capability()` string)
    multiplies bfloat16 natively.

    >>> cpu_flags_have_bf16({"avx512f", "avx512_bf16"}), cpu_flags_have_bf16({"avx2"}, "AVX2")
    (True, False)
    >>> cpu_flags_have_bf16(set(), "AVX512_BF16")
    True
    """
    return bool(BF16_FLAGS & set(flags)) or "BF16" in capability.upper() or "AMX" in capability.upper()


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether this machine's CPU multiplies bfloat16 natively (AVX512-BF16 or AMX-BF16)."""
    import torch

    capability = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else ""
    return cpu_flags_have_bf16(cpu_flags(), capability)


@functools.lru_cache(maxsize=1)
def cpu_has_fp16() -> bool:
    """Whether this machine's CPU multiplies float16 natively (AVX512-FP16 or AMX-FP16)."""
    return bool(FP16_FLAGS & cpu_flags())


def check_precision(dtype: str, quantize: str, device: torch.device | str) -> None:
    """Refuse, in one sentence, a precision this device cannot run fast: bfloat16 on a CPU
    without AVX512-BF16/AMX, float16 on a CPU without AVX512-FP16/AMX-FP16, int8 quantization off
    the CPU."""
    kind = str(device).partition(":")[0]
    if dtype == "bfloat16" and kind == "cpu" and not cpu_has_bf16():
        raise DeviceNotAvailable(
            "dtype='bfloat16' (--dtype bfloat16) was asked for on a CPU without AVX512-BF16 or AMX-BF16, where "
            "bfloat16 is emulated and slower than float32; use dtype='float32' (the default) or quantize='int8'."
        )
    if dtype == "float16" and kind == "cpu" and not cpu_has_fp16():
        raise DeviceNotAvailable(
            "dtype='float16' (--dtype float16) was asked for on a CPU without AVX512-FP16 or AMX-FP16, where "
            "float16 is emulated and slower than float32; use dtype='float32' (the default) or quantize='int8'."
        )
    if quantize != "none" and kind != "cpu":
        raise DeviceNotAvailable(
            f"quantize='{quantize}' (--quantize) runs on a CPU only, but the device is '{device}'; pass "
            "device='cpu' (--device cpu), or dtype='bfloat16' for a fast mode on a GPU."
        )


def quantize_encoder(model: torch.nn.Module) -> int:
    """Dynamic int8 quantization of the Linear layers of a QA or NLI model's encoder (its
    `base_model`), in place; the head stays float32. Returns how many layers were quantized."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    encoder = getattr(model, "base_model", model)
    before = sum(type(m) is torch.nn.Linear for m in encoder.modules())
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notices (it still ships and runs)
        warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
        quantize_dynamic(
            encoder, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8, inplace=True
        )
    return before - sum(type(m) is torch.nn.Linear for m in encoder.modules())
