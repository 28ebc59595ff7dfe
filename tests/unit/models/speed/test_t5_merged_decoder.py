"""The decoder steps of several encoder batches run as one beam search (`t5_merged_decoder`).

Expected values: each batch's own beam search (`hf_qg.decoder_steps`, the current path, itself
checked against transformers' beam search and the 3.2 recorded beams in test_t5_shared_cross.py
and test_t5_beam_cache.py), ids and every step's logits compared bit for bit.
"""

from __future__ import annotations

import pytest
import torch
from support.t5 import EOS, PAD, random_t5
from transformers import T5ForConditionalGeneration

from q2_metric import Q2Scorer
from q2_metric.models.hf_qg import HFQuestionGenerator, decoder_steps
from q2_metric.models.paper.beam_search import beam_search
from q2_metric.models.speed.t5_merged_decoder import MIN_ROWS, mergeable, merged_decoder_steps
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention

VOCAB = 300


def _t5(seed: int, eos_bias: float) -> T5ForConditionalGeneration:
    return random_t5(seed, eos_bias, vocab=VOCAB, d_model=64, d_kv=16, d_ff=128)


def _batch(g: torch.Generator, batch: int, low: int, high: int) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.randint(low, high, (batch,), generator=g).tolist()
    width = max(lengths)
    ids = torch.full((batch, width), PAD)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(2, VOCAB, (n,), generator=g)
        mask[i, :n] = 1
    return ids, mask


def _search(step, inputs: int, beams: int, max_length: int, seen: list[torch.Tensor]) -> list:
    def recorded(tokens, beam_idx):
        logits = step(tokens, beam_idx)
        seen.append(logits.clone())
        return logits

    return beam_search(
        recorded,
        inputs,
        num_beams=beams,
        max_length=max_length,
        num_return_sequences=2,
        no_repeat_ngram_size=3,
        early_stopping=False,
        start_id=PAD,
        eos_id=EOS,
        pad_id=PAD,
    )


@pytest.mark.parametrize(
    ("seed", "beams", "sizes", "max_length", "eos_bias"),
    [(0, 5, (8, 10, 9), 20, 2.0), (1, 4, (12, 10), 30, 1.5), (2, 5, (9, 8, 8, 11), 16, 2.5)],
)
def test_same_ids_and_logits_as_each_batch_alone(seed, beams, sizes, max_length, eos_bias):
    model = _t5(seed, eos_bias=eos_bias)
    shared = attach_shared_cross_attention(model)
    g = torch.Generator().manual_seed(seed)
    # batches of different padded lengths (their own cross-attention lengths)
    batches = [_batch(g, n, 3 + 6 * k, 12 + 9 * k) for k, n in enumerate(sizes)]
    assert all(mergeable(len(ids), beams) for ids, _ in batches)
    alone, alone_logits = [], []
    with torch.inference_mode(), shared.sharing(beams):
        for ids, mask in batches:
            seen: list[torch.Tensor] = []
            step = decoder_steps(model, ids, mask, beams, share_cross=True, max_length=max_length)
            alone += _search(step, len(ids), beams, max_length, seen)
            alone_logits.append(seen)
        merged_logits: list[torch.Tensor] = []
        with merged_decoder_steps(model, shared, batches, beams, max_length) as step:
            merged = _search(step, sum(sizes), beams, max_length, merged_logits)
    assert shared.groups is None
    assert merged == alone
    # every step of each batch: its rows' logits the same numbers
    start = 0
    for (ids, _), seen in zip(batches, alone_logits):
        rows = slice(start, start + len(ids) * beams)
        assert all(torch.equal(m[rows], a) for m, a in zip(merged_logits, seen))
        start += len(ids) * beams
    ends = {len(h) for hyps in merged for h in hyps}
    print(sorted(ends))
    assert max_length in ends and min(ends) < max_length - 5  # early ends and the length limit


def test_small_batches_are_not_merged():
    assert MIN_ROWS == 40
    assert not mergeable(7, 5) and mergeable(8, 5) and not mergeable(50, 1)


def test_the_pipeline_asks_the_same_questions_on_the_sample(tiny_config, rows, monkeypatch):
    """The scorer on the tiny models' sample: batches small enough to merge several (a QG batch of 8
    inputs, 5 beams: 40 rows), the same questions and scores as with each batch alone."""
    import dataclasses

    import q2_metric.models.hf_qg as hf_qg

    merged_sizes: list[int] = []
    original = hf_qg.merged_decoder_steps

    def spy(model, shared, batches, beams, max_length=None):
        merged_sizes.append(len(batches))
        return original(model, shared, batches, beams, max_length)

    monkeypatch.setattr(hf_qg, "merged_decoder_steps", spy)
    responses = [r["response"] for r in rows]
    knowledge = [r["knowledge"] for r in rows]
    scorer = Q2Scorer(dataclasses.replace(tiny_config, qg_batch_size=8)).load()
    assert isinstance(scorer.qg, HFQuestionGenerator)
    scorer.qg.merged_rows = 400
    new = scorer.score(responses, knowledge)
    scorer.qg.merged_rows = 0
    old = scorer.score(responses, knowledge)
    assert merged_sizes and max(merged_sizes) >= 3  # several batches' steps ran merged
    assert sum(len(r.questions) for r in new.responses) > 40
    assert (
        len({q.question for r in new.responses for q in r.questions}) > 20
    )  # the questions differ row to row
    assert [r.questions for r in new.responses] == [r.questions for r in old.responses]
    assert new.scores == old.scores


def test_the_flop_meter_counts_the_batches_own_work():
    """Merged steps count what the batches' own steps count (the same number of steps each: no end
    token before the limit), not the longest batch's cross-attention length for every row."""
    from q2_metric.models.speed.flops import FlopMeter

    model = _t5(3, eos_bias=0.0)
    shared = attach_shared_cross_attention(model)
    meter = FlopMeter.attach(model)
    g = torch.Generator().manual_seed(3)
    batches = [_batch(g, 8, 3, 9), _batch(g, 9, 20, 30)]
    beams, steps = 5, 6

    def search(step, inputs: int) -> None:
        beam_search(
            step,
            inputs,
            num_beams=beams,
            max_length=steps,
            min_length=steps,
            start_id=PAD,
            eos_id=EOS,
            pad_id=PAD,
        )

    with torch.inference_mode(), shared.sharing(beams):
        before = meter.flops
        for ids, mask in batches:
            search(decoder_steps(model, ids, mask, beams, share_cross=True, max_length=steps), len(ids))
        alone = meter.flops - before
        before = meter.flops
        with merged_decoder_steps(model, shared, batches, beams, steps) as step:
            search(step, 17)
        merged = meter.flops - before
    assert merged == alone > 0


def test_a_product_whose_rows_change_its_numbers_is_caught():
    """`rows_independent` (run before merging) sees a Linear layer whose result depends on how many
    rows its product has, as BLAS's kernels can from some size on."""
    from q2_metric.models.speed.t5_merged_decoder import rows_independent

    model = _t5(4, eos_bias=0.0)
    plain = rows_independent(model, (40, 45))
    head = model.lm_head
    original = head.forward
    head.forward = lambda x: original(x) + 1e-3 * x.shape[0]  # type: ignore[method-assign]
    try:
        assert not rows_independent(model, (40, 45))
        assert rows_independent(model, (40,))  # one batch: nothing to compare
    finally:
        head.forward = original  # type: ignore[method-assign]
    assert rows_independent(model, (40, 45)) == plain


@pytest.mark.parametrize("leave", [True, False])
@pytest.mark.parametrize(
    ("seed", "beams", "sizes", "limits", "eos_bias"),
    [
        (5, 5, (8, 10, 9), ((20, 0), (9, 9), (14, 4)), 2.0),
        (6, 4, (12, 10, 11), ((6, 6), (30, 0), (12, 12)), 1.5),
    ],
)
def test_batches_of_other_length_limits_merge_and_leave(seed, beams, sizes, limits, eos_bias, leave):
    """Batches with their own `max_length` / `min_length` (the benchmark's scripted lengths) run
    merged, each searched as alone (`beam_search` groups); a batch's rows leave the products when it
    ends (`leave`) or run on unused: the same ids, and each batch's rows the same logits at every
    step of its own search."""
    from q2_metric.models.paper.beam_search import Group

    model = _t5(seed, eos_bias=eos_bias)
    shared = attach_shared_cross_attention(model)
    g = torch.Generator().manual_seed(seed)
    batches = [_batch(g, n, 3 + 5 * k, 12 + 8 * k) for k, n in enumerate(sizes)]
    groups = [Group(n, m, low) for n, (m, low) in zip(sizes, limits)]
    options = dict(num_beams=beams, num_return_sequences=2, no_repeat_ngram_size=3, start_id=PAD, eos_id=EOS)
    alone, alone_logits = [], []
    with torch.inference_mode(), shared.sharing(beams):
        for (ids, mask), group in zip(batches, groups):
            seen: list[torch.Tensor] = []
            step = decoder_steps(model, ids, mask, beams, share_cross=True, max_length=group.max_length)

            def recorded(tokens, beam_idx, step=step, seen=seen):
                logits = step(tokens, beam_idx)
                seen.append(logits.clone())
                return logits

            alone += beam_search(
                recorded,
                len(ids),
                max_length=group.max_length,
                min_length=group.min_length,
                pad_id=PAD,
                **options,
            )
            alone_logits.append(seen)
        steps: list[tuple[list[int], torch.Tensor]] = []
        with merged_decoder_steps(model, shared, batches, beams, 30) as step:

            def merged_step(tokens, beam_idx, running):
                logits = step(tokens, beam_idx, running)
                steps.append((list(running), logits.clone()))
                return logits

            merged = beam_search(
                merged_step,
                sum(sizes),
                max_length=0,  # the groups' own
                pad_id=PAD,
                groups=groups,
                may_leave=lambda running: leave,
                **options,
            )
    assert merged == alone
    for t, (running, logits) in enumerate(steps):
        start = 0
        for k in running:
            rows = sizes[k] * beams
            if t < len(alone_logits[k]):
                assert torch.equal(logits[start : start + rows], alone_logits[k][t]), (t, k)
            start += rows
        assert start == len(logits)
    counts = [len(logits) for _, logits in steps]
    assert len(steps) == max(len(seen) for seen in alone_logits)
    if leave:  # the products shrank as batches ended
        assert counts[-1] < counts[0] and counts == sorted(counts, reverse=True)
    else:
        assert set(counts) == {sum(sizes) * beams}
    ends = {len(h) for hyps in merged for h in hyps}
    assert len(ends) > 2  # inputs ended at several lengths


def test_the_generator_merges_batches_of_their_own_lengths(tiny_config, rows, monkeypatch):
    """Batches whose settings differ only in their length limits (as the benchmark's scripted
    lengths) run merged, their rows leaving as they end: the same ids as each batch alone."""
    import dataclasses
    import functools

    import q2_metric.models.hf_qg as hf_qg

    class OwnLengths(HFQuestionGenerator):
        def _batch_kwargs(self, inputs):  # 4 to 9 new tokens, by the batch's first input
            n = 4 + len(inputs[0]) % 6
            kwargs = {**super()._batch_kwargs(inputs), "min_new_tokens": n, "max_new_tokens": n}
            kwargs.pop("max_length")
            return kwargs

    merged: list[int] = []
    row_counts: list[int] = []
    original = hf_qg.merged_decoder_steps

    def spy(model, shared, batches, beams, max_length=None):
        merged.append(len(batches))
        return original(model, shared, batches, beams, max_length)

    monkeypatch.setattr(hf_qg, "merged_decoder_steps", spy)
    qg = OwnLengths(dataclasses.replace(tiny_config, qg_batch_size=8))
    forward = qg.model.forward

    @functools.wraps(forward)  # (its signature names the cache's keyword)
    def counted(*args, **kwargs):
        row_counts.append(len(kwargs["decoder_input_ids"]))
        return forward(*args, **kwargs)

    monkeypatch.setattr(qg.model, "forward", counted)
    prompts = [hf_qg.qg_input(r["response"].split()[0], r["response"]) for r in rows]
    qg.merged_rows = 400
    new = qg.generate_ids(prompts)
    steps = list(row_counts)
    qg.merged_rows = 0
    old = qg.generate_ids(prompts)
    assert merged and max(merged) >= 3
    assert new == old
    assert len({len(beams[0]) for beams in new}) >= 3  # several lengths
    assert len(set(steps)) > 2  # the merged products shrank as batches ended
