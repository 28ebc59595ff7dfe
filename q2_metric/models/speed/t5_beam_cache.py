"""A decoder self-attention cache for beam search that grows in place and reorders only moved rows.

transformers' `DynamicLayer` appends each step's keys and values with `torch.cat` (a new tensor
holding the whole cache, every layer, every step) and reorders the beams with `index_select` (a
second copy of all of it). At the benchmark's shapes (16 inputs x 5 beams, T5-base, questions of
about 20 tokens) the two were about a fifth of QG's time (`benchmarks/RESULTS.md`, issue 42).

`GrowingLayer` keeps each layer's keys and values in a buffer with room for more positions
(doubled when full), writes a step's keys and values into the next position, and hands the
attention a view of the positions written so far. The beam reorder copies only the rows whose
beam continues another row (`moved = beam_idx != row`); a row that continues itself stays where it
is. The values the attention sees are the same numbers as `DynamicLayer`'s, so the questions are
the same token for token (`tests/unit/models/speed/test_t5_beam_cache.py` compares the two caches'
ids and scores bit for bit).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer

FIRST_CAPACITY = 16  # positions; doubled whenever a step needs more


class GrowingLayer(DynamicLayer):
    """One decoder layer's self-attention keys and values, `[rows, heads, capacity, head_dim]`,
    of which the first `length` positions are filled."""

    def __init__(self, capacity: int = FIRST_CAPACITY) -> None:
        super().__init__()
        self.capacity = max(1, capacity)
        self.length = 0
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        rows, heads, _, dim = key_states.shape
        self.device = key_states.device
        self._key_buffer = key_states.new_empty((rows, heads, self.capacity, dim))
        self._value_buffer = value_states.new_empty((rows, heads, self.capacity, value_states.shape[-1]))
        self.is_initialized = True

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        for name in ("_key_buffer", "_value_buffer"):
            old = getattr(self, name)
            new = old.new_empty((*old.shape[:2], capacity, old.shape[3]))
            new[:, :, : self.length] = old[:, :, : self.length]
            setattr(self, name, new)
        self.capacity = capacity

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's keys and values after the cached ones; the views of all of them."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            self._grow(end)
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[:, :, self.length : end] = key_states
        self._value_buffer[:, :, self.length : end] = value_states
        self.length = end
        self.keys = self._key_buffer[:, :, :end]
        self.values = self._value_buffer[:, :, :end]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Row r takes row beam_idx[r]'s keys and values; rows continuing themselves are not copied."""
        if self.length == 0 or self._key_buffer is None or self._value_buffer is None:
            return
        index = beam_idx.to(self._key_buffer.device)
        moved = torch.nonzero(index != torch.arange(len(index), device=index.device)).squeeze(1)
        if moved.numel() == 0:
            return
        source = index[moved]
        for buffer in (self._key_buffer, self._value_buffer):
            filled = buffer[:, :, : self.length]
            filled[moved] = filled[source]  # the right side is gathered first: sources are read intact
        self.keys = self._key_buffer[:, :, : self.length]
        self.values = self._value_buffer[:, :, : self.length]

    def reset(self) -> None:
        self._key_buffer = self._value_buffer = None
        self.length = 0
        super().reset()

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("GrowingLayer is a beam-search cache: it is never cropped")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise NotImplementedError("GrowingLayer is a beam-search cache: its rows are set at the first step")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise NotImplementedError("GrowingLayer is a beam-search cache: rows are reordered, not selected")


def growing_cache(config: Any, capacity: int = FIRST_CAPACITY) -> DynamicCache:
    """A `DynamicCache` for the decoder of `config` whose layers are `GrowingLayer`s (as it is when
    a layer is of another kind than `DynamicLayer`, e.g. a sliding window)."""
    cache = DynamicCache(config=config)
    if cache.layers and all(type(layer) is DynamicLayer for layer in cache.layers):
        # T5's config gives the encoder's layer count; its decoder may have another
        layers = getattr(config, "num_decoder_layers", None) or len(cache.layers)
        cache.layers = [GrowingLayer(capacity) for _ in range(layers)]
    return cache
