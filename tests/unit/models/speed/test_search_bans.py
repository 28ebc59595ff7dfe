"""The n-gram ban over all rows at once (`search_bans`) against the reference path's rule
(`beam_search.banned_ngram_tokens`, 3.2's `calc_banned_ngram_tokens`, itself checked against
transformers 3.2's recorded beams in tests/unit/models/paper/test_beam_search.py)."""

from __future__ import annotations

import random

import pytest

from q2_metric.models.paper.beam_search import banned_ngram_tokens
from q2_metric.models.speed.search_bans import banned_pairs


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
