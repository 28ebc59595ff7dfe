"""What the MLflow scorer and the DeepEval metric share, over the async micro-batcher
(`batcher.AsyncBatcher`) and the contract (`q2_metric.frontend`).

- `merged_options`: Q² options given as keywords and in `options={...}` as one mapping (a name given
  twice with different values is one sentence).
- `shared_batcher`: ONE `AsyncBatcher` per process and configuration. DeepEval copies its metrics for
  every test case and MLflow may rebuild a scorer; the copies must still gather their concurrent
  samples into one engine call, so they find the same batcher (and the same models) here.
- `score_from_thread`: a call from a plain thread (MLflow scores each row in a thread of its pool)
  waits on the batcher in one background event loop, so rows scored at the same time by different
  threads share an engine call.
- `CallLines`: a progress callback writing one line on stderr after each engine call.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from q2_metric.errors import Q2OptionError
from q2_metric.frontend import Item
from q2_metric.harness.batcher import DEFAULT_MAX_WAIT, AsyncBatcher, HarnessBatcher, Scored, batcher_for

# The keywords of the MLflow scorer and the DeepEval metric that are Q² options (the rest: `options`).
KEYWORDS = ("variant", "tiny", "batch_size", "max_batch", "qg_model", "qa_model", "nli_model", "device")


def merged_options(keywords: Mapping[str, Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """`options` with the keywords that are set (not None) added; a name given both ways with
    different values is one `Q2OptionError` sentence."""
    merged = dict(options or {})
    for name, value in keywords.items():
        if value is None:
            continue
        if name in merged and merged[name] != value:
            raise Q2OptionError(
                f"The Q² option {name} is given twice with different values ({name}={value!r} "
                f"and options[{name!r}]={merged[name]!r}); give it once."
            )
        merged[name] = value
    return merged


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


_SHARED: weakref.WeakKeyDictionary[HarnessBatcher, dict[tuple[int, float, bool], AsyncBatcher]] = (
    weakref.WeakKeyDictionary()
)
_SHARED_LOCK = threading.Lock()


def shared_batcher(
    options: Mapping[str, Any],
    *,
    max_wait: float = DEFAULT_MAX_WAIT,
    progress: bool = True,
    tiny_hint: str | None = None,
) -> tuple[HarnessBatcher, AsyncBatcher]:
    """The process's batchers for these Q² options (checked by the contract's options path, the
    models checked before any work: one `Q2Error` sentence): the engine's (`HarnessBatcher`, one
    model load) and the one `AsyncBatcher` of this `max_batch`, `max_wait` and `progress`."""
    items_batcher, max_batch = batcher_for(dict(options), check=True, tiny_hint=tiny_hint)
    size = max_batch or items_batcher.max_batch
    key = (size, float(max_wait), bool(progress))
    with _SHARED_LOCK:
        found = _SHARED.setdefault(items_batcher, {})
        if key not in found:
            found[key] = AsyncBatcher(
                items_batcher, max_batch=size, max_wait=max_wait, progress=CallLines() if progress else None
            )
        return items_batcher, found[key]


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


def score_from_thread(batcher: AsyncBatcher, item: Item) -> Scored:
    """`await batcher.score(item)` from a thread with no running event loop: calls from several
    threads at once are gathered into one engine call. Interrupted, the item leaves its batch."""
    future = asyncio.run_coroutine_threadsafe(batcher.score(item), _background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def details_of(scored: Scored) -> dict[str, list[dict[str, Any]]] | None:
    """The item's `spans` and `unsupported_spans` (character offsets in the response), or None for
    a bad item."""
    return None if scored.response is None else scored.response.span_details()


__all__ = ["KEYWORDS", "CallLines", "details_of", "merged_options", "score_from_thread", "shared_batcher"]
