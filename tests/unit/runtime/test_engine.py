"""The engine (`q2_metric.runtime.engine.Engine`) on scripted components: engine calls of at most
`max_batch` items in input order, a run scored once, the project's reason sentence. The yardstick
is `Q2Scorer.score` on all pairs at once."""

from __future__ import annotations

import math

import pytest
from support.runtime import PAIRS, direct, engine, items, same


@pytest.mark.parametrize("max_batch", [1, 3, 64])
def test_score_items_chunks_and_keeps_order(max_batch):
    e = engine(max_batch)
    got = e.score_items(items())
    want = direct()
    assert [same(g.q2, w) for g, w in zip(got.items, want.scores)] == [True] * len(PAIRS)
    assert e.engine_calls == math.ceil(len(PAIRS) / max_batch) and e.replies == len(PAIRS)
    assert got.signature == want.signature
    # the system figures over every call equal the engine's over all pairs at once
    assert same(got.system.q2, want.q2) and same(got.system.coverage, want.coverage)
    assert got.counts == {"scored": 6, "empty": 1, "bad": 0}
    assert [i.key for i in got.items] == [f"row {i + 1}" for i in range(len(PAIRS))]


def test_collect_scores_a_run_once_and_gives_the_engines_figures():
    e = engine(64)
    first = e.collect(items())
    again = e.collect(items())
    assert again is first and e.engine_calls == 1
    want = direct().system
    assert same(first.system.q2, want.q2) and same(first.system.q2_no_nli, want.q2_no_nli)
    assert same(first.system.coverage, want.coverage) and first.system.num_skipped == 1
    e.collect(items()[:2])  # other items: scored anew
    assert e.engine_calls == 2


def test_explanation_is_the_projects_reason_sentence():
    from q2_metric.display import reason_line

    got = engine(8).score_items(items())
    want = direct()
    assert [g.reason for g in got.items] == [reason_line(r) for r in want.responses]
    assert got.items[3].reason.startswith("Not scored:")
