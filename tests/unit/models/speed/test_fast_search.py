"""The fast paths' search state (`fast_search`) against the reference path's (`beam_search`,
3.2's `_generate_beam_search`, itself checked against transformers 3.2's recorded beams in
tests/unit/models/paper/test_beam_search.py, where the fast decoder is checked the same way): the
n-gram ban against the rule row by row, and whole searches step by step on the same logits."""

from __future__ import annotations

import random

import pytest
import torch

from q2_metric.models.paper.beam_search import BeamRules, SearchState, banned_ngram_tokens
from q2_metric.models.speed.fast_search import FastSearchState, banned_pairs


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("length", [1, 2, 3, 4, 7, 15])
def test_the_same_pairs_in_the_same_order_as_the_rule_row_by_row(n, length):
    rng = random.Random(n * 100 + length)
    # a small vocabulary, so that n-grams repeat and rows ban several tokens
    seqs = [[0] + [rng.randrange(2, 6) for _ in range(length - 1)] for _ in range(40)]
    want = [(i, t) for i, seq in enumerate(seqs) for t in banned_ngram_tokens(seq, n)]
    if n in (2, 3) and length >= 7:
        assert len(want) > 5  # the rule bans something here, so equality means something
    assert banned_pairs(seqs, n) == want


def test_no_rows():
    assert banned_pairs([], 3) == []


def _searches(seed: int) -> tuple[SearchState, FastSearchState, torch.Generator, int]:
    """Both states of one random search: a small vocabulary with a likely end token and logits on
    a coarse grid, so that beams end early and late, hypotheses tie and n-grams repeat."""
    rng = random.Random(seed)
    beams = rng.choice([1, 2, 3, 5])
    rules = BeamRules(
        num_beams=beams,
        max_length=rng.choice([2, 3, 6, 12, 20]),
        start_id=0,
        eos_id=1,
        pad_id=0,
        num_return_sequences=rng.randint(1, beams),
        no_repeat_ngram_size=rng.choice([0, 0, 2, 3]),
        early_stopping=rng.random() < 0.3,
        length_penalty=rng.choice([1.0, 1.0, 0.6, 1.7]),
        min_length=rng.choice([0, 0, 3]),
    )
    inputs = rng.randint(1, 7)
    vocab = max(2 * beams + 2, rng.choice([6, 9, 30]))
    return (
        SearchState(inputs, rules),
        FastSearchState(inputs, rules),
        torch.Generator().manual_seed(seed),
        vocab,
    )


@pytest.mark.parametrize("seed", range(300))
def test_a_whole_search_makes_the_reference_path_s_decisions(seed):
    reference, fast, gen, vocab = _searches(seed)
    steps = 0
    while not reference.finished:
        assert not fast.finished
        assert torch.equal(fast.tokens(), reference.tokens())
        logits = (torch.randn(reference.rows, vocab, generator=gen) * 2).round() / 2  # ties
        logits[:, 1] += 1.0  # the end token often ranks high
        want, got = reference.advance(logits.clone()), fast.advance(logits.clone())
        assert (got is None) == (want is None) and (want is None or torch.equal(got, want)), steps
        steps += 1
    assert fast.finished
    assert fast.results() == reference.results()
    assert [h.beams for h in fast.hyps] == [h.beams for h in reference.hyps]  # scores and order


def test_the_random_searches_cover_the_rules():
    """Endings before the limit, hypotheses that tie, inputs done at different steps, bans."""
    seen = {"tie": 0, "early_end": 0, "at_limit": 0, "banned": 0}
    for seed in range(300):
        reference, _, gen, vocab = _searches(seed)
        while not reference.finished:
            seen["banned"] += bool(reference.banned())
            logits = (torch.randn(reference.rows, vocab, generator=gen) * 2).round() / 2
            logits[:, 1] += 1.0
            reference.advance(logits)
        limit = reference.rules.max_length
        for h in reference.hyps:
            scores = [s for s, _ in h.beams]
            seen["tie"] += len(scores) != len(set(scores))
            seen["early_end"] += any(len(hyp) < limit for _, hyp in h.beams)
            seen["at_limit"] += any(len(hyp) == limit for _, hyp in h.beams)
    assert all(n >= 10 for n in seen.values()), seen
