"""The process's one engine thread (`q2_metric.runtime.threads`)."""

from __future__ import annotations

import asyncio
import threading

from support.runtime import Recording, items, micro

from q2_metric.runtime.threads import ENGINE_THREAD, in_engine_thread


def test_every_engine_call_runs_on_the_process_one_engine_thread():
    """Torch's OpenMP team belongs to the thread that calls it: every engine call, from any batcher
    and any event loop, runs on the one engine thread (a new thread per call would build a team each
    time and slow the other)."""
    first, second = Recording(), Recording()

    async def run(engine):
        batcher = micro(engine, 0)
        for i in items()[:3]:
            await batcher.score(i)

    asyncio.run(run(first))
    asyncio.run(run(second))
    threads = set(first.threads + second.threads)
    assert len(first.threads) == len(second.threads) == 3
    assert threads == {ENGINE_THREAD._thread.ident} and threading.get_ident() not in threads

    async def nested():  # a call made from inside an engine call runs there, not deadlocked behind it
        loop = asyncio.get_running_loop()
        inner = await in_engine_thread(loop, lambda: in_engine_thread(loop, threading.get_ident))
        return await asyncio.wait_for(inner, 10)

    assert asyncio.run(nested()) == ENGINE_THREAD._thread.ident
