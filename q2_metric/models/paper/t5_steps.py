"""The reference path's decoder step for `beam_search`: transformers 3.2's beam search fed its T5."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch

Step = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def encoder_rows(
    model: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor,
    beams: int,
    hidden: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder's output and mask as 3.2's `generate` fed them to the decoder: the encoder once
    per input, each input's output and mask copied to its `beams` rows. `hidden`: the encoder's
    output, when given (the exactness gate's random states), else the encoder runs on `ids`."""
    if hidden is None:
        hidden = model.get_encoder()(input_ids=ids, attention_mask=mask, return_dict=True).last_hidden_state
    return hidden.repeat_interleave(beams, dim=0), mask.repeat_interleave(beams, dim=0)


def cached_steps(model: torch.nn.Module, hidden: torch.Tensor, mask: torch.Tensor | None) -> Step:
    """The `step` of `beam_search` over rows whose encoder output and mask are `hidden` and `mask`
    (`encoder_rows`): each step feeds the rows' last tokens with the whole cache (self- and
    cross-attention keys and values, one copy per row), reordered by the beams first."""
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache
    from transformers.modeling_outputs import BaseModelOutput

    encoder = BaseModelOutput(last_hidden_state=hidden)
    cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    # the keyword was `past_key_values` before transformers 5.2x, `cache` since
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def step(tokens: torch.Tensor, beam_idx: torch.Tensor | None) -> torch.Tensor:
        if beam_idx is not None:
            cache.reorder_cache(beam_idx)
        out = model(
            encoder_outputs=encoder,
            attention_mask=mask,
            decoder_input_ids=tokens[:, None],
            use_cache=True,
            return_dict=True,
            **{name: cache},
        )
        return out.logits[:, -1, :]

    return step


def decoder_steps(
    model: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor,
    beams: int,
    hidden: torch.Tensor | None = None,
) -> Step:
    """The `step` of `beam_search` for an encoder-decoder model, as 3.2's `generate` ran it
    (`encoder_rows`, then `cached_steps`)."""
    return cached_steps(model, *encoder_rows(model, ids, mask, beams, hidden))
