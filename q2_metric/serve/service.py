"""The state of one serving process (`Service`) and the path of a `/v1/score` request below its
route: the contract's one item check (`frontend.check_items`, once per item) -> the queue bound ->
the runtime's micro-batcher (`MicroBatcher`, adaptive) -> the engine (`Engine`) -> each item's
record (`protocol.item_json`). Fail closed: an item Q² could not check is `unverified`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

from q2_metric import frontend
from q2_metric.config import Q2Config
from q2_metric.errors import Q2Error
from q2_metric.frontend import CheckedItem, Item, ItemResult
from q2_metric.runtime.engine import Engine, Scored
from q2_metric.runtime.micro import MicroBatcher
from q2_metric.runtime.threads import in_engine_thread, trim_heap
from q2_metric.serve.limits import Limits
from q2_metric.serve.metrics import Metrics
from q2_metric.serve.protocol import Asked, RequestError, item_json

WARM_ITEM = Item(
    "warm-up", "Bob Ross hosted The Joy of Painting.", "Bob Ross hosted the show The Joy of Painting."
)
NEUTRAL_WARM_ITEM = Item("warm-up", "Bob Ross, 1983.", "Bob Ross, 1983.")


class Service:
    """The models, the micro-batcher and the state of one serving process."""

    def __init__(self, config: Q2Config, limits: Limits, scorer: Any = None) -> None:
        self.config, self.limits, self.scorer = config, limits, scorer
        self.metrics = Metrics()
        self.ready = False
        self.draining = False  # stopping: new requests refused, in-flight ones finished
        self.failed: str | None = None  # why the models could not be loaded
        self.queued = 0  # items accepted and not yet answered
        self.signature = ""
        self.engine: Engine | None = None
        self.micro: MicroBatcher | None = None
        self.say: Callable[[str], None] = lambda text: None  # the ready and stop lines (`q2 serve`)

    def load(self) -> None:
        """The models checked, loaded once and warmed on one item (blocking: in the engine thread,
        where every engine call runs)."""
        engine = Engine(self.config, self.limits.max_batch, scorer=self.scorer)
        if self.scorer is None:  # a given scorer (tests: a scripted one) has no model files to check
            engine.check()
        engine.scorer.load()
        # another language's set would leave the English item unverified, its models cold: a name
        # and a year, which the language gate lets through in any language (too short to judge)
        warm = WARM_ITEM if self.config.language == "en" else NEUTRAL_WARM_ITEM
        outcome = engine.score_items([warm])
        self.signature = str(outcome.signature)
        self.engine = engine
        self.micro = MicroBatcher(engine, self.limits.policy, observe=self.observe)
        self.ready = True

    def observe(self, size: int, seconds: float) -> None:
        """Each engine call of the micro-batcher (in the engine thread): its size and time in the
        metrics, then the C heap's free memory handed back (`trim_heap`)."""
        self.metrics.engine_call(size, seconds)
        trim_heap()

    async def start(self) -> None:
        try:
            await in_engine_thread(asyncio.get_running_loop(), self.load)  # the engine calls' thread
        except Exception as err:  # the service stays up and says why in /ready
            self.failed = str(err) if isinstance(err, Q2Error) else f"{type(err).__name__}: {err}"
            self.say(f"q2 serve: not ready: {self.failed}")
        else:
            self.say(f"q2 serve: ready (models loaded and warmed; {self.signature})")

    def refuse_now(self) -> None:
        """A `RequestError` (503) while the service cannot score: before its models are loaded
        (Retry-After: retrying can succeed), or while it stops (no Retry-After: it will not)."""
        if self.draining:
            raise RequestError(503, "The service is shutting down.")
        if not self.ready or self.micro is None:
            why = f" ({self.failed})" if self.failed else ""
            retry = {} if self.failed else {"Retry-After": str(self.limits.retry_after)}
            raise RequestError(503, f"The models are not loaded yet{why}.", retry)

    def info(self) -> dict[str, Any]:
        from q2_metric.signature import batch_invariant, library_versions
        from q2_metric.version import __version__

        return {
            "signature": self.signature,
            "ready": self.ready,
            "batch_invariant": batch_invariant(self.config) and self._device() == "cpu",
            "batch": "invariant" if batch_invariant(self.config) else "batch-dependent",
            "device": self._device(),
            "options": {k: _shown(v) for k, v in self.config.to_dict().items()},
            "limits": self.limits.shown(),
            "auth": self.limits.api_key is not None,
            "versions": {"q2-metric": __version__, **library_versions()},
        }

    def _device(self) -> str:
        return frontend.device_kind(self.config)

    async def answer(self, asked: list[Asked], request: Any) -> tuple[dict[str, Any], float]:
        """The response of one request's items and the seconds of the engine calls it waited for
        (the longest), or a `RequestError`: each item checked once, the queue bound, the
        micro-batcher; the client's disconnect drops its items from their batch."""
        limits, metrics = self.limits, self.metrics
        todo = [a for a in asked if a.checked is None]
        for a, checked in zip(
            todo, frontend.check_items([a.item for a in todo], self.config)
        ):  # the one check
            a.checked = checked
        good = [a for a in asked if isinstance(a.checked, CheckedItem)]
        if len(good) > limits.max_queue:
            raise RequestError(
                413,
                f"{len(good)} items to score in one request: the queue holds at most {limits.max_queue}, "
                f"so it can never be taken; send at most {limits.max_queue} items per request.",
            )
        if self.queued + len(good) > limits.max_queue:
            raise RequestError(
                429,
                f"The queue is full ({self.queued} items waiting); try again later.",
                {"Retry-After": str(limits.retry_after)},
            )
        assert self.micro is not None  # refuse_now: ready
        micro = self.micro
        self.queued += len(good)
        metrics.queue.set(self.queued)
        tasks = [asyncio.ensure_future(micro.score(a.checked)) for a in good]  # type: ignore[arg-type]
        watcher = asyncio.ensure_future(_until_disconnected(request))
        try:
            scored = await self._answers(tasks, watcher, len(good)) if tasks else []
        finally:
            watcher.cancel()
            for t in tasks:
                t.cancel()
            self.queued -= len(good)
            metrics.queue.set(self.queued)
        results = dict(zip((id(a) for a in good), (s.result for s in scored)))
        out = []
        for a in asked:
            result = results.get(id(a)) if isinstance(a.checked, CheckedItem) else a.checked
            assert isinstance(result, ItemResult)
            out.append(item_json(a, result))
            metrics.items.labels(out[-1]["status"]).inc()
        signature = scored[0].signature if scored else self.signature
        return {"signature": str(signature), "results": out}, max((s.seconds for s in scored), default=0.0)

    async def _answers(
        self, tasks: Sequence[asyncio.Future[Scored]], watcher: asyncio.Future[None], size: int
    ) -> list[Scored]:
        done: asyncio.Future[list[Scored]]
        done = asyncio.ensure_future(asyncio.wait_for(asyncio.gather(*tasks), self.limits.timeout))
        either: list[asyncio.Future[Any]] = [done, watcher]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not done.done():  # the client went away: its items leave their batch
            done.cancel()
            self.metrics.items.labels("dropped").inc(size)
            raise RequestError(499, "The client disconnected.")
        try:
            return done.result()
        except asyncio.TimeoutError:
            self.metrics.items.labels("timeout").inc(size)
            raise RequestError(504, f"Scoring took longer than {self.limits.timeout:g} s.") from None


async def _until_disconnected(request: Any) -> None:
    """Returns once the client has gone. The body is read, so the server's next message is the
    disconnect: waiting for it costs nothing (polling every request would wake the event loop, and
    take the engine's cores and GIL, hundreds of times a second under load)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _shown(value: Any) -> Any:
    """An option's value as `/v1/info` shows it: a list for a tuple, and a path by its last part
    only (the server's folders are not the client's business: the signature names the models)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, str) and os.path.isabs(value):
        return os.path.basename(os.path.normpath(value))
    return value
