"""Batch invariance on the default float32 path: a response's questions, answers, labels, scores and
spans are the same whether it is scored alone or inside any batch with any other responses (what
`q2 serve`'s micro-batcher relies on: a response's result never depends on its batch-mates).

Expected values: each response scored ALONE (its own engine call) is the reference; the batches
are random compositions (seeded) of the varied tiny models' sample rows, in random orders, with
repeats and small engine batch sizes (so the engine's own length-sorted batches mix rows too)."""

from __future__ import annotations

import random

import pytest

from q2_metric import Q2Scorer
from q2_metric.signature import Signature, batch_invariant


def _fields(res) -> dict:
    out = res.to_dict()
    out.pop("index")
    return out


@pytest.fixture(scope="module")
def scorer(tiny_config):
    return Q2Scorer(tiny_config)


@pytest.fixture(scope="module")
def pairs(rows):
    return [(r["response"], r["knowledge"]) for r in rows[:14]]


@pytest.fixture(scope="module")
def alone(scorer, pairs):
    return [_fields(scorer.score([r], [k]).responses[0]) for r, k in pairs]


@pytest.mark.slow
def test_alone_results_vary_by_row(alone):
    # the comparison could fail: rows differ in score and in their questions
    assert len({a["q2"] for a in alone if a["q2"] == a["q2"]}) >= 3
    assert sum(bool(a["questions"]) for a in alone) >= 5


@pytest.mark.slow  # every row alone, then the batches: minutes on two shared cores
@pytest.mark.parametrize("seed", range(4))
def test_any_batch_gives_each_response_its_alone_result(scorer, pairs, alone, seed):
    rng = random.Random(seed)
    size = rng.randint(2, 3 * len(pairs))
    picks = [rng.randrange(len(pairs)) for _ in range(size)]  # repeats and any order
    result = scorer.score([pairs[i][0] for i in picks], [pairs[i][1] for i in picks])
    for i, res in zip(picks, result.responses):
        assert _fields(res) == alone[i], (seed, i)


@pytest.mark.slow
def test_small_engine_batches_too(tiny_config, pairs, alone):
    """Engine batches of 2 and 3 inputs: each response's model inputs land beside others'."""
    from dataclasses import replace

    small = Q2Scorer(replace(tiny_config, qg_batch_size=2, qa_batch_size=3, nli_batch_size=2))
    order = list(range(len(pairs)))
    random.Random(7).shuffle(order)
    result = small.score([pairs[i][0] for i in order], [pairs[i][1] for i in order])
    for i, res in zip(order, result.responses):
        assert _fields(res) == alone[i], i


def test_modes_that_cannot_promise_it_say_so(tiny_config):
    from dataclasses import replace

    assert batch_invariant(tiny_config)
    assert "batch" not in Signature.create(tiny_config).to_dict()
    for options in ({"dtype": "bfloat16"}, {"quantize": "int8"}, {"qa_packing": "on"}):
        config = replace(tiny_config, **options)
        assert not batch_invariant(config), options
        assert Signature.create(config).to_dict()["batch"] == "dependent", options
