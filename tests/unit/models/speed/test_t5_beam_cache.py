"""The beam-search self-attention cache that grows in place (`t5_beam_cache`).

Expected values come from transformers' own `DynamicCache` (append by `torch.cat`, reorder by
`index_select`) on the same model and inputs, and from torch's `index_select` for the reorder:
the new cache must give the same logits at every decoder step, bit for bit, and so the same ids.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from support.t5 import EOS, PAD, random_t5
from transformers import T5ForConditionalGeneration

from q2_metric import Q2Scorer
from q2_metric.models.hf_qg import HFQuestionGenerator, decoder_steps
from q2_metric.models.paper.beam_search import beam_search
from q2_metric.models.speed.t5_beam_cache import GrowingLayer, growing_cache
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention

VOCAB = 40


def test_the_layer_grows_and_reorders_as_index_select_does():
    torch.manual_seed(0)
    layer, keys, values = GrowingLayer(capacity=1), [], []
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


def _t5(seed: int, eos_bias: float) -> T5ForConditionalGeneration:
    """A random T5 whose end token is likely enough that beams end at different steps."""
    return random_t5(seed, eos_bias, vocab=VOCAB, d_model=32, d_kv=8, d_ff=64)


def _inputs(seed: int, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 15, (batch,), generator=g).tolist()
    width = max(lengths)
    ids = torch.full((batch, width), PAD)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(2, VOCAB, (n,), generator=g)
        mask[i, :n] = 1
    return ids, mask


def _search(model, ids, mask, beams: int, max_length: int, in_place: bool, shared: bool):
    """(returned ids, every step's logits) of the 3.2 beam search on `model`."""
    seen: list[torch.Tensor] = []
    step = decoder_steps(
        model, ids, mask, beams, share_cross=shared, max_length=max_length, in_place_cache=in_place
    )

    def recorded(tokens, beam_idx):
        logits = step(tokens, beam_idx)
        seen.append(logits.clone())
        return logits

    out = beam_search(
        recorded,
        len(ids),
        num_beams=beams,
        max_length=max_length,
        num_return_sequences=beams,
        no_repeat_ngram_size=3,
        early_stopping=True,
        start_id=PAD,
        eos_id=EOS,
        pad_id=PAD,
    )
    return out, seen


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize(("seed", "beams", "max_length"), [(0, 5, 24), (1, 4, 40), (2, 2, 9), (3, 5, 20)])
def test_same_logits_at_every_step_and_same_ids_as_transformers_cache(
    seed, beams, max_length, shared, time_major, monkeypatch
):
    import q2_metric.models.hf_qg as hf_qg

    monkeypatch.setattr(GrowingLayer, "time_major", time_major)  # either memory order: the same numbers
    monkeypatch.setattr(hf_qg, "FIRST_CAPACITY", 8)  # buffers outgrown
    model = _t5(seed, eos_bias=0.4)
    share = attach_shared_cross_attention(model) if shared else None
    lengths_seen: set[int] = set()
    for batch in (1, 2, 3, 7):
        ids, mask = _inputs(10 * seed + batch, batch)
        with torch.inference_mode(), share.sharing(beams) if share else contextlib.nullcontext():
            old, old_logits = _search(model, ids, mask, beams, max_length, in_place=False, shared=shared)
            new, new_logits = _search(model, ids, mask, beams, max_length, in_place=True, shared=shared)
        assert new == old
        assert len(new_logits) == len(old_logits)
        assert all(torch.equal(a, b) for a, b in zip(new_logits, old_logits))
        lengths_seen |= {len(h) for hyps in new for h in hyps}
    # the comparison covered beams ending early (with the end token) and at the length limit, and
    # capacities outgrown (the first buffer holds 8 positions here)
    assert max_length in lengths_seen and min(lengths_seen) < max_length
    assert len(lengths_seen) >= 3


def test_inputs_that_end_at_different_steps():
    """A batch whose inputs finish at different steps (done inputs keep their rows): the same
    logits and ids with both caches."""
    model = _t5(6, eos_bias=2.0)
    ids, mask = _inputs(99, 6)
    with torch.inference_mode():
        old, old_logits = _search(model, ids, mask, 3, 30, in_place=False, shared=False)
        new, new_logits = _search(model, ids, mask, 3, 30, in_place=True, shared=False)
    assert new == old and all(torch.equal(a, b) for a, b in zip(new_logits, old_logits))
    ends = {max(len(h) for h in hyps) for hyps in new}
    assert len(ends) >= 4  # the inputs' longest hypotheses end at different steps (and at the limit)


def test_the_pipeline_asks_the_same_questions_on_the_sample(tiny_config, rows):
    responses = [r["response"] for r in rows]
    knowledge = [r["knowledge"] for r in rows]
    scorer = Q2Scorer(tiny_config).load()
    assert isinstance(scorer.qg, HFQuestionGenerator) and scorer.qg.in_place_cache
    new = scorer.score(responses, knowledge)
    scorer.qg.in_place_cache = False
    old = scorer.score(responses, knowledge)
    assert sum(len(r.questions) for r in new.responses) > 40
    assert [r.questions for r in new.responses] == [r.questions for r in old.responses]
    assert new.scores == old.scores


def test_rows_leave_as_index_select_takes_them():
    """Merged steps drop an ended batch's rows: a reorder with fewer rows keeps those rows' keys and
    values (as `index_select` takes them) and the layer goes on growing."""
    g = torch.Generator().manual_seed(7)
    layer = GrowingLayer(capacity=2)
    keys, values = (torch.randn((6, 2, 3, 4), generator=g) for _ in range(2))
    for t in range(3):
        layer.update(keys[:, :, t : t + 1], values[:, :, t : t + 1])
    index = torch.tensor([4, 4, 0, 1])
    layer.reorder_cache(index)
    assert torch.equal(layer.keys, keys[index]) and torch.equal(layer.values, values[index])
    more = torch.randn((4, 2, 2, 4), generator=g)
    k, v = layer.update(more, -more)
    assert torch.equal(k, torch.cat([keys[index], more], dim=2))
    assert torch.equal(v, torch.cat([values[index], -more], dim=2))
    layer.reorder_cache(torch.tensor([1, 0, 2, 3]))
    assert torch.equal(layer.keys, torch.cat([keys[index], more], dim=2)[[1, 0, 2, 3]])
