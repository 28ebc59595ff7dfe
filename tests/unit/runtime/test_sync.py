"""Callers in plain threads (`q2_metric.runtime.sync.score_from_thread`): rows scored at the same
time by different threads share an engine call."""

from __future__ import annotations

import threading

from support.runtime import direct, engine, items, micro, same

from q2_metric.runtime.sync import score_from_thread


def test_threads_share_an_engine_call_and_get_their_own_results():
    e = engine(8)
    batcher = micro(e, 2.0)
    given = items()
    got: dict[int, object] = {}

    def row(n: int) -> None:
        got[n] = score_from_thread(batcher, given[n])

    threads = [threading.Thread(target=row, args=(n,)) for n in range(len(given))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    want = direct()
    assert [same(got[n].value, want.scores[n]) for n in range(len(given))] == [True] * len(given)
    assert sum(batcher.batches) == len(given) and len(batcher.batches) < len(given)
