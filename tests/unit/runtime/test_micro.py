"""The micro-batcher (`q2_metric.runtime.micro.MicroBatcher`) on scripted components: concurrent
requests gathered into engine calls under a policy, cancelled ones never scored, the adaptive policy,
the `observe` hook, the bounded record of batch sizes and one item check per item."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from support.runtime import PAIRS, Recording, direct, engine, items, micro, same

from q2_metric.frontend import Item
from q2_metric.runtime.micro import ScoringCancelled


def test_micro_batcher_gathers_concurrent_requests():
    e = engine(3)
    batcher = micro(e, 0.5)

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in items()))

    got = asyncio.run(run())
    want = direct()
    assert [same(g.value, w) for g, w in zip(got, want.scores)] == [True] * len(PAIRS)
    assert batcher.batches == [3, 3, 1] and e.engine_calls == 3
    assert [g.status for g in got] == ["scored"] * 3 + ["empty"] + ["scored"] * 3
    # a second event loop is served too (Inspect and ragas each run their own)
    asyncio.run(run())
    assert e.engine_calls == 6


def test_micro_batcher_a_bad_item_fails_only_itself_under_its_own_key():
    """One sample whose knowledge is no string, batched with good ones: only it is reported, by
    its key (the harness's identity of it), not by its position in the batch."""
    e = engine(8)
    batcher = micro(e, 0.5)
    given = items()[:3] + [Item("sample 'x7'", "A reply.", 42)] + items()[3:]

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in given))

    got = asyncio.run(run())
    assert batcher.batches == [8] and e.engine_calls == 1
    assert [g.status for g in got] == ["scored"] * 3 + ["bad", "empty"] + ["scored"] * 3
    assert got[3].reason() == "sample 'x7': field 'knowledge' must be a string, got int."
    want = direct()
    good = got[:3] + got[4:]
    assert [same(g.value, w) for g, w in zip(good, want.scores)] == [True] * len(PAIRS)


def test_micro_batcher_does_not_wait_past_max_wait_nor_for_a_full_batch():
    e = engine(64)
    batcher = micro(e, 0.2)

    async def one():
        start = time.perf_counter()
        await batcher.score(items()[0])
        return time.perf_counter() - start

    assert asyncio.run(one()) < 5  # a lone request goes after max_wait
    full = micro(engine(2), 30)

    async def two():
        start = time.perf_counter()
        await asyncio.gather(full.score(items()[0]), full.score(items()[1]))
        return time.perf_counter() - start

    assert asyncio.run(two()) < 10  # a full batch goes at once, not after 30 s
    assert full.batches == [2]


def test_micro_batcher_gives_every_waiter_the_engines_error():
    class Broken:
        max_batch = 4

        def score_checked(self, given, max_batch=None, progress=None):
            raise RuntimeError("engine failed")

    batcher = micro(Broken(), 0.1)

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in items()[:3]), return_exceptions=True)

    got = asyncio.run(run())
    assert [type(g).__name__ for g in got] == ["RuntimeError"] * 3


def test_a_cancelled_request_waiting_for_its_batch_is_never_scored():
    e = engine(8)
    batcher = micro(e, 0.5)

    async def run():
        tasks = [asyncio.ensure_future(batcher.score(i)) for i in items()]
        await asyncio.sleep(0.05)  # all waiting for the batch (max_wait)
        tasks[1].cancel()
        tasks[4].cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    got = asyncio.run(run())
    assert isinstance(got[1], asyncio.CancelledError) and isinstance(got[4], asyncio.CancelledError)
    assert batcher.batches == [5] and e.replies == 5  # the two cancelled ones never reached the engine
    want = direct()
    assert [same(got[i].value, want.scores[i]) for i in (0, 2, 3, 5, 6)] == [True] * 5


class Slow:
    """An engine whose call reports a model batch every 20 ms for 30 s (a long engine call)."""

    max_batch = 4

    def __init__(self):
        self.stopped = threading.Event()

    def score_checked(self, given, max_batch=None, progress=None):
        try:
            for done in range(1500):
                progress("questions", done, 1500)
                time.sleep(0.02)
        except ScoringCancelled:
            self.stopped.set()
            raise
        raise AssertionError("not cancelled")


def test_cancelling_ends_promptly_without_waiting_for_the_engine_call_in_flight():
    """Ctrl-C (the samples' tasks cancelled, then the loop closed) ends at once: nothing waits for
    the engine call in flight, which stops at its next model batch and scores nothing."""
    slow = Slow()
    batcher = micro(slow, 0)

    async def run():
        tasks = [asyncio.ensure_future(batcher.score(i)) for i in items()[:3]]
        await asyncio.sleep(0.3)  # the engine call is running
        for t in tasks:
            t.cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    start = time.perf_counter()
    got = asyncio.run(run())
    assert time.perf_counter() - start < 10  # the call would take 30 s
    assert all(isinstance(g, asyncio.CancelledError) for g in got)
    assert slow.stopped.wait(10), "the engine call stopped at its next model batch"


def test_adaptive_batching_sends_a_lone_request_at_once():
    """`q2 serve`'s policy: nothing else is in flight, so a lone request does not wait `max_wait`
    (the harnesses' policy would wait out its 30 s before each one)."""
    batcher = micro(engine(64), 30, adaptive=True)

    async def one():
        start = time.perf_counter()
        for i in items()[:3]:
            await batcher.score(i)
        return time.perf_counter() - start

    assert asyncio.run(one()) < 10  # three requests one after the other, none waiting 30 s
    assert batcher.batches == [1, 1, 1]


@pytest.mark.parametrize("adaptive, want", [(True, [1, 4, 4, 3]), (False, None)])
def test_adaptive_batching_waits_for_the_clients_answered_by_the_last_call(adaptive, want):
    """Four closed-loop clients (each sends its next item k * 10 ms after its answer): the adaptive
    batcher sends the first item alone (nothing else was in flight), then expects the four items in
    flight at the end of each call (0.2 s) and scores them together; without it (max_wait 0) the
    answered clients' next items go in other batches."""
    engine = Recording(seconds=0.2)
    batcher = micro(engine, 1 if adaptive else 0, adaptive=adaptive)
    pairs = items()

    async def client(k):
        out = []
        for n in range(3):
            await asyncio.sleep(0.01 * k)
            out.append(await batcher.score(pairs[(k + 4 * n) % len(pairs)]))
        return out

    async def run():
        return await asyncio.gather(*(client(k) for k in range(4)))

    got = asyncio.run(run())
    assert sum(batcher.batches) == 12 and all(len(g) == 3 for g in got)
    if want is not None:
        assert batcher.batches == want
    else:
        assert len(batcher.batches) > 4


def test_observe_hears_each_engine_call_in_the_engine_thread():
    from q2_metric.runtime.threads import ENGINE_THREAD

    heard = []
    batcher = micro(
        engine(3), 0.5, observe=lambda size, seconds: heard.append((size, seconds, threading.get_ident()))
    )

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in items()))

    asyncio.run(run())
    assert [h[0] for h in heard] == batcher.batches == [3, 3, 1]
    assert all(h[1] >= 0 for h in heard) and {h[2] for h in heard} == {ENGINE_THREAD._thread.ident}


def test_the_record_of_batch_sizes_is_bounded_by_the_runtime(monkeypatch):
    from q2_metric.runtime import micro as M

    monkeypatch.setattr(M, "BATCH_RECORD", 4)
    batcher = micro(engine(1), 0)

    async def run():
        for i in items():
            await batcher.score(i)

    asyncio.run(run())
    assert batcher.batches == [1, 1, 1, 1] and batcher.engine.engine_calls == len(PAIRS)


def test_each_item_is_checked_once_on_the_batched_path(monkeypatch):
    """A spy on the one item check (`validation.item_error`, as the contract calls it): every
    item, good or bad, is checked exactly once between `score` and its result."""
    from q2_metric import frontend

    checks: dict[str, int] = {}
    real = frontend.item_error

    def spy(key, fields, history=None):
        checks[key] = checks.get(key, 0) + 1
        return real(key, fields, history)

    monkeypatch.setattr(frontend, "item_error", spy)
    given = [*items(), Item("sample 'x7'", "A reply.", 42)]
    batcher = micro(engine(3), 0.5)

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in given))

    got = asyncio.run(run())
    assert checks == {i.key: 1 for i in given}
    assert got[-1].status == "bad" and got[-1].reason().startswith("sample 'x7': field 'knowledge'")
    # an item checked already (the service checks its own) is not checked again
    checks.clear()
    checked = frontend.check_items(items()[:2])

    async def again():
        return await asyncio.gather(*(batcher.score(c) for c in checked))

    asyncio.run(again())
    assert checks == {"row 1": 1, "row 2": 1}
