"""Loading pretrained models: device and dtype choice, a fast, clear failure when offline, and a
model's files (`model_file_finder`, `read_model_json`, `read_checkpoint_tensor`) read without loading it."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported when a model is needed, so that `q2 --help` starts fast
    import torch


def resolve_device(device: str) -> torch.device:
    """`auto` -> CUDA when present, else CPU; another device as it is, when this machine has it
    (the rule: `devices.device_problem`; else `DeviceNotAvailable`, one sentence. Front-ends meet
    `checks.check_device`'s fuller sentence first, before any model loads)."""
    import torch

    from q2_metric.errors import DeviceNotAvailable
    from q2_metric.models.devices import cuda_count, device_problem

    if device == "auto":
        return torch.device("cuda" if cuda_count() else "cpu")
    problem = device_problem(device)
    if problem is not None:
        raise DeviceNotAvailable(f"The device '{device}' cannot be used: {problem}.")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device | str) -> torch.dtype:
    """`auto` -> float32 on every device, CPU and CUDA: the released code's precision, so the
    default score is the paper's. bfloat16 and float16 only when asked (named in the signature);
    bfloat16 on a CPU without AVX512-BF16/AMX is refused (`DeviceNotAvailable`, one sentence)."""
    import torch

    if dtype == "auto":
        return torch.float32
    from q2_metric.models.speed.precision import check_precision

    check_precision(dtype, "none", torch.device(device) if isinstance(device, str) else device)
    return getattr(torch, dtype)


def uses_segment_ids(model: Any) -> bool:
    """Whether the model was trained with segment (token type) embeddings, as ALBERT and BERT are.
    transformers 3/4, which the released code ran on, returned segment ids for ALBERT pairs;
    transformers 5's ALBERT tokenizer returns them only when asked, so the backends ask."""
    return (getattr(getattr(model, "config", None), "type_vocab_size", 0) or 0) > 1


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"} or os.environ.get(
        "TRANSFORMERS_OFFLINE", "0"
    ).lower() in {"1", "true", "yes", "on"}


def _is_cached(model_id: str) -> bool:
    return cached_revision(model_id) is not None


class _NoLengthWarning(logging.Filter):
    """transformers warns "Token indices sequence length is longer than the specified maximum
    sequence length" when a text is tokenized whole; the backends read long texts in windows (or
    cut them as the released code did), so the warning says nothing true about the run."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Token indices sequence length is longer")


logging.getLogger("transformers.tokenization_utils_base").addFilter(_NoLengthWarning())

_VERBOSE: contextvars.ContextVar[bool] = contextvars.ContextVar("q2_verbose_loading", default=False)


@contextlib.contextmanager
def verbose_loading(enabled: bool = True) -> Iterator[None]:
    """Show transformers' loading bars and messages inside this block (quiet otherwise)."""
    token = _VERBOSE.set(enabled)
    try:
        yield
    finally:
        _VERBOSE.reset(token)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Hide transformers' "Loading weights" bars and info messages unless verbose loading is on."""
    from transformers.utils import logging as hf_logging

    if _VERBOSE.get() or os.environ.get("Q2_VERBOSE", "0").lower() in {"1", "true", "yes", "on"}:
        yield
        return
    bars, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


# One model loads at a time in a process: `from_pretrained` builds a model's layers on the "meta"
# device by patching torch's module class for the time of the call, process-wide, so a model
# another thread loads meanwhile is built on it too ("Cannot copy out of meta tensor"; issue 49:
# threads scoring with other models or precisions). A lock per model would not do: the patch is
# global, whichever model is loading.
_LOADING = threading.RLock()


def load_pretrained(loader: Any, model_id: str, dtype: torch.dtype | None = None, **kwargs: Any) -> Any:
    """Call `loader.from_pretrained`, preferring the local cache so that no retries happen; one
    load at a time in the process (`_LOADING`)."""
    import torch
    import transformers
    from packaging.version import Version

    local = Path(model_id).is_dir() or _is_cached(model_id) or _offline()
    if dtype is not None:  # the keyword was renamed in transformers 4.56
        kwargs["dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"] = dtype
    with _LOADING, _quiet():
        obj = loader.from_pretrained(model_id, local_files_only=local, **kwargs)
    if hasattr(obj, "deprecation_warnings"):  # tokenizers: we pad pre-tokenized features on purpose
        obj.deprecation_warnings["Asking-to-pad-a-fast-tokenizer"] = True
    if isinstance(obj, torch.nn.Module):
        fuse_tanh_gelu(obj)
        from q2_metric.models.speed.flops import FlopMeter

        FlopMeter.attach_if_known(obj)  # counts model work from the first call (`Q2Result.profile`)
    return obj


def fuse_tanh_gelu(model: torch.nn.Module) -> int:
    """Run transformers' `gelu_new` (the tanh GELU, ALBERT's activation, written as five
    elementwise operations) as PyTorch's one fused kernel for the same function. Outputs agree to
    float rounding (as with batching or SDPA attention); ALBERT-xlarge runs about a fifth faster
    on a CPU. Returns how many activation modules were replaced."""
    import torch
    from transformers.activations import NewGELUActivation

    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is NewGELUActivation:
                setattr(parent, name, torch.nn.GELU(approximate="tanh"))
                replaced += 1
    return replaced


def cached_revision(model_id: str) -> str | None:
    """The commit of the cache snapshot that `model_id` resolves to (its `main` ref), or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model_id, "config.json")
    if not isinstance(found, str):
        return None
    snapshot = Path(found).parent  # <cache>/models--org--name/snapshots/<commit>/config.json
    return snapshot.name if snapshot.parent.name == "snapshots" else None


def model_revision(model: Any, model_id: str) -> str:
    """The Hub commit a model was loaded from (its cache snapshot), or `local` for a directory."""
    if Path(model_id).is_dir():
        return "local"
    # transformers 5 no longer records `config._commit_hash`; the cache snapshot is the source.
    commit = cached_revision(model_id) or getattr(getattr(model, "config", None), "_commit_hash", None)
    return (commit or "unknown")[:10]


def model_file_finder(model_id: str, download: bool = False) -> Callable[[str], str | None]:
    """Find a file of a model: in its directory, else in the Hugging Face cache; with `download`,
    a file the cache has never seen is fetched from the Hub unless offline (transformers 5 may
    load a tokenizer from `tokenizer.json` and never fetch `spiece.model`)."""
    path = Path(model_id).expanduser()
    if path.is_dir():
        return lambda name: str(path / name) if (path / name).is_file() else None
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    def find(name: str) -> str | None:
        hit = try_to_load_from_cache(model_id, name)
        if isinstance(hit, str):
            return hit
        if download and hit is None and not _offline():
            try:
                return hf_hub_download(model_id, name)
            except Exception:
                return None
        return None

    return find


def read_model_json(find: Callable[[str], str | None], name: str) -> dict:
    """A JSON file of a model (`find` from `model_file_finder`) as a dict; {} when it is absent,
    unreadable or not an object."""
    path = find(name)
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_checkpoint_tensor(find: Callable[[str], str | None], key: str) -> torch.Tensor | None:
    """One tensor of a saved checkpoint (safetensors, pytorch_model.bin or their sharded
    indexes), without loading the rest; None when it is not there."""
    import torch

    index = None
    for name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        path = find(name)
        if path:
            try:
                index = json.loads(Path(path).read_text(encoding="utf-8")).get("weight_map", {})
            except (OSError, ValueError):
                index = {}
            files = [index[key]] if key in index else []
            break
    else:
        files = ["model.safetensors", "pytorch_model.bin"]
    for name in files:
        path = find(name)
        if not path:
            continue
        if name.endswith(".safetensors"):
            from safetensors import safe_open

            with safe_open(path, framework="pt") as f:
                return f.get_tensor(key) if key in f.keys() else None
        try:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # a file in torch's legacy (pre-zip) format cannot be memory-mapped
            state = torch.load(path, map_location="cpu", weights_only=True)
        return state[key].clone() if key in state else None
    return None
