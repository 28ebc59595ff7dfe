"""T5 beam search with the cross-attention keys and values made once per input, not once per beam.

transformers' `generate` copies each encoder output `num_beams` times (rows i*beams to
i*beams+beams-1 belong to input i). The decoder's first step then projects those identical rows
to cross-attention keys and values once per beam (about a fifth of a question's model FLOPs at the
paper's shapes), and every later step reorders the cross-attention cache with the beams, copying
all of it, although a beam is only ever replaced by a beam of the same input, whose keys and
values are the same.

`SharedCrossAttention` hooks the `k` and `v` projections of every cross-attention: inside
`sharing(beams)` they run on one row per input and the result is copied to its beams, and the
beam reorder leaves the cross-attention cache as it is (the project's 3.2 beam search,
`hf_qg.decoder_steps`, reorders the self-attention cache alone; transformers' `generate` calls the
model's `_reorder_cache`, set here). Outside that block the hooks do nothing.
The values are the same as on the plain path, row for row, so the generated ids and scores are
too (tested bit for bit); the signature does not change.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch


class SharedCrossAttention:
    """Hooks on one T5's cross-attention projections; `beams` is 1 (inactive) outside `sharing`."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.beams = 1
        self.projections = [getattr(block.layer[1].EncDecAttention, name)
                            for block in model.decoder.block for name in ("k", "v")]
        for linear in self.projections:
            linear.register_forward_pre_hook(self._one_row_per_input)
            linear.register_forward_hook(self._copy_to_beams)

    def _one_row_per_input(self, module: torch.nn.Module, args: tuple) -> tuple | None:
        x = args[0]
        if self.beams > 1 and x.dim() == 3 and x.shape[0] % self.beams == 0:
            module._q2_sliced = True
            return (x[::self.beams],)
        module._q2_sliced = False
        return None

    def _copy_to_beams(self, module: torch.nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor | None:
        return output.repeat_interleave(self.beams, dim=0) if module._q2_sliced else None

    @contextlib.contextmanager
    def sharing(self, beams: int) -> Iterator[None]:
        """Within this block, `generate` with `beams` beams shares each input's keys and values."""
        if beams <= 1:
            yield
            return
        self.beams = beams
        self.model._reorder_cache = _reorder_self_attention_only  # generate prefers the model's own
        try:
            yield
        finally:
            self.beams = 1
            del self.model._reorder_cache


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
