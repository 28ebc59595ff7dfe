"""The decoder steps of several encoder batches run as one beam search (T5, beam search).

Each decoder step of a QG batch multiplies only `inputs x beams` rows (80 at the defaults) by
every decoder weight: the products stream the weights for little work. A larger QG batch would
give them more rows, but it pads and groups the encoder's inputs differently, which changes the
encoder's rounding and so the questions.

`merged_decoder_steps` keeps every encoder batch as it is (the same inputs, the same padding: the
encoder outputs and the cross-attention keys and values are computed exactly as by its own
`hf_qg.decoder_steps`), then runs the decoder steps of all of them together: each step's Linear
layers (self-attention, cross-attention queries and outputs, feed-forward, LM head) see the rows
of every batch at once, while the cross-attention of each batch runs against its own keys, values
and mask (`t5_shared_cross.CrossGroup`), by the same calls as on its own. The rest of a step works
row by row (RMS norm, self-attention over each row's own cache, log-softmax, each input's top-k),
so each row's logits are the same numbers as in its own batch's beam search when a product's rows
do not change its rounding: with BLAS that holds from some tens of rows (`MIN_ROWS`, measured at
T5's shapes), so only batches with at least that many rows are merged
(`tests/unit/models/speed/test_t5_merged_decoder.py` checks the ids bit for bit).

Batches may have their own length limits (`beam_search`'s groups): when one ends, `beam_idx`
drops its rows from the self-attention cache and the steps run the rows left, with the
cross-attention of the batches left.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from q2_metric.models.speed.t5_beam_cache import FIRST_CAPACITY, growing_cache
from q2_metric.models.speed.t5_shared_cross import CrossGroup, SharedCrossAttention

# a product's per-row result was the same from 40 rows up (T5 shapes, 1 and 2 threads) and not at
# 5 or 10: a batch whose own steps ran fewer rows is not merged
MIN_ROWS = 40
# the most rows of merged steps (the encoder batches' inputs x beams): 4 full batches at the
# defaults (on the 2-core Xeon of benchmarks/RESULTS.md, a 3072 -> 768 product rounds its first rows
# otherwise from 385 rows on)
MERGED_ROWS = 320


def rows_independent(
    model: torch.nn.Module, sizes: Sequence[int], memo: dict[tuple[int, ...], torch.Tensor] | None = None
) -> bool:
    """Whether every Linear layer of the decoder and the LM head gives each batch's rows (`sizes`
    rows each, in order) the same numbers in one product of all of them as in its own product,
    checked on random rows with the current threads (BLAS picks its kernel by shape, not values).
    A batch of n rows gets the first n rows of one random matrix per layer shape; `memo` keeps
    their own products (by shape, threads and n) from one check to the next of the same model."""
    layers: dict[tuple[int, int], torch.nn.Linear] = {}
    for module in [*model.decoder.modules(), model.lm_head]:
        if isinstance(module, torch.nn.Linear):
            layers.setdefault((module.in_features, module.out_features), module)
    memo = {} if memo is None else memo
    for (d_in, d_out), layer in layers.items():
        x = torch.randn((max(sizes), d_in), generator=torch.Generator().manual_seed(d_in)).to(layer.weight)
        merged, start = layer(torch.cat([x[:n] for n in sizes])), 0
        for n in sizes:
            key = (d_in, d_out, torch.get_num_threads(), n)
            if key not in memo:
                memo[key] = layer(x[:n])
            if not torch.equal(merged[start : start + n], memo[key]):
                return False
            start += n
    return True


def mergeable(inputs: int, beams: int) -> bool:
    """Whether a batch of `inputs` inputs may run its decoder steps merged with others."""
    return beams > 1 and inputs * beams >= MIN_ROWS


def _group(
    model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, beams: int
) -> tuple[CrossGroup, int]:
    """One encoder batch's cross-attention keys, values and mask, computed as its own decoder steps
    compute them (the encoder states repeated per beam, the first beam's rows projected, the cache's
    copy), and its padded length."""
    from transformers.cache_utils import DynamicLayer
    from transformers.masking_utils import create_bidirectional_mask

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
) -> Iterator[Callable[..., torch.Tensor]]:
    """The `step` of `beam_search` over the inputs of all `batches` (`(ids, mask)` each, in order;
    rows of batch 0's inputs first), within `shared.sharing(beams)`: each batch's encoder and
    cross-attention as in `hf_qg.decoder_steps`, the decoder's other work on all rows at once.
    `step(tokens, beam_idx, running)` runs the rows of the batches in `running` (all of them when
    None; `beam_search`'s groups): when batches leave, `beam_idx` drops their rows from the cache."""
    from transformers.cache_utils import DynamicCache, DynamicLayer, EncoderDecoderCache
    from transformers.modeling_outputs import BaseModelOutput

    made = [_group(model, ids, mask, beams) for ids, mask in batches]
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
    cache = EncoderDecoderCache(growing_cache(model.config, capacity), cross)
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

    run(list(range(len(groups))))
    try:
        yield step
    finally:
        shared.groups = None
