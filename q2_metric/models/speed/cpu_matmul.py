"""Linear layers run by oneDNN on CPUs where torch's BLAS leaves half the vector width unused.

On a CPU, PyTorch computes a float32 `nn.Linear` with its BLAS (MKL in the official builds). MKL
chooses its kernels by CPU vendor, and on AMD processors it runs its AVX2 code even where the
cores have AVX-512 (Zen 4 and Zen 5). oneDNN, which the same PyTorch build carries, chooses by
instruction set. On a 2-core AMD EPYC (Zen 5) it ran every Linear shape of the three paper models
at 2.0 to 2.9x MKL's rate (`benchmarks/RESULTS.md`).

`cpu_matmul` (a runtime option, like batching: float rounding only, outputs agree to about 1e-6):
- `auto`: oneDNN for float32 models on a CPU that has AVX-512 and is not Intel's. On Intel CPUs
  MKL already runs AVX-512. On AVX2-only CPUs MKL was measured faster.
- `onednn`: always, for float32 models on a CPU.
- `blas`: never (PyTorch's own path).

The layers are switched only inside `active()`, around the backends' own model calls. The model
objects stay as `from_pretrained` built them outside it, and no weight is copied.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import get_args

import torch

from q2_metric.config import CpuMatmul

CHOICES = get_args(CpuMatmul)


def prefers_onednn(capability: str, vendor: str) -> bool:
    """The `auto` rule: oneDNN where MKL would leave AVX-512 unused (a non-Intel CPU with AVX-512).

    >>> prefers_onednn("AVX512", "AuthenticAMD"), prefers_onednn("AVX512", "GenuineIntel"), prefers_onednn("AVX2", "AuthenticAMD")
    (True, False, False)
    """
    return capability.upper().startswith("AVX512") and vendor not in ("GenuineIntel", "")


@functools.lru_cache(maxsize=1)
def cpu_vendor() -> str:
    """The CPU's vendor string from /proc/cpuinfo (`AuthenticAMD`, `GenuineIntel`), '' where unknown."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def uses_onednn(setting: str, device: torch.device, dtype: torch.dtype) -> bool:
    """Whether a model on `device` in `dtype` runs its Linear layers with oneDNN under `setting`."""
    if setting not in CHOICES:
        raise ValueError(f"cpu_matmul must be one of {CHOICES}, got {setting!r}")
    # (PyTorch already runs half-precision Linear layers with oneDNN)
    if (
        setting == "blas"
        or device.type != "cpu"
        or dtype != torch.float32
        or not torch.backends.mkldnn.is_available()
    ):
        return False
    return setting == "onednn" or prefers_onednn(torch.backends.cpu.get_cpu_capability(), cpu_vendor())


def _onednn_forward(module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    # oneDNN's kernel has no autograd formula: anything recording gradients takes PyTorch's path
    if torch.is_grad_enabled() and (x.requires_grad or module.weight.requires_grad):
        return torch.nn.functional.linear(x, module.weight, module.bias)
    return torch.ops.mkldnn._linear_pointwise(x.contiguous(), module.weight, module.bias, "none", [], "")


class OneDNNLinears:
    """The `nn.Linear` layers of one model, run by oneDNN inside `active()`."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.layers = [m for m in model.modules() if type(m) is torch.nn.Linear]
        self.dtype = next(model.parameters()).dtype
        self._depth = 0

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Every Linear layer runs with oneDNN until the block ends (also by an exception);
        re-entrant."""
        if self._depth == 0:
            for layer in self.layers:
                layer.forward = functools.partial(_onednn_forward, layer)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                for layer in self.layers:
                    del layer.forward


def linear_kernels(
    linears: OneDNNLinears | None, setting: str, device: torch.device
) -> contextlib.AbstractContextManager:
    """`linears.active()` when `setting` chooses oneDNN for this model on `device`, else nothing."""
    if linears is None or not uses_onednn(setting, device, linears.dtype):
        return contextlib.nullcontext()
    return linears.active()
