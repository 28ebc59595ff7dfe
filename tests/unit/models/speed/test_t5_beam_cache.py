"""The beam-search self-attention cache that grows in place (`t5_beam_cache`).

Expected values come from transformers' own `DynamicCache` (append by `torch.cat`, reorder by
`index_select`) on the same model and inputs, and from torch's `index_select` for the reorder:
the layer's keys and values after every update and reorder are theirs, bit for bit. (Whether the
fast path's steps with this cache give the reference path's logits is its exactness gate's to say:
tests/unit/models/speed/test_qg_fast.py.)
"""

from __future__ import annotations

import pytest
import torch

from q2_metric.models.speed.t5_beam_cache import GrowingLayer, growing_cache


@pytest.mark.parametrize("time_major", [True, False])
def test_the_layer_grows_and_reorders_as_index_select_does(time_major):
    torch.manual_seed(0)
    layer, keys, values = GrowingLayer(capacity=1, time_major=time_major), [], []
    for step in range(5):  # 1 -> 2 -> 4 -> 8 positions: three growths
        k, v = torch.randn(6, 2, 1, 3), torch.randn(6, 2, 1, 3)
        keys.append(k)
        values.append(v)
        got_k, got_v = layer.update(k, v)
        want_k, want_v = torch.cat(keys, dim=2), torch.cat(values, dim=2)
        assert torch.equal(got_k, want_k) and torch.equal(got_v, want_v)
        assert layer.get_seq_length() == step + 1
        # reorders with rows that stay, rows that move, a row copied twice, a swap; none at all
        idx = torch.tensor([[0, 0, 2, 5, 4, 3], [1, 0, 2, 3, 3, 5], [0, 1, 2, 3, 4, 5]][step % 3])
        layer.reorder_cache(idx)
        keys = [x.index_select(0, idx) for x in keys]
        values = [x.index_select(0, idx) for x in values]
        assert torch.equal(layer.keys, torch.cat(keys, dim=2))
        assert torch.equal(layer.values, torch.cat(values, dim=2))
    assert layer.capacity == 8


def test_only_plain_layers_are_replaced(tiny_models):
    from transformers import AutoConfig

    cache = growing_cache(AutoConfig.from_pretrained(tiny_models["qg"]))
    assert cache.layers and all(isinstance(layer, GrowingLayer) for layer in cache.layers)


def test_rows_leave_with_a_shorter_reorder():
    layer = GrowingLayer(capacity=4)
    k = torch.arange(6 * 2 * 3, dtype=torch.float).view(6, 2, 1, 3)
    layer.update(k, -k)
    idx = torch.tensor([4, 1, 1])
    layer.reorder_cache(idx)
    assert torch.equal(layer.keys, k.index_select(0, idx)) and torch.equal(
        layer.values, -k.index_select(0, idx)
    )
