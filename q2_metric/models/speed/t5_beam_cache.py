"""A decoder self-attention cache for beam search that writes into preallocated buffers.

transformers' `DynamicLayer` appends each step's keys and values with `torch.cat` (a new tensor
holding the whole cache, every layer, every step) and reorders the beams with `index_select` (a
second copy of all of it, into another new tensor).

`GrowingLayer` keeps each layer's keys and values in two buffers with room for more positions
(doubled when full). A step's keys and values are written into the next position of the current
buffer; the beam reorder `index_select`s the filled positions into the other buffer, which becomes
the current one (nothing to copy when every row continues itself); the attention gets a view of
the filled positions. One copy per step instead of two, and no allocation. The values the
attention sees are the same numbers as `DynamicLayer`'s, so the logits are the same at every step
and the questions the same token for token (`tests/unit/models/speed/test_t5_beam_cache.py`).

The buffers are time-major in memory (`[rows, capacity, heads, head_dim]`, seen by the attention
as `[rows, heads, capacity, head_dim]`): a row's filled positions are one block, so a step's write
and a reorder's copy move whole blocks instead of one small piece per head. The attention kernel
reads the same values through other strides and gives the same numbers (tested against
`DynamicLayer`'s contiguous tensors, bit for bit).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

# positions; doubled whenever a step needs more. The searches ask for their `max_length` when it
# is smaller (no copy to a bigger buffer, no room never used); 64: questions rarely outgrow it, and
# only the pages of the positions written take memory
FIRST_CAPACITY = 64


class GrowingLayer(DynamicLayer):
    """One decoder layer's self-attention keys and values: two pairs of `[rows, heads, capacity,
    head_dim]` buffers, the current one filled up to `length` positions."""

    def __init__(self, capacity: int = FIRST_CAPACITY, time_major: bool = True) -> None:
        super().__init__()
        self.capacity = max(1, capacity)
        self.time_major = time_major  # the buffers' memory order (False: heads first, for comparisons)
        self.length = 0
        self._current: tuple[torch.Tensor, torch.Tensor] | None = None
        self._spare: tuple[torch.Tensor, torch.Tensor] | None = None

    def _new_pair(self, like: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        key, value = like
        if not self.time_major:
            return (
                key.new_empty((key.shape[0], key.shape[1], self.capacity, key.shape[3])),
                value.new_empty((value.shape[0], value.shape[1], self.capacity, value.shape[3])),
            )
        # [rows, capacity, heads, head_dim] seen as [rows, heads, capacity, head_dim]: a row's filled
        # positions are one block of memory (a step's write and a reorder's copy move whole blocks)
        return (
            key.new_empty((key.shape[0], self.capacity, key.shape[1], key.shape[3])).transpose(1, 2),
            value.new_empty((value.shape[0], self.capacity, value.shape[1], value.shape[3])).transpose(1, 2),
        )

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self._current = self._new_pair((key_states, value_states))
        self._spare = None  # made at the first reorder
        self.is_initialized = True

    def _grow(self, needed: int) -> None:
        assert self._current is not None
        while self.capacity < needed:
            self.capacity *= 2
        grown = self._new_pair(self._current)
        for new, old in zip(grown, self._current):
            new[:, :, : self.length] = old[:, :, : self.length]
        self._current, self._spare = grown, None

    def _expose(self) -> tuple[torch.Tensor, torch.Tensor]:
        assert self._current is not None
        keys, values = self._current[0][:, :, : self.length], self._current[1][:, :, : self.length]
        self.keys, self.values = keys, values
        return keys, values

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's keys and values after the cached ones; the views of all of them."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            self._grow(end)
        assert self._current is not None
        self._current[0][:, :, self.length : end] = key_states
        self._current[1][:, :, self.length : end] = value_states
        self.length = end
        return self._expose()

    def get_seq_length(self) -> int:
        return self.length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Row r takes row beam_idx[r]'s keys and values (one `index_select` into the spare buffer;
        new buffers when `beam_idx` has fewer rows: the rows of merged steps' ended batches leave)."""
        if self.length == 0 or self._current is None:
            return
        index = beam_idx.to(self._current[0].device)
        if len(index) != self._current[0].shape[0]:  # rows leave (merged steps): buffers of the rows left
            shrunk = tuple(
                torch.index_select(source[:, :, : self.length], 0, index) for source in self._current
            )
            self._current = self._new_pair(shrunk)
            for new, old in zip(self._current, shrunk):
                new[:, :, : self.length] = old
            self._spare = None
            self._expose()
            return
        if torch.equal(index, torch.arange(len(index), device=index.device)):
            return
        if self._spare is None:
            self._spare = self._new_pair(self._current)
        for source, target in zip(self._current, self._spare):
            torch.index_select(source[:, :, : self.length], 0, index, out=target[:, :, : self.length])
        self._current, self._spare = self._spare, self._current
        self._expose()

    def reset(self) -> None:
        self._current = self._spare = None
        self.length = 0
        super().reset()

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("GrowingLayer is a beam-search cache: it is never cropped")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("GrowingLayer is a beam-search cache: its rows are set at the first step")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise NotImplementedError("GrowingLayer is a beam-search cache: rows are reordered, not selected")


def growing_cache(config: Any, capacity: int = FIRST_CAPACITY, time_major: bool = True) -> DynamicCache:
    """A `DynamicCache` for the decoder of `config` whose layers are `GrowingLayer`s (as it is when
    a layer is of another kind than `DynamicLayer`, e.g. a sliding window)."""
    cache = DynamicCache(config=config)
    if cache.layers and all(type(layer) is DynamicLayer for layer in cache.layers):
        # T5's config gives the encoder's layer count; its decoder may have another
        layers = getattr(config, "num_decoder_layers", None) or len(cache.layers)
        cache.layers = [GrowingLayer(capacity, time_major) for _ in range(layers)]
    return cache
