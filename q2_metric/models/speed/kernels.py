"""Which kernels a model's forward pass runs: chosen per call, for the model's device and dtype.

- On a CPU, float32 Linear layers by oneDNN or PyTorch's default (`cpu_matmul`, `linear_kernels`).
- On a GPU in bfloat16 or float16, attention by FlashAttention or the memory-efficient kernel, not
  cuDNN's. On an H200 with torch 2.11, PyTorch picked cuDNN's attention for bfloat16 and spent
  1.7 ms of host time per call on it (a plan per shape) for 0.07 ms on the GPU: 5.7 s of an 18 s
  engine run at paper shapes, while the GPU worked 2.4 s in all. float32 attention never runs
  cuDNN's kernel, so the default's numbers do not move; bfloat16 is a departure already (`dtype`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from q2_metric.models.speed.cpu_matmul import OneDNNLinears, linear_kernels

HALF = (torch.bfloat16, torch.float16)
# PyTorch's other attention kernels, each where it is enabled (the user's settings hold)
GPU_HALF_ATTENTION = {
    SDPBackend.FLASH_ATTENTION: torch.backends.cuda.flash_sdp_enabled,
    SDPBackend.EFFICIENT_ATTENTION: torch.backends.cuda.mem_efficient_sdp_enabled,
    SDPBackend.MATH: torch.backends.cuda.math_sdp_enabled,
}


def attention_kernels(device: torch.device, dtype: torch.dtype) -> contextlib.AbstractContextManager:
    """On a GPU in half precision, attention by the enabled kernels other than cuDNN's; elsewhere
    (or when only cuDNN's is enabled) nothing.

    >>> attention_kernels(torch.device("cpu"), torch.bfloat16)  # doctest: +ELLIPSIS
    <contextlib.nullcontext object at ...>
    """
    backends = [b for b, enabled in GPU_HALF_ATTENTION.items() if enabled()]
    if device.type != "cuda" or dtype not in HALF or not backends:
        return contextlib.nullcontext()
    return sdpa_kernel(backends)


@contextlib.contextmanager
def model_kernels(
    linears: OneDNNLinears | None, setting: str, device: torch.device, model: torch.nn.Module
) -> Iterator[None]:
    """The Linear layers' kernels (`cpu_matmul`) and the attention's, for one forward pass or
    search of `model` (its dtype: its first parameter's)."""
    first = next(model.parameters(), None)
    dtype = first.dtype if first is not None else torch.float32
    with linear_kernels(linears, setting, device), attention_kernels(device, dtype):
        yield


@functools.lru_cache(maxsize=8)
def device_name(device: torch.device) -> str:
    """The device's model: a GPU's name, or a CPU's model name and instruction set."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{name or 'cpu'} {torch.backends.cpu.get_cpu_capability()}"


def denormals_flushed() -> bool:
    """Whether this thread flushes float32 denormals to zero (`torch.set_flush_denormal`)."""
    return bool((torch.tensor([1e-40], dtype=torch.float32) * 1.0).item() == 0.0)


def backend_settings(device: torch.device) -> tuple:
    """The process's settings that choose kernels, read now: the SDPA backends enabled, float32
    matmul precision and the reduced-precision switches, whether denormals are flushed, and the
    device's name. Two runs with the same settings on the same shapes make the same kernel calls."""
    cuda = torch.backends.cuda
    sdpa = tuple(
        getattr(cuda, name, lambda: None)()
        for name in (
            "flash_sdp_enabled",
            "mem_efficient_sdp_enabled",
            "math_sdp_enabled",
            "cudnn_sdp_enabled",
        )
    )
    matmul = (
        torch.get_float32_matmul_precision(),
        getattr(cuda.matmul, "allow_tf32", None),
        getattr(torch.backends.cudnn, "allow_tf32", None),
        getattr(cuda.matmul, "allow_fp16_reduced_precision_reduction", None),
        getattr(cuda.matmul, "allow_bf16_reduced_precision_reduction", None),
    )
    return (device_name(device), sdpa, matmul, denormals_flushed())
