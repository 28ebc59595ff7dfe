"""T5's cross-attention relative position bias of transformers 3.x, on today's T5.

transformers 3.x gave the first decoder block's cross-attention a relative position bias
(`decoder.block.0.layer.1.EncDecAttention.relative_attention_bias`): it created it, saved it, and
added it to the cross-attention scores of every decoder block (block 0 computes it, the others
reuse it), with decoder positions as queries and encoder positions as keys, bucketed one-way (a
key after the query falls in bucket 0). transformers 4+ drops that weight as unexpected, so a QG
model fine-tuned and saved on 3.x, as the paper's was, computes another function there.

`attach_cross_attention_bias` reads the weight from the checkpoint and, when present, hooks block
0's cross-attention to pass that bias in as its `position_bias` (T5's attention then adds it to the
scores and hands it on to the later blocks, as 3.x did). Nothing else of the model changes; a
checkpoint without the weight runs unchanged. A checkpoint saved by transformers 3.x without it
(see `saved_by_transformers_3`) gets one warning: it cannot be the model 3.x ran.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from q2_metric.models.loading import model_file_finder, read_checkpoint_tensor
from q2_metric.models.paper.t5_cache import decoder_cache

CROSS_BIAS = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"
log = logging.getLogger(__name__)
_warned: set[str] = set()


def saved_by_transformers_3(find: Callable[[str], str | None]) -> bool:
    """Whether the checkpoint's config.json was written by transformers 3.x or older (before 4.0
    the cross-attention bias was part of every T5): its `transformers_version` says 2.x/3.x, or it
    has none (3.2 did not record it; it still wrote T5's `n_positions`)."""
    path = find("config.json")
    if not path:
        return False
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    version = config.get("transformers_version") if isinstance(config, dict) else None
    if version is None:
        return isinstance(config, dict) and "n_positions" in config
    return isinstance(version, str) and version.split(".")[0] in ("2", "3")


def cross_attention_bias(
    module: torch.nn.Module, weight: torch.Tensor, query_length: int, key_length: int, past: int
) -> torch.Tensor:
    """(1, heads, query_length, key_length) bias of 3.x: queries at decoder positions
    past..past+query_length-1, keys at encoder positions, bucketed one-way."""
    context = torch.arange(past, past + query_length, dtype=torch.long, device=weight.device)[:, None]
    memory = torch.arange(key_length, dtype=torch.long, device=weight.device)[None, :]
    buckets = module._relative_position_bucket(
        memory - context,
        bidirectional=False,
        num_buckets=module.relative_attention_num_buckets,
        max_distance=module.relative_attention_max_distance,
    )
    return torch.nn.functional.embedding(buckets, weight).permute(2, 0, 1).unsqueeze(0)


def _past_length(cache: Any, layer: int, query_length: int) -> int:
    """Decoder tokens before this call's queries: the self-attention cache of the block, which
    already holds this call's tokens when the cross-attention runs."""
    if cache is None:
        return 0
    self_cache = getattr(cache, "self_attention_cache", cache)
    return max(0, int(self_cache.get_seq_length(layer)) - query_length)


def apply_cross_attention_bias(model: torch.nn.Module, weight: torch.Tensor) -> None:
    """Give block 0's cross-attention of a transformers T5 the 3.x bias `weight` (buckets, heads)."""
    attention = model.decoder.block[0].layer[1].EncDecAttention
    attention.register_buffer("cross_relative_attention_bias", weight.detach().clone(), persistent=False)

    def hook(module: Any, args: Any, kwargs: Any) -> Any:
        if kwargs.get("position_bias") is not None:
            return None
        hidden = args[0] if args else kwargs["hidden_states"]
        keys = kwargs["key_value_states"]
        bias = cross_attention_bias(
            module,
            module.cross_relative_attention_bias,
            hidden.shape[1],
            keys.shape[1],
            _past_length(decoder_cache(kwargs), module.layer_idx or 0, hidden.shape[1]),
        )
        return args, {**kwargs, "position_bias": bias.to(hidden.dtype)}

    attention.register_forward_pre_hook(hook, with_kwargs=True)


def attach_cross_attention_bias(model: torch.nn.Module, model_id: str) -> bool:
    """Apply the checkpoint's 3.x cross-attention bias to a loaded T5; True when it had one.
    Warns once per model when a checkpoint saved by transformers 3.x has none."""
    if getattr(getattr(model, "config", None), "model_type", None) != "t5":
        return False
    find = model_file_finder(model_id)
    weight = read_checkpoint_tensor(find, CROSS_BIAS)
    if weight is None:
        if saved_by_transformers_3(find) and model_id not in _warned:
            _warned.add(model_id)
            warnings.warn(
                f"The question-generation model {model_id} was saved by transformers 3.x but its "
                f"checkpoint has no {CROSS_BIAS}: it runs without the cross-attention bias that "
                f"transformers 3.x applied, so its questions can differ from the paper's.",
                stacklevel=2,
            )
        return False
    apply_cross_attention_bias(model, weight.to(next(model.parameters()).dtype))
    return True
