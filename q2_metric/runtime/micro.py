"""The micro-batcher (`MicroBatcher`): concurrent `await batcher.score(item)` calls (Inspect AI's
scorers, ragas' samples, DeepEval's test cases, `q2 serve`'s requests) gathered into engine calls
under one `BatchPolicy`.

Each item is checked once, when it comes in (`frontend.check_items`; an item already checked is
taken as it is); a batch goes to the engine (`Engine.score_checked`) in the process's one engine
thread, so the event loop goes on. A cancelled request leaves its batch at once (it is never
scored); an engine call whose requests were all cancelled stops at its next model batch, and
nothing waits for it. `observe` hears each engine call's size and seconds, in the engine thread
(`q2 serve`'s metrics and heap trim). The record of batch sizes (`batches`) keeps the last
`BATCH_RECORD` calls.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from q2_metric import frontend
from q2_metric.errors import Q2Error
from q2_metric.frontend import CheckedItem, Item, ItemResult, Outcome
from q2_metric.runtime.engine import Checked, Engine, Progress, Scored
from q2_metric.runtime.policy import BatchPolicy
from q2_metric.runtime.threads import in_engine_thread

BATCH_RECORD = 1024  # engine calls whose sizes `MicroBatcher.batches` keeps
Observer = Callable[[int, float], None]  # (items in the engine call, its seconds), in the engine thread


class ScoringCancelled(Q2Error):
    """Every sample of an engine call was cancelled: the call stops at its next model batch."""


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class CallLines:
    """A progress callback writing one line per engine call when it ends."""

    def __init__(self, write: Callable[[str], None] = _stderr) -> None:
        self.write, self.calls = write, 0
        self.start: float | None = None

    def __call__(self, name: str, done: int, total: int) -> None:
        from q2_metric.progress import DONE

        if self.start is None:
            self.start = time.monotonic()
        if name == DONE:
            self.calls += 1
            self.write(f"Q²: engine call {self.calls} done ({time.monotonic() - self.start:.1f} s)")
            self.start = None


class MicroBatcher:
    """Gathers concurrent `score` calls into engine calls of at most `policy.max_batch` items.

    The first request of a batch waits at most `policy.max_wait` seconds for others (a full batch
    goes at once); one batch is scored at a time, in the process's engine thread. `adaptive` (the
    service's policy, `q2 serve`): a batch waits only for the items it can expect, as many as were
    in flight when the last engine call ended, while they keep coming (no quiet gap longer than
    `max_wait`) and at most as long as that call took; a lone client's request goes at once. Works
    across event loops (each loop gets its own queue state), so one batcher may serve several
    `asyncio.run` calls. `progress` hears each engine call's stages; `observe` each call's size
    and seconds."""

    def __init__(
        self,
        engine: Engine,
        policy: BatchPolicy | None = None,
        *,
        progress: Progress | None = None,
        observe: Observer | None = None,
    ) -> None:
        self.engine = engine
        self.policy = policy if policy is not None else BatchPolicy(max_batch=engine.max_batch)
        self.progress = progress
        self.observe = observe
        self._state: dict[int, dict[str, Any]] = {}
        self.batches: list[int] = []  # the size of each engine call made, the last BATCH_RECORD
        self.stopped = 0  # engine calls stopped because all their samples were cancelled

    @property
    def max_batch(self) -> int:
        return self.policy.max_batch

    def _loop_state(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        state = self._state.get(id(loop))
        if state is None or state["loop"] is not loop:
            state = self._state[id(loop)] = {
                "loop": loop,
                "pending": [],
                "full": asyncio.Event(),
                "worker": None,
                "in_flight": 1,  # items in flight at the end of the last engine call
                "last_call": 0.0,  # seconds the last engine call took
            }
        return state

    async def score(self, item: Item | Checked) -> Scored:
        """The item's result once its engine call is made: an `Item` is checked here, once (an
        item already checked, `CheckedItem` or a `bad` `ItemResult`, is taken as it is)."""
        checked = (
            item
            if isinstance(item, (CheckedItem, ItemResult))
            else frontend.check_items([item], getattr(self.engine, "config", None))[0]
        )
        state = self._loop_state()
        future: asyncio.Future = state["loop"].create_future()
        entry = (checked, future)
        state["pending"].append(entry)
        if len(state["pending"]) >= self.policy.max_batch:
            state["full"].set()
        if state["worker"] is None or state["worker"].done():
            state["worker"] = asyncio.ensure_future(self._drain(state))
        try:
            return await future
        finally:
            if future.cancelled() and entry in state["pending"]:
                state["pending"].remove(entry)  # cancelled before its batch went: never scored

    def _progress_until(self, stop: threading.Event) -> Progress:
        """The engine's progress callback: passes progress on, and stops the call once `stop` is set."""

        def progress(name: str, done: int, total: int) -> None:
            if stop.is_set():
                raise ScoringCancelled("Every sample of this Q² engine call was cancelled.")
            if self.progress is not None:
                self.progress(name, done, total)

        return progress

    def _call(self, checked: list[Checked], stop: threading.Event) -> Outcome:
        """One engine call (in the engine thread), heard by `observe`."""
        started = time.perf_counter()
        try:
            return self.engine.score_checked(checked, self.policy.max_batch, self._progress_until(stop))
        finally:
            if self.observe is not None:
                self.observe(len(checked), time.perf_counter() - started)

    async def _wait_first(self, state: dict[str, Any]) -> None:
        """Waits at most `max_wait` seconds after the first pending request for a full batch."""
        if len(state["pending"]) < self.policy.max_batch and self.policy.max_wait:
            state["full"].clear()
            try:
                await asyncio.wait_for(state["full"].wait(), self.policy.max_wait)
            except asyncio.TimeoutError:
                pass

    async def _gather(self, state: dict[str, Any]) -> None:
        """The adaptive wait (`adaptive`): a batch waits for as many items as were in flight when the
        last engine call ended (its own and those that came during it: a closed-loop client sends
        its next request once answered), while they keep coming, for at most that call's time."""
        max_wait = self.policy.max_wait
        want = min(self.policy.max_batch, state["in_flight"])
        if len(state["pending"]) >= want or not max_wait:
            return
        tick = min(0.001, max_wait)
        deadline = time.perf_counter() + state["last_call"]
        seen, quiet = len(state["pending"]), 0.0
        while len(state["pending"]) < want and quiet < max_wait:
            before = time.perf_counter()
            if before >= deadline:
                return
            await asyncio.sleep(tick)
            if len(state["pending"]) != seen:
                seen, quiet = len(state["pending"]), 0.0
            else:  # a loop busy answering the last batch's requests is not a quiet one
                quiet += min(time.perf_counter() - before, 2 * tick)

    @staticmethod
    async def _timed(state: dict[str, Any], call: asyncio.Future, size: int) -> Outcome:
        """The engine call's outcome; its time and the items in flight at its end kept for `_gather`."""
        started = time.perf_counter()
        try:
            return await call
        finally:
            state["last_call"] = time.perf_counter() - started
            state["in_flight"] = size + len(state["pending"])

    def _record(self, size: int) -> None:
        self.batches.append(size)
        if len(self.batches) > BATCH_RECORD:
            del self.batches[:-BATCH_RECORD]

    async def _drain(self, state: dict[str, Any]) -> None:
        size = self.policy.max_batch
        while state["pending"]:
            await (self._gather(state) if self.policy.adaptive else self._wait_first(state))
            batch = [e for e in state["pending"][:size] if not e[1].done()]
            del state["pending"][:size]
            if not batch:
                continue
            self._record(len(batch))
            futures = [f for _, f in batch]
            # bound to this batch: a future's callback may fire after the loop has moved on
            stop = _stop_when_all_cancelled(futures)
            run = functools.partial(self._call, [c for c, _ in batch], stop)
            try:
                outcome = await self._timed(state, in_engine_thread(state["loop"], run), len(batch))
            except asyncio.CancelledError:
                stop.set()  # the loop is going away: the engine call stops at its next model batch
                for f in futures:
                    f.cancel()
                raise
            except ScoringCancelled:
                self.stopped += 1
                continue
            except BaseException as err:
                for f in futures:
                    if not f.done():
                        f.set_exception(err)
                if not isinstance(err, Exception):
                    raise
                continue
            for f, result in zip(futures, outcome.items):
                if not f.done():
                    f.set_result(Scored(result, outcome.signature, state["last_call"]))


def _stop_when_all_cancelled(futures: list[asyncio.Future[Any]]) -> threading.Event:
    """An event set once every one of `futures` is cancelled."""
    stop = threading.Event()

    def cancelled(_: asyncio.Future[Any]) -> None:
        if all(f.cancelled() for f in futures):
            stop.set()

    for f in futures:
        f.add_done_callback(cancelled)
    return stop
