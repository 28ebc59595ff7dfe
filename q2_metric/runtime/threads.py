"""The process's one engine thread (`EngineThread`, `in_engine_thread`) and the C heap's trim after
an engine call (`trim_heap`)."""

from __future__ import annotations

import asyncio
import ctypes
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any


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


def trim_heap() -> None:
    """Hands the C heap's free memory back to the system (glibc's `malloc_trim`; elsewhere nothing):
    each engine call's batch shapes leave freed blocks that glibc would otherwise keep, so a
    long-lived server's memory would climb in steps under varied load."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
