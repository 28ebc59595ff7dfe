"""The decoder steps of several encoder batches run as one (T5, beam search): the fast question
generator's step (`qg_fast`).

Each decoder step of a QG batch multiplies only `inputs x beams` rows (80 at the defaults) by
every decoder weight: the products stream the weights for little work. A larger QG batch would
give them more rows, but it pads and groups the encoder's inputs differently, which changes the
encoder's rounding and so the questions.

`merged_decoder_steps` keeps every encoder batch as it is (the same inputs, the same padding: the
encoder outputs and the cross-attention keys and values are computed as by its own steps), then
runs the decoder steps of all of them together: each step's Linear layers (self-attention,
cross-attention queries and outputs, feed-forward, LM head) and norms see the rows of every batch
at once, while each batch's attention runs on its own rows by the same calls as on its own
(`t5_shared_cross`: the cross-attention against its own keys, values and mask, one row per input;
the self-attention over its own rows of the cache). With one batch these are the fast path's own
steps of that batch. Whether they give the reference path's logits on this machine is checked
before use (`qg_fast.ExactnessGate`).

Batches may have their own length limits: when one ends, `beam_idx` drops its rows from the
self-attention cache and the steps run the rows left, with the attention of the batches left.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from q2_metric.models.speed.t5_beam_cache import FIRST_CAPACITY, growing_cache
from q2_metric.models.speed.t5_shared_cross import CrossGroup, SharedCrossAttention


def _group(
    model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, beams: int, hidden: torch.Tensor | None
) -> tuple[CrossGroup, int]:
    """One encoder batch's cross-attention keys, values and mask, computed once per input (the
    encoder states of its first beam's row projected, the cache's copy), and its padded length."""
    from transformers.cache_utils import DynamicLayer
    from transformers.masking_utils import create_bidirectional_mask

    if hidden is None:
        hidden = model.get_encoder()(input_ids=ids, attention_mask=mask, return_dict=True).last_hidden_state
    repeated = hidden.repeat_interleave(beams, dim=0)
    one_row = repeated[::beams]
    keys, values = [], []
    for block in model.decoder.block:
        attention = block.layer[1].EncDecAttention
        shape = (*one_row.shape[:-1], -1, attention.key_value_proj_dim)
        layer = DynamicLayer()
        k, v = layer.update(
            attention.k(one_row).view(shape).transpose(1, 2), attention.v(one_row).view(shape).transpose(1, 2)
        )
        keys.append(k)
        values.append(v)
    rows = len(ids) * beams
    embeds = hidden.new_empty((rows, 1, hidden.shape[-1]))
    cross_mask = create_bidirectional_mask(
        config=model.decoder.config,
        inputs_embeds=embeds,
        attention_mask=mask.repeat_interleave(beams, dim=0),
        encoder_hidden_states=repeated,
    )
    return CrossGroup(rows=rows, keys=keys, values=values, mask=cross_mask), ids.shape[1]


@contextlib.contextmanager
def merged_decoder_steps(
    model: torch.nn.Module,
    shared: SharedCrossAttention,
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    beams: int,
    max_length: int | None = None,
    *,
    grouped_query: bool = True,
    in_place_cache: bool = True,
    time_major: bool = True,
    encoded: Sequence[torch.Tensor] | None = None,
) -> Iterator[Callable[..., torch.Tensor]]:
    """The step over the inputs of all `batches` (`(ids, mask)` each, in order; rows of batch 0's
    inputs first): `step(tokens, beam_idx, running)` runs the rows of the batches in `running`
    (indices, in order; all of them when None), `beam_idx` indexing the rows of its previous call
    (when batches leave, it drops their rows from the cache). `max_length` (the decoder start token
    counted) sizes the in-place cache's first buffer (`t5_beam_cache`; `in_place_cache=False`:
    transformers' cache, for comparisons); `grouped_query`: the beam slots' cross-attention in one
    call (`t5_shared_cross`); `encoded`: each batch's encoder output, when given (the exactness
    gate's random states), else the encoder runs on its ids."""
    from transformers.cache_utils import DynamicCache, DynamicLayer, EncoderDecoderCache
    from transformers.modeling_outputs import BaseModelOutput

    states = list(encoded) if encoded is not None else [None] * len(batches)
    made = [_group(model, ids, mask, beams, hidden) for (ids, mask), hidden in zip(batches, states)]
    groups = [g for g, _ in made]
    longest = max(length for _, length in made)
    first = groups[0].keys[0]
    cross = DynamicCache()
    for _ in model.decoder.block:
        layer = DynamicLayer()
        layer.is_initialized, layer.dtype, layer.device = True, first.dtype, first.device
        layer.keys = layer.values = first.new_zeros((1, 1, longest, 1))  # set by `run`
        cross.layers.append(layer)
    capacity = min(max_length or FIRST_CAPACITY, FIRST_CAPACITY)
    own = growing_cache(model.config, capacity, time_major) if in_place_cache else DynamicCache()
    cache = EncoderDecoderCache(own, cross)
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    inputs: dict[str, Any] = {}

    def run(running: list[int]) -> None:
        """The groups whose rows the steps run: the stand-ins of their row count."""
        rows = sum(groups[k].rows for k in running)
        # the model needs encoder states and a mask of one shape: stand-ins (the grouped
        # cross-attention reads each batch's own); the stand-in keys give T5 the longest length for
        # its position bias
        states = first.new_zeros((1, 1, model.config.d_model)).expand(rows, longest, -1)
        stand_in = first.new_zeros((1, 1, 1, 1)).expand(
            rows // beams, first.shape[1], longest, first.shape[3]
        )
        for layer in cross.layers:
            layer.keys, layer.values = stand_in, stand_in
        inputs["encoder_outputs"] = BaseModelOutput(last_hidden_state=states)
        inputs["attention_mask"] = torch.ones((rows, longest), dtype=torch.long, device=first.device)
        shared.groups = [groups[k] for k in running]
        inputs["running"] = list(running)

    def step(
        tokens: torch.Tensor, beam_idx: torch.Tensor | None, running: list[int] | None = None
    ) -> torch.Tensor:
        if running is None:
            running = list(range(len(groups)))
        if running != inputs.get("running"):
            run(running)
        if beam_idx is not None:
            cache.self_attention_cache.reorder_cache(beam_idx)
        out = model(
            encoder_outputs=inputs["encoder_outputs"],
            attention_mask=inputs["attention_mask"],
            decoder_input_ids=tokens[:, None],
            use_cache=True,
            return_dict=True,
            **{name: cache},
        )
        return out.logits[:, -1, :]

    with shared.sharing(beams):  # (leaves the sharing state it found: a gate's check may run inside)
        run(list(range(len(groups))))
        shared.grouped_query = grouped_query
        yield step
