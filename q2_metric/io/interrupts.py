"""SIGINT and SIGTERM as exceptions, and sections they cannot cut (standard library only, so that
the command line can install the handlers before anything heavy is imported).

A signal raises `Interrupted` (a `KeyboardInterrupt`) in the main thread, so that every `finally`
and cleanup runs and the command line prints one line and exits 128 + the signal's number (130,
143). Inside `uninterruptible()` a signal waits until the section is done (a cache line, or the
renames of an output set, are never cut).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A SIGINT or SIGTERM; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def install() -> dict:
    """Make SIGINT and SIGTERM raise `Interrupted` (main thread only; elsewhere a no-op). Returns
    the handlers it replaced, for `restore`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _raise) for sig in SIGNALS}


def restore(previous: dict) -> None:
    """Put back the handlers `install` replaced (a caller of the command line in-process keeps its own)."""
    for sig, handler in previous.items():
        signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def exit_code(err: BaseException) -> int:
    """128 + the signal's number: 130 for SIGINT (a plain KeyboardInterrupt too), 143 for SIGTERM."""
    return 128 + int(getattr(err, "signum", signal.SIGINT))


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the section is done, then deliver the first one received (to
    the handler in place before: an exception, or the default action). Outside the main thread,
    where Python runs no handler, the section simply runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum)) for sig in SIGNALS}
    try:
        yield
    finally:
        restore(previous)
        if received:
            signal.raise_signal(received[0])
