"""The one device rule: which devices Q² takes (`auto`, `cpu`, `cuda`, `cuda:N`) and whether this
machine has the one asked for. The options path (`options.normalize_device`), `Q2Config`, the model
checks (`models.checks.check_device`) and model loading (`models.loading.resolve_device`) all ask
`device_problem`, each raising its own error with its answer.
"""

from __future__ import annotations

import sys
from typing import Any

SPELLINGS = "use 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device"


def device_text(value: Any) -> Any:
    """A `torch.device` as its string (`cuda:0`); any other value as it is. A `torch.device` can
    only come from a loaded torch, so this never imports it."""
    torch = sys.modules.get("torch")
    return str(value) if torch is not None and isinstance(value, torch.device) else value


def cuda_count() -> int:
    """The CUDA devices torch sees here (0 without a GPU or with a CPU-only build of torch)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def device_problem(value: Any, *, hardware: bool = True) -> str | None:
    """None when `value` names a device Q² takes and, with `hardware`, one this machine has; else
    why not, as a clause to put after the value (`use 'auto', 'cpu', ...` or `torch sees 0 CUDA
    device(s) here; use 'auto' or 'cpu'`). Only a CUDA device imports torch.

    >>> device_problem("auto"), device_problem("cpu"), device_problem("cuda:1", hardware=False)
    (None, None, None)
    >>> device_problem("gpu")
    "use 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device"
    """
    value = device_text(value)
    if not isinstance(value, str):
        return SPELLINGS
    kind, _, index = value.partition(":")
    if value in ("auto", "cpu"):
        return None
    if kind != "cuda" or not (not index or index.isdigit()) or value.endswith(":"):
        return SPELLINGS
    if not hardware:
        return None
    count = cuda_count()
    if count == 0 or (index and int(index) >= count):
        return f"torch sees {count} CUDA device(s) here; use 'auto' or 'cpu'"
    return None
