"""Batched engine calls shared by the harness adapters, through the front-end contract
(`q2_metric.frontend`).

Harnesses hand replies to a metric one at a time; Q² is fast only over many at once (each stage
de-duplicates its model inputs and makes one component call per engine call). Two ways in:

- `HarnessBatcher.score_items` (and `collect`): a whole run's items at once, in engine calls of at most
  `max_batch` items (lm-eval: by default the whole run in one call); `collect` remembers the last
  outcome, so that the several figures of one run (lm-eval aggregates each metric apart) cost one
  engine call.
- `AsyncBatcher`: concurrent `await batcher.score(item)` calls (Inspect AI's scorers, ragas'
  samples) are gathered into one engine call of at most `max_batch` items, waiting at most
  `max_wait` seconds for more after the first. The engine runs in the process's one engine
  thread (`EngineThread`): the event loop goes on, and a cancelled sample (Ctrl-C, a harness
  timeout) is dropped from its batch at once; an engine call whose samples were all cancelled
  stops at its next model batch, and nothing waits for it.

Every item goes through `frontend.score_items`: it is validated alone (a bad item is reported with
its own key, the others are scored), an empty reply or knowledge is counted and unscored, and each
result carries its status and the full signature. One `HarnessBatcher` (so one model load) per process and
configuration: `harness_batcher(config)`, whatever the batch sizes asked of it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from q2_metric import display, frontend
from q2_metric.errors import Q2Error, Q2OptionError
from q2_metric.frontend import Item, ItemResult, Outcome

DEFAULT_MAX_BATCH = 64
DEFAULT_MAX_WAIT = 0.05  # seconds the micro-batcher waits for more requests after the first


class ScoringCancelled(Q2Error):
    """Every sample of an engine call was cancelled: the call stops at its next model batch."""


@dataclass(frozen=True)
class Scored:
    """One item's result (`frontend.ItemResult`), the signature of the engine call that made it and
    that call's seconds."""

    result: ItemResult
    signature: Any  # q2_metric.Signature
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def value(self) -> float:
        """Q² (NaN unless scored)."""
        return self.result.q2

    @property
    def response(self) -> Any:
        """The `ResponseScore` (None for a bad item)."""
        return self.result.score

    def reason(self) -> str:
        """Why the score is what it is, in one sentence (the `reason` column of `q2 score`), or the
        bad item's error."""
        return self.result.reason


def merge(outcomes: Sequence[Outcome]) -> Outcome:
    """The outcomes of several engine calls of one run as one (system figures over all items)."""
    if len(outcomes) == 1:
        return outcomes[0]
    items = [i for o in outcomes for i in o.items]
    return Outcome(
        items, frontend.system_figures([i.score for i in items if i.score is not None]), outcomes[0].signature
    )


class HarnessBatcher:
    """A scorer with counters: `engine_calls` (calls of the Q² engine) and the items scored."""

    def __init__(self, config: Any, max_batch: int = DEFAULT_MAX_BATCH, scorer: Any = None) -> None:
        from q2_metric import Q2Scorer

        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise Q2OptionError(f"Invalid max_batch={max_batch!r}: use an integer >= 1.")
        self.config = config
        self.max_batch = max_batch
        self.scorer = scorer if scorer is not None else Q2Scorer(config)  # tests pass a scripted one
        self.engine_calls = 0
        self.replies = 0
        self._lock = threading.Lock()  # one engine call at a time (the models are not re-entrant)
        self._last: tuple[tuple, Outcome] | None = None
        self._checked = False

    def check(self, spell: Callable[[str], str] = frontend.python_name, tiny_hint: str | None = None) -> None:
        """The models checked before any work (`frontend.check_models`); the messages name the
        options as `spell` does. Once per batcher: the files do not change within a run."""
        if self._checked:
            return
        with frontend.model_words(spell, tiny_hint):
            frontend.check_models(self.scorer, spell=spell)
        self._checked = True
        note = display.tiny_note_once(self.config)  # on the tiny random models: the scores mean nothing
        if note:
            logging.getLogger("q2_metric").warning(note)

    def score_items(
        self,
        items: Sequence[Item],
        max_batch: int | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> Outcome:
        """Every item scored or reported (`frontend.score_items`), in engine calls of at most
        `max_batch` items (default: the engine's)."""
        step = max_batch or self.max_batch
        items = list(items)
        outcomes = []
        for start in range(0, max(len(items), 1), step):
            with self._lock:
                outcome = frontend.score_items(self.scorer, items[start : start + step], progress=progress)
                self.engine_calls += 1
                self.replies += len(outcome.items)
            outcomes.append(outcome)
        return merge(outcomes)

    def collect(
        self,
        items: Sequence[Item],
        max_batch: int | None = None,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> Outcome:
        """A run's items scored once (engine calls of at most `max_batch`): the same items asked
        again give the remembered outcome."""
        key = tuple((i.key, repr(i.response), repr(i.knowledge)) for i in items)
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
        outcome = self.score_items(items, max_batch, progress)
        with self._lock:
            self._last = (key, outcome)
        return outcome


_BATCHERS: dict[tuple, HarnessBatcher] = {}
_BATCHERS_LOCK = threading.Lock()


def harness_batcher(config: Any) -> HarnessBatcher:
    """The process's `HarnessBatcher` for `config` (one per configuration: one model load)."""
    with _BATCHERS_LOCK:
        found = _BATCHERS.get(config)
        if found is None:
            found = _BATCHERS[config] = HarnessBatcher(config)
        return found


def batchers() -> list[HarnessBatcher]:
    """Every `HarnessBatcher` this process made (tests and the benchmark read their counters)."""
    with _BATCHERS_LOCK:
        return list(_BATCHERS.values())


def reset_batchers() -> None:
    with _BATCHERS_LOCK:
        _BATCHERS.clear()


class EngineThread:
    """The process's one thread for engine calls (`in_engine_thread`), started on first use.

    Torch's CPU kernels run on an OpenMP team that belongs to the thread that calls them: a new
    thread per engine call builds a new team (and MKL's per-thread buffers) each time, and two teams
    on the same cores slow each other (the idle one spins). So every engine call, and the model
    loading and warm-up before them, goes to this one long-lived daemon thread, in turn. Unlike
    `asyncio.to_thread`, nothing (no executor shutdown at the end of `asyncio.run`, no interpreter
    exit) waits for a call in progress."""

    def __init__(self, name: str = "q2-engine") -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future, Callable[[], Any]]]
        self._jobs = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def submit(self, loop: asyncio.AbstractEventLoop, run: Callable[[], Any]) -> asyncio.Future:
        """`run()` in the engine thread; its result (or exception) on a future of `loop`."""
        future = loop.create_future()
        if threading.current_thread() is self._thread:  # called from an engine call: no deadlock
            _settle(future, *_call(run))
            return future
        with self._start:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
        self._jobs.put((loop, future, run))
        return future

    def _work(self) -> None:
        while True:
            loop, future, run = self._jobs.get()
            value, err = _call(run)
            try:
                loop.call_soon_threadsafe(_settle, future, value, err)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass
            del loop, future, run, value, err  # nothing of a finished call is kept until the next


def _call(run: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return run(), None
    except BaseException as exc:
        return None, exc


def _settle(future: asyncio.Future, value: Any, err: BaseException | None) -> None:
    if not future.done():
        future.set_exception(err) if err is not None else future.set_result(value)


ENGINE_THREAD = EngineThread()


def in_engine_thread(loop: asyncio.AbstractEventLoop, run: Callable[[], Any]) -> asyncio.Future:
    """`run()` in the process's engine thread (`EngineThread`); its result on a future of `loop`."""
    return ENGINE_THREAD.submit(loop, run)


class AsyncBatcher:
    """Gathers concurrent `score` calls into engine calls of at most `max_batch` items.

    The first request of a batch waits at most `max_wait` seconds for others (a full batch goes at
    once); one batch is scored at a time, in the process's engine thread. `adaptive` (the service's
    policy, `q2 serve`): a batch waits only for the items it can expect, as many as were in flight
    when the last engine call ended, while they keep coming (no quiet gap longer than `max_wait`)
    and at most as long as that call took; a lone client's request goes at once. A cancelled
    request leaves its batch (it is never scored); when every request of the batch in flight is
    cancelled, the engine call stops at its next model batch. Works across event loops (each loop gets its own queue state),
    so one batcher may serve several `asyncio.run` calls. `progress` hears each engine call's stages.
    """

    def __init__(
        self,
        items_batcher: HarnessBatcher,
        max_batch: int | None = None,
        max_wait: float = DEFAULT_MAX_WAIT,
        progress: Callable[[str, int, int], None] | None = None,
        adaptive: bool = False,
    ) -> None:
        self.items_batcher = items_batcher
        self.adaptive = adaptive
        self.max_batch: int = max_batch or getattr(items_batcher, "max_batch", None) or DEFAULT_MAX_BATCH
        if isinstance(max_wait, bool) or not (
            isinstance(max_wait, (int, float)) and max_wait >= 0 and math.isfinite(max_wait)
        ):
            raise Q2OptionError(f"Invalid max_wait={max_wait!r}: use a number of seconds >= 0.")
        self.max_wait = float(max_wait)
        self.progress = progress
        self._state: dict[int, dict[str, Any]] = {}
        self.batches: list[int] = []  # the size of each engine call made (tests read it)
        self.stopped = 0  # engine calls stopped because all their samples were cancelled

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

    async def score(self, item: Item) -> Scored:
        state = self._loop_state()
        future: asyncio.Future = state["loop"].create_future()
        entry = (item, future)
        state["pending"].append(entry)
        if len(state["pending"]) >= self.max_batch:
            state["full"].set()
        if state["worker"] is None or state["worker"].done():
            state["worker"] = asyncio.ensure_future(self._drain(state))
        try:
            return await future
        finally:
            if future.cancelled() and entry in state["pending"]:
                state["pending"].remove(entry)  # cancelled before its batch went: never scored

    def _progress_until(self, stop: threading.Event) -> Callable[[str, int, int], None]:
        """The engine's progress callback: passes progress on, and stops the call once `stop` is set."""

        def progress(name: str, done: int, total: int) -> None:
            if stop.is_set():
                raise ScoringCancelled("Every sample of this Q² engine call was cancelled.")
            if self.progress is not None:
                self.progress(name, done, total)

        return progress

    async def _wait_first(self, state: dict[str, Any]) -> None:
        """Waits at most `max_wait` seconds after the first pending request for a full batch."""
        if len(state["pending"]) < self.max_batch and self.max_wait:
            state["full"].clear()
            try:
                await asyncio.wait_for(state["full"].wait(), self.max_wait)
            except asyncio.TimeoutError:
                pass

    async def _gather(self, state: dict[str, Any]) -> None:
        """The adaptive wait (`adaptive`): a batch waits for as many items as were in flight when the
        last engine call ended (its own and those that came during it: a closed-loop client sends
        its next request once answered), while they keep coming, for at most that call's time."""
        want = min(self.max_batch, state["in_flight"])
        if len(state["pending"]) >= want or not self.max_wait:
            return
        tick = min(0.001, self.max_wait)
        deadline = time.perf_counter() + state["last_call"]
        seen, quiet = len(state["pending"]), 0.0
        while len(state["pending"]) < want and quiet < self.max_wait:
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

    async def _drain(self, state: dict[str, Any]) -> None:
        while state["pending"]:
            await (self._gather(state) if self.adaptive else self._wait_first(state))
            batch = [e for e in state["pending"][: self.max_batch] if not e[1].done()]
            del state["pending"][: self.max_batch]
            if not batch:
                continue
            self.batches.append(len(batch))
            futures = [f for _, f in batch]
            # bound to this batch: a future's callback may fire after the loop has moved on
            stop = _stop_when_all_cancelled(futures)
            run = functools.partial(
                self.items_batcher.score_items,
                [i for i, _ in batch],
                self.max_batch,
                self._progress_until(stop),
            )
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


# -- options -------------------------------------------------------------------------------------

HARNESS_OPTIONS = ("variant", "batch_size", "tiny", "max_batch")


def harness_config(
    options: dict[str, Any] | None = None, spell: Callable[[str], str] = frontend.python_name
) -> tuple[Any, int | None]:
    """(`Q2Config`, max_batch) from a harness's option values: `variant`, `batch_size`, `tiny`,
    `max_batch` (items per engine call; None: the adapter's default) and any `Q2Config` option,
    checked by the contract's options path (`frontend.configure`; `tiny` defaults to the
    `Q2_TINY` environment variable). Errors: one `Q2OptionError` sentence naming the option as
    `spell` spells it."""
    options = dict(options or {})
    variant = options.pop("variant", None) or "paper"
    batch_size = options.pop("batch_size", None)
    tiny = options.pop("tiny", None)
    max_batch = options.pop("max_batch", None)
    config = frontend.configure(options, variant=variant, tiny=tiny, batch_size=batch_size, spell=spell)
    if max_batch is not None and (
        isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1
    ):
        raise Q2OptionError(f"Invalid Q² option {spell('max_batch')}={max_batch!r}: use an integer >= 1.")
    return config, max_batch


def batcher_for(
    options: dict[str, Any] | None = None,
    spell: Callable[[str], str] = frontend.python_name,
    check: bool = False,
    tiny_hint: str | None = None,
) -> tuple[HarnessBatcher, int | None]:
    """The process's `HarnessBatcher` for these harness options and the `max_batch` they ask for (see
    `harness_config`); with `check`, its models checked now (`HarnessBatcher.check`)."""
    config, max_batch = harness_config(options, spell)
    found = harness_batcher(config)
    if check:
        found.check(spell, tiny_hint)
    return found, max_batch
