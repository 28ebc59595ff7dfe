"""T5 beam search with the cross-attention keys and values made once per input, not once per beam.

transformers' `generate` copies each encoder output `num_beams` times (rows i*beams to
i*beams+beams-1 belong to input i). The decoder's first step then projects those identical rows
to cross-attention keys and values once per beam (about a fifth of a question's model FLOPs at the
paper's shapes), and every later step reorders the cross-attention cache with the beams, copying
all of it, although a beam is only ever replaced by a beam of the same input, whose keys and
values are the same.

`SharedCrossAttention` hooks every cross-attention: inside `sharing(beams)` its `k` and `v`
projections run on one row per input (the encoder states of the input's first beam), and the
beam reorder leaves the cross-attention cache as it is (the project's 3.2 beam search,
`hf_qg.decoder_steps`, reorders the self-attention cache alone; transformers' `generate` calls the
model's `_reorder_cache`, set here). Outside that block the hooks do nothing and the attention is
the decoder's own.
The values are the same as on the plain path, row for row, so the generated ids and scores are
too (tested bit for bit); the signature does not change.

The keys and values also stay one row per input in the cache: they are not copied to the beams.
The cross-attention then runs once per beam slot (the rows of beam j of every input against their
input's keys and values: `num_beams` attention calls of the batch's inputs instead of one of all
rows). Each query row is computed by the same kernel on the same keys, values and mask as when its
keys and values were copied, so the output is the same bit for bit (tested); what goes is the
copy to the beams (and its cache write) and, at every decoder step, reading `num_beams` copies of
the same keys and values: at the paper's shapes (16 inputs of 200 tokens, 5 beams) the
cross-attention ran 2.7x faster, one thread, and it had been the largest item of a decoder step
after the matrix products (`benchmarks/RESULTS.md`).

In the fast question generator's merged steps (`t5_merged_decoder`, `FastSettings.grouped_query`)
the beam slots' calls are one call of grouped-query attention with transformers' SDPA attention
(`enable_gqa`: per input, `beams` query heads per key/value head, each a query of length 1 as in
its slot's call), so each (input, head)'s keys and values are read once for all its beams. While
several batches' steps run merged, each batch's self-attention also runs on its own rows alone
(`grouped_self_attention`): an attention kernel may split its work by the rows it is given, so
only the Linear layers and norms see every row. Whether any of this gives the reference path's
numbers on this machine is the fast path's exactness gate's to say (`models/speed/qg_fast.py`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

# the attention functions of the shared cross-attention and of the decoder's self-attention in
# merged steps (registered with transformers once)
ATTENTION_NAME = "q2_shared_cross"
SELF_ATTENTION_NAME = "q2_grouped_self"


class SharedCrossAttention:
    """Hooks on one T5's cross-attention projections; `beams` is 1 (inactive) outside `sharing`."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.beams = 1
        # set by `t5_merged_decoder` while the decoder steps of several encoder batches run as one
        self.groups: list[CrossGroup] | None = None
        # the beam slots' cross-attention in one grouped-query call (set by the merged steps from
        # their `FastSettings`; False: one call per slot)
        self.grouped_query = False
        self.projections = [
            getattr(block.layer[1].EncDecAttention, name)
            for block in model.decoder.block
            for name in ("k", "v")
        ]
        _register_attention()
        for block in model.decoder.block:
            attention = block.layer[1].EncDecAttention
            attention.register_forward_pre_hook(self._one_row_per_input, with_kwargs=True)
            # this module alone calls the shared attention, which hands every other call to the
            # decoder's own implementation (`attention._q2_decoder_config`, read at each call)
            attention._q2_shared, attention._q2_decoder_config = self, attention.config
            attention.config = copy.copy(attention.config)
            attention.config._attn_implementation = ATTENTION_NAME
            own = block.layer[0].SelfAttention
            own._q2_shared, own._q2_decoder_config = self, own.config
            own.config = copy.copy(own.config)
            own.config._attn_implementation = SELF_ATTENTION_NAME

    def _one_row_per_input(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple | None:
        """The encoder states the cross-attention projects to keys and values: one row per input."""
        x = kwargs.get("key_value_states")
        if self.beams > 1 and x is not None and x.dim() == 3 and x.shape[0] % self.beams == 0:
            return args, {**kwargs, "key_value_states": x[:: self.beams]}
        return None

    @contextlib.contextmanager
    def sharing(self, beams: int) -> Iterator[None]:
        """Within this block, `generate` with `beams` beams shares each input's keys and values
        (blocks may nest: each leaves the state it found)."""
        if beams <= 1:
            yield
            return
        before = (self.beams, self.groups, self.grouped_query, self.model.__dict__.get("_reorder_cache"))
        self.beams = beams
        self.model._reorder_cache = _reorder_self_attention_only  # generate prefers the model's own
        try:
            yield
        finally:
            self.beams, self.groups, self.grouped_query, reorder = before
            if reorder is None:
                del self.model._reorder_cache
            else:
                self.model._reorder_cache = reorder


def _decoder_attention(module: torch.nn.Module) -> Callable:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.t5.modeling_t5 import eager_attention_forward

    return ALL_ATTENTION_FUNCTIONS.get_interface(
        module._q2_decoder_config._attn_implementation, eager_attention_forward
    )


def _per_beam(x: Any, rows: int, beams: int, j: int) -> Any:
    """Beam j's rows of a per-row tensor (its first dimension is `rows`); others as they are."""
    return _rows_of(x, rows, slice(j, None, beams))


def shared_cross_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """The cross-attention with keys and values one row per input and queries one row per beam:
    the decoder's attention function once per beam slot, the outputs interleaved back into the
    rows' order. Any other call (no sharing, self-attention shapes) goes to that function as is."""
    attend = _decoder_attention(module)
    beams = module._q2_shared.beams
    groups = module._q2_shared.groups
    rows = query.shape[0]
    if groups is not None and beams > 1 and rows == sum(g.rows for g in groups):
        return _grouped(module, attend, query, kwargs, groups), None
    if beams <= 1 or rows != key.shape[0] * beams:
        return attend(module, query, key, value, attention_mask, **kwargs)
    return _per_beam_slots(module, attend, query, key, value, attention_mask, beams, kwargs), None


def _rows_of(x: Any, rows: int, part: slice) -> Any:
    """A per-row tensor's rows `part` (its first dimension is `rows`); others as they are."""
    return x[part] if isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] == rows else x


def grouped_self_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """The decoder's self-attention in merged steps: each batch's rows by their own call, as in
    their own steps; any other call goes to the decoder's attention function as is."""
    attend = _decoder_attention(module)
    groups = module._q2_shared.groups
    rows = query.shape[0]
    if groups is None or len(groups) == 1 or rows != sum(g.rows for g in groups):
        return attend(module, query, key, value, attention_mask, **kwargs)
    outs, start = [], 0
    for g in groups:
        part = slice(start, start + g.rows)
        own = {k: _rows_of(v, rows, part) for k, v in kwargs.items()}
        out, _ = attend(
            module, query[part], key[part], value[part], _rows_of(attention_mask, rows, part), **own
        )
        outs.append(out)
        start += g.rows
    return torch.cat(outs), None


@dataclass
class CrossGroup:
    """One encoder batch inside merged decoder steps (`t5_merged_decoder`): its `rows` decoder rows
    (inputs x beams, consecutive), its cross-attention keys and values per decoder layer (one row
    per input, its own padded length) and the cross-attention mask its own decoder steps got."""

    rows: int
    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    mask: torch.Tensor | None


def _grouped(
    module: torch.nn.Module, attend: Callable, query: torch.Tensor, kwargs: dict, groups: list[CrossGroup]
) -> torch.Tensor:
    """The cross-attention of merged decoder steps: each group's query rows against its own keys,
    values and mask, as its own steps computed it (`_per_beam_slots`), the outputs in row order."""
    beams, layer = module._q2_shared.beams, module.layer_idx
    bias = kwargs.get("position_bias")
    outs, start = [], 0
    for g in groups:
        length = g.keys[layer].shape[-2]
        own = dict(kwargs)
        if isinstance(bias, torch.Tensor):  # [1 or rows, heads, 1, longest]: this group's part
            part = bias[start : start + g.rows] if bias.shape[0] == query.shape[0] else bias
            own["position_bias"] = part[..., :length]
        q = query[start : start + g.rows]
        outs.append(_per_beam_slots(module, attend, q, g.keys[layer], g.values[layer], g.mask, beams, own))
        start += g.rows
    return torch.cat(outs)


def _per_beam_slots(
    module: torch.nn.Module,
    attend: Callable,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    beams: int,
    kwargs: dict,
) -> torch.Tensor:
    """The decoder's attention once per beam slot, the outputs interleaved into the rows' order
    (in one call of grouped-query attention where that gives the same numbers: `_grouped_query`)."""
    rows = query.shape[0]
    per_row = (attention_mask, kwargs.get("position_bias"))  # one per row or one for all: rearranged
    if (
        module._q2_shared.grouped_query
        and all(x is None or x.shape[0] in (1, rows) for x in per_row)
        and _grouped_query_applies(attend, query, kwargs)
    ):
        return _grouped_query(query, key, value, attention_mask, beams, kwargs)
    return _slot_calls(module, attend, query, key, value, attention_mask, beams, kwargs)


def _slot_calls(
    module: torch.nn.Module | None,
    attend: Callable,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    beams: int,
    kwargs: dict,
) -> torch.Tensor:
    """`attend` once per beam slot (beam j's query rows, mask and bias), the outputs interleaved
    into the rows' order."""
    rows = query.shape[0]
    outs = []
    for j in range(beams):
        slot = {k: _per_beam(v, rows, beams, j) for k, v in kwargs.items()}
        out, _ = attend(
            module, query[j::beams], key, value, _per_beam(attention_mask, rows, beams, j), **slot
        )
        outs.append(out)
    # (inputs, beams, ...) -> the rows' order, input i's beams at rows i*beams ... i*beams+beams-1
    return torch.stack(outs, dim=1).reshape(rows, *outs[0].shape[1:])


_GQA_KWARGS = {"position_bias", "dropout", "scaling"}


def _sdpa_forward() -> Callable | None:
    try:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
    except ImportError:  # pragma: no cover - transformers without it: the slots' calls
        return None
    return sdpa_attention_forward


def _grouped_query(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    beams: int,
    kwargs: dict,
) -> torch.Tensor:
    """`_per_beam_slots` with transformers' SDPA attention in one call: the beams of an input become
    `beams` query heads per key/value head (`enable_gqa`), so each (input, head)'s keys and values are
    read once for its beams while every query row is still one query of length 1 against them, as in
    its slot's call. The additive mask is made as `sdpa_attention_forward` makes it."""
    from transformers.integrations.sdpa_attention import create_position_bias_mask

    rows, heads, _, size = query.shape
    inputs = rows // beams
    mask = attention_mask
    if kwargs.get("position_bias") is not None:
        mask = create_position_bias_mask(kwargs["position_bias"], attention_mask, False, query, key)
    # query rows (input, beam) x heads -> per input, heads x beams query heads (head h's beams together)
    q = query.reshape(inputs, beams, heads, size).transpose(1, 2).reshape(inputs, heads * beams, 1, size)
    if mask is not None:
        length = mask.shape[-1]
        if mask.shape[0] == rows:  # [rows, 1 or heads, 1, L]
            mask = mask.expand(rows, heads, 1, length).reshape(inputs, beams, heads, length)
            mask = mask.transpose(1, 2).reshape(inputs, heads * beams, 1, length)
        else:  # [1, 1 or heads, 1, L]: the same for every row
            mask = mask.expand(1, heads, 1, length).repeat_interleave(beams, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(
        q,
        key,
        value,
        attn_mask=mask,
        dropout_p=kwargs.get("dropout", 0.0),
        scale=kwargs.get("scaling"),
        enable_gqa=True,
    )
    # [inputs, heads x beams, 1, size] -> the rows' order, [rows, 1, heads, size] as the slots give it
    return out.reshape(inputs, heads, beams, size).transpose(1, 2).reshape(rows, 1, heads, size)


def _grouped_query_applies(attend: Callable, query: torch.Tensor, kwargs: dict) -> bool:
    """Whether `_grouped_query` can stand for the slots' calls: transformers' SDPA attention, one
    query per row, no dropout (whether it gives their numbers is the exactness gate's to say)."""
    return (
        attend is _sdpa_forward()
        and query.shape[2] == 1
        and set(kwargs) <= _GQA_KWARGS
        and kwargs.get("dropout", 0.0) == 0.0
    )


def _register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    if ATTENTION_NAME not in ALL_ATTENTION_FUNCTIONS:
        AttentionInterface.register(ATTENTION_NAME, shared_cross_attention)
    if SELF_ATTENTION_NAME not in ALL_ATTENTION_FUNCTIONS:
        AttentionInterface.register(SELF_ATTENTION_NAME, grouped_self_attention)


def _reorder_self_attention_only(cache: Any, beam_idx: torch.Tensor) -> Any:
    """The beam reorder of an encoder-decoder cache, without copying the cross-attention part
    (identical across the beams of an input, and beams never move between inputs)."""
    inner = getattr(cache, "self_attention_cache", cache)
    inner.reorder_cache(beam_idx)
    return cache


def attach_shared_cross_attention(model: torch.nn.Module) -> SharedCrossAttention | None:
    """Hook a T5's cross-attention projections (see the module docstring); None for another model."""
    decoder = getattr(model, "decoder", None)
    blocks = getattr(decoder, "block", None)
    if getattr(getattr(model, "config", None), "model_type", None) not in {"t5", "mt5"} or not blocks:
        return None
    shared = SharedCrossAttention(model)
    model._q2_shared_cross = shared  # read by the FLOP meter
    return shared
