"""The way into the micro-batcher for callers in plain threads (`score_from_thread`: MLflow scores
each row in a thread of its pool): one background event loop for them all, so rows scored at the
same time by different threads share an engine call."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from q2_metric.frontend import Item
from q2_metric.runtime.engine import Checked, Scored
from q2_metric.runtime.micro import MicroBatcher

_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for callers in threads, running in a daemon thread."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            _LOOP = asyncio.new_event_loop()
            threading.Thread(target=_LOOP.run_forever, name="q2-batcher-loop", daemon=True).start()
        return _LOOP


def score_from_thread(batcher: MicroBatcher, item: Item | Checked) -> Scored:
    """`await batcher.score(item)` from a thread with no running event loop: calls from several
    threads at once are gathered into one engine call. Interrupted, the item leaves its batch."""
    future = asyncio.run_coroutine_threadsafe(batcher.score(item), _background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def gather_from_thread(batcher: MicroBatcher, items: Sequence[Item | Checked]) -> list[Scored]:
    """`score_from_thread` of several items at once, sent together (they may share an engine call,
    and the stages then compute identical model inputs once); results in the items' order."""

    async def gather() -> list[Scored]:
        return list(await asyncio.gather(*(batcher.score(i) for i in items)))

    future = asyncio.run_coroutine_threadsafe(gather(), _background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise
