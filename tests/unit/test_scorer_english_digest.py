"""English text keeps today's results byte for byte with the language gate in place: the default
results (tiny models) on the bundled Wizard of Wikipedia sample and on a BEGIN sample hash to the
digests computed on main before the gate existed (910fb2e, `tests/support/digest.py`), and every
row is still scored (none gated by a misjudged language)."""

import math

import pytest
from support.digest import english_sets, result_digest

from q2_metric import Q2Scorer
from q2_metric.frontend import Item, score_items

# computed on a pristine checkout of main (910fb2e) with tests/support/digest.py, before the gate
BEFORE = {
    "wow_sample": "f4ac4df1bbc1dd7dffe47d7200bc9e80a1746950f68c6203b6953a09a0b3a03e",
    "begin_sample": "c5c669be576f1f26b9f7654add6eb99ad266ed58e6811dffa6081bc99a2d4eb0",
}


@pytest.fixture(scope="module")
def scorer(tiny_config):
    return Q2Scorer(tiny_config)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BEFORE))
def test_english_results_are_byte_equal_to_before_the_language_gate(scorer, name):
    responses, knowledge = english_sets()[name]
    result = scorer.score(responses, knowledge)
    assert all(not math.isnan(s) for s in result.scores)  # every row scored: no English row gated
    assert "lang:" not in str(result.signature)
    assert result_digest(result) == BEFORE[name]


@pytest.mark.slow
def test_every_english_row_passes_the_front_ends_item_check(scorer):
    """Through the contract's one item check (the path of every front-end and the service)."""
    for name, (responses, knowledge) in english_sets().items():
        items = [Item(f"row {i}", r, k) for i, (r, k) in enumerate(zip(responses, knowledge))]
        outcome = score_items(scorer, items)
        assert outcome.counts == {"scored": len(items), "empty": 0, "bad": 0}, name
