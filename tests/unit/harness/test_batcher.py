"""The harnesses' batching (q2_metric.harness.batcher) on scripted components: no model, fast.

The yardstick is `Q2Scorer.score` called directly on all pairs at once (the engine itself), never
the code under test."""

from __future__ import annotations

import asyncio
import math
import threading
import time

import pytest

from q2_metric import Q2Config
from q2_metric.errors import Q2OptionError
from q2_metric.frontend import Item
from q2_metric.harness import batcher as B
from q2_metric.testing.scripted import scripted_scorer

PAIRS = [
    ("Bob Ross hosted The Joy of Painting on PBS.", "Bob Ross hosted The Joy of Painting on PBS."),
    (
        "The show aired in Canada and Europe.",
        "The show aired on PBS in the United States and also in Canada.",
    ),
    (
        "Gardening is relaxing for Many People.",
        "Gardening is considered by many people to be a relaxing activity.",
    ),
    ("", "Knowledge with no reply."),
    ("i like it", "The Micro-pigs are small pigs."),
    ("Paris is the capital of France.", "Paris is the capital and most populous city of France."),
    ("Ross died in Orlando.", "Ross died of lymphoma in Orlando, Florida."),
]


def harness_batcher(max_batch: int) -> B.HarnessBatcher:
    return B.HarnessBatcher(Q2Config(), max_batch=max_batch, scorer=scripted_scorer())


def items(pairs=PAIRS) -> list[Item]:
    return [Item(f"row {i + 1}", r, k) for i, (r, k) in enumerate(pairs)]


def direct():
    return scripted_scorer().score([r for r, _ in PAIRS], [k for _, k in PAIRS])


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("max_batch", [1, 3, 64])
def test_score_items_chunks_and_keeps_order(max_batch):
    e = harness_batcher(max_batch)
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
    e = harness_batcher(64)
    first = e.collect(items())
    again = e.collect(items())
    assert again is first and e.engine_calls == 1
    want = direct().system
    assert same(first.system.q2, want.q2) and same(first.system.q2_no_nli, want.q2_no_nli)
    assert same(first.system.coverage, want.coverage) and first.system.num_skipped == 1
    e.collect(items()[:2])  # other items: scored anew
    assert e.engine_calls == 2


def test_async_batcher_gathers_concurrent_requests():
    e = harness_batcher(3)
    batcher = B.AsyncBatcher(e, max_wait=0.5)

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


def test_async_batcher_a_bad_item_fails_only_itself_under_its_own_key():
    """One sample whose knowledge is no string, batched with good ones: only it is reported, by
    its key (the harness's identity of it), not by its position in the batch."""
    e = harness_batcher(8)
    batcher = B.AsyncBatcher(e, max_wait=0.5)
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


def test_async_batcher_does_not_wait_past_max_wait_nor_for_a_full_batch():
    e = harness_batcher(64)
    batcher = B.AsyncBatcher(e, max_wait=0.2)

    async def one():
        start = time.perf_counter()
        await batcher.score(items()[0])
        return time.perf_counter() - start

    assert asyncio.run(one()) < 5  # a lone request goes after max_wait
    full = B.AsyncBatcher(harness_batcher(2), max_wait=30)

    async def two():
        start = time.perf_counter()
        await asyncio.gather(full.score(items()[0]), full.score(items()[1]))
        return time.perf_counter() - start

    assert asyncio.run(two()) < 10  # a full batch goes at once, not after 30 s
    assert full.batches == [2]


def test_async_batcher_gives_every_waiter_the_engines_error():
    class Broken:
        max_batch = 4

        def score_items(self, given, max_batch=None, progress=None):
            raise RuntimeError("engine failed")

    batcher = B.AsyncBatcher(Broken(), max_wait=0.1)

    async def run():
        return await asyncio.gather(*(batcher.score(i) for i in items()[:3]), return_exceptions=True)

    got = asyncio.run(run())
    assert [type(g).__name__ for g in got] == ["RuntimeError"] * 3


def test_a_cancelled_request_waiting_for_its_batch_is_never_scored():
    e = harness_batcher(8)
    batcher = B.AsyncBatcher(e, max_wait=0.5)

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

    def score_items(self, given, max_batch=None, progress=None):
        try:
            for done in range(1500):
                progress("questions", done, 1500)
                time.sleep(0.02)
        except B.ScoringCancelled:
            self.stopped.set()
            raise
        raise AssertionError("not cancelled")


def test_cancelling_ends_promptly_without_waiting_for_the_engine_call_in_flight():
    """Ctrl-C (the samples' tasks cancelled, then the loop closed) ends at once: nothing waits for
    the engine call in flight, which stops at its next model batch and scores nothing."""
    slow = Slow()
    batcher = B.AsyncBatcher(slow, max_wait=0)

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


def test_explanation_is_the_projects_reason_sentence():
    from q2_metric.display import reason_line

    got = harness_batcher(8).score_items(items())
    want = direct()
    assert [g.reason for g in got.items] == [reason_line(r) for r in want.responses]
    assert got.items[3].reason.startswith("Not scored:")


def test_harness_options_go_through_the_options_path():
    config, max_batch = B.harness_config(
        {"variant": "dnli", "batch_size": 4, "max_batch": 8, "decoding": "greedy", "tiny": False}
    )
    assert config == Q2Config.dnli(qg_batch_size=4, qa_batch_size=4, nli_batch_size=4, decoding="greedy")
    assert max_batch == 8
    assert B.harness_config({"tiny": False}) == (Q2Config(), None)  # None: the adapter's default
    with pytest.raises(ValueError, match="decoding"):
        B.harness_config({"decoding": "sampling", "tiny": False})
    with pytest.raises(TypeError, match="not a Q² option"):
        B.harness_config({"num_beam": 3, "tiny": False})
    with pytest.raises(ValueError, match="max_batch"):
        B.harness_config({"max_batch": 0, "tiny": False})
    # each error one sentence naming the option as the harness spells it
    spell = lambda name: f"-S {name}"  # noqa: E731 (a one-line speller, as the adapters pass them)
    with pytest.raises(Q2OptionError) as err:
        B.harness_config({"qg_batch_size": 0, "tiny": False}, spell)
    assert (
        str(err.value).startswith("Invalid Q² option -S qg_batch_size=0") and str(err.value).count(". ") == 0
    )
    with pytest.raises(Q2OptionError, match="-S max_batch"):
        B.harness_config({"max_batch": True, "tiny": False}, spell)


def test_a_missing_model_is_one_sentence_in_the_harness_words_before_any_work(tmp_path, monkeypatch):
    """`batcher_for(..., check=True)`: the models checked when the harness builds its scorer."""
    from q2_metric.errors import ModelNotAvailable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    B.reset_batchers()
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ModelNotAvailable) as err:
        B.batcher_for(
            {"qg_model": missing, "tiny": False},
            spell=lambda n: f"-T {n}",
            check=True,
            tiny_hint="`-T tiny=true`",
        )
    text = str(err.value)
    assert missing in text and "-T qg_model" in text and "--qg-model" not in text and "\n" not in text
    B.reset_batchers()


class Recording:
    """An engine that records the thread of each call and takes `seconds` per call."""

    max_batch = 8

    def __init__(self, seconds: float = 0.0):
        self.inner, self.seconds, self.threads = harness_batcher(8), seconds, []

    def score_items(self, given, max_batch=None, progress=None):
        self.threads.append(threading.get_ident())
        time.sleep(self.seconds)
        return self.inner.score_items(given, max_batch, progress)


def test_every_engine_call_runs_on_the_process_one_engine_thread():
    """Torch's OpenMP team belongs to the thread that calls it: every engine call, from any batcher
    and any event loop, runs on the one engine thread (a new thread per call would build a team each
    time and slow the other)."""
    first, second = Recording(), Recording()

    async def run(engine):
        batcher = B.AsyncBatcher(engine, max_wait=0)
        for i in items()[:3]:
            await batcher.score(i)

    asyncio.run(run(first))
    asyncio.run(run(second))
    threads = set(first.threads + second.threads)
    assert len(first.threads) == len(second.threads) == 3
    assert threads == {B.ENGINE_THREAD._thread.ident} and threading.get_ident() not in threads

    async def nested():  # a call made from inside an engine call runs there, not deadlocked behind it
        loop = asyncio.get_running_loop()
        inner = await B.in_engine_thread(loop, lambda: B.in_engine_thread(loop, threading.get_ident))
        return await asyncio.wait_for(inner, 10)

    assert asyncio.run(nested()) == B.ENGINE_THREAD._thread.ident


def test_adaptive_batching_sends_a_lone_request_at_once():
    """`q2 serve`'s policy: nothing else is in flight, so a lone request does not wait `max_wait`
    (the harnesses' policy would wait out its 30 s before each one)."""
    batcher = B.AsyncBatcher(harness_batcher(64), max_wait=30, adaptive=True)

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
    batcher = B.AsyncBatcher(engine, max_wait=1 if adaptive else 0, adaptive=adaptive)
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
