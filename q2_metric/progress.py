"""Progress reporting for long scoring runs: a callback `(stage, done, total)` per engine stage.

The engine runs its stages (`STAGES`) in order inside `stage()`; within a stage, `done` and `total`
count the distinct model inputs sent so far (`total` grows when a stage makes several model calls,
as the question filter does rank by rank), advanced batch by batch by the model backends
(`batch_done`). After the last stage the callback gets `(DONE, n, n)`. Front-ends pass
`tqdm_progress()` (a bar per stage), `log_progress()` (a log line per stage and per interval) or
their own callback (the Space); `None` reports nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

ProgressCallback = Callable[[str, int, int], None]

STAGES = ("candidates", "questions", "question filter", "knowledge answers", "span scores", "response scores")
DONE = "done"


@dataclass
class _Stage:
    callback: ProgressCallback
    name: str
    done: int = 0
    total: int = 0
    call: tuple[int, int] | None = None  # (done before the running model call, its inputs)

    def report(self) -> None:
        self.callback(self.name, self.done, self.total)


_ACTIVE: contextvars.ContextVar[_Stage | None] = contextvars.ContextVar("q2_progress_stage", default=None)


@contextlib.contextmanager
def stage(progress: Optional[ProgressCallback], name: str) -> Iterator[None]:
    """Run one engine stage, reporting its model inputs to `progress` (nothing when None)."""
    if progress is None:
        yield
        return
    current = _Stage(progress, name)
    token = _ACTIVE.set(current)
    current.report()
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def model_inputs(count: int) -> Iterator[None]:
    """A model call on `count` distinct inputs inside the running stage (see `q2_metric.unique`)."""
    current = _ACTIVE.get()
    if current is None or count == 0:
        yield
        return
    start = current.done
    current.total += count
    current.call = (start, count)
    current.report()
    try:
        yield
    finally:
        current.call = None
        current.done = start + count
        current.report()


def batch_done(done: int, total: int) -> None:
    """Called by a model backend after each batch: `done` of its `total` inputs are through (its
    inputs may be windows of the engine's, so the share is what counts)."""
    current = _ACTIVE.get()
    if current is None or current.call is None or total <= 0:
        return
    start, count = current.call
    value = start + min(count, count * done // total)
    if value > current.done:
        current.done = value
        current.report()


def stage_label(name: str) -> str:
    """`2/6 questions` for an engine stage, the name itself otherwise."""
    return f"{STAGES.index(name) + 1}/{len(STAGES)} {name}" if name in STAGES else name


def tqdm_progress(desc: str = "Q²", leave: bool = False, position: int | None = None) -> ProgressCallback:
    """A callback that shows one tqdm bar per stage (`Q² 2/6 questions: 40/120 inputs`)."""
    from tqdm.auto import tqdm

    shown: dict[str, object] = {}

    def report(name: str, done: int, total: int) -> None:
        bar = shown.get("bar")
        if shown.get("stage") != name:
            if bar is not None:
                bar.close()
            shown.clear()
            if name == DONE:
                return
            bar = tqdm(total=total, desc=f"{desc} {stage_label(name)}", leave=leave, unit=" inputs",
                       position=position)
            shown.update(stage=name, bar=bar)
        bar.total = total
        bar.n = done
        bar.refresh()

    return report


def log_progress(log: Callable[[str], None], interval: float = 10.0, desc: str = "Q²") -> ProgressCallback:
    """A callback that writes a line when a stage starts and then at most every `interval` seconds
    (`Q² 2/6 questions: 40/120 model inputs`), and one when scoring is done."""
    state = {"stage": None, "last": 0.0}

    def report(name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if name == DONE:
            log(f"{desc}: all {len(STAGES)} stages done")
            state["stage"] = None
        elif name != state["stage"] or now - state["last"] >= interval:
            log(f"{desc} {stage_label(name)}: {done}/{total} model inputs")
            state.update(stage=name, last=now)

    return report


def notify(progress: Optional[ProgressCallback], stage: str, done: int, total: int) -> None:
    """Call `progress` when there is one."""
    if progress is not None:
        progress(stage, done, total)
