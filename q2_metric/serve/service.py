"""The state of one serving process (`Service`) and the path of a `/v1/score` request below its
route: the contract's one item check (`frontend.check_items`, once per item) -> the queue bound ->
the runtime's micro-batcher (`MicroBatcher`, adaptive) -> the engine (`Engine`) -> each item's
record (`protocol.item_json`). Fail closed: an item Q² could not check is `unverified`."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
from q2_metric.serve.protocol import Asked, Opened, RequestError, item_json
from q2_metric.telemetry.events import caller_context

WARM_ITEM = Item(
    "warm-up", "Bob Ross hosted The Joy of Painting.", "Bob Ross hosted the show The Joy of Painting."
)
NEUTRAL_WARM_ITEM = Item("warm-up", "Bob Ross, 1983.", "Bob Ross, 1983.")


class Service:
    """The models, the micro-batcher and the state of one serving process."""

    def __init__(
        self, config: Q2Config, limits: Limits, scorer: Any = None, operating_point: Any = None
    ) -> None:
        # the operating point's threshold is the requests' default (`q2 serve --operating-point`)
        self.decision = frontend.decision(operating_point)
        if self.decision.operating_point is not None:
            limits = dataclasses.replace(limits, threshold=self.decision.threshold)
        else:
            self.decision = frontend.Decision(limits.threshold)
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
        self.streams: dict[str, Session] = {}  # the streaming check's open streams, by id
        self.closed: OrderedDict[str, str] = OrderedDict()  # the last CLOSED_KEPT closed ones: why
        self._sweeper: asyncio.Future[None] | None = None

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
        outcome = engine.score_items([warm], emit=False)  # no caller asked for it: no event
        self.signature = str(self.decision.sign(outcome.signature))
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
            self._sweeper = asyncio.ensure_future(self._sweep())

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
            "threshold": self.decision.threshold,
            "operating_point": self.decision.summary(),
            "versions": {"q2-metric": __version__, **library_versions()},
        }

    def _device(self) -> str:
        return frontend.device_kind(self.config)

    async def answer(self, asked: list[Asked], request: Any) -> tuple[dict[str, Any], float]:
        """The response of one request's items and the seconds of the engine calls it waited for
        (the longest), or a `RequestError`: each item checked once, the queue bound, the
        micro-batcher; the client's disconnect drops its items from their batch."""
        limits, metrics = self.limits, self.metrics
        # each item's event: labelled at its threshold, parented to the caller's span (W3C traceparent)
        parent = caller_context(request.headers.get("traceparent"))
        for a in asked:
            a.item = dataclasses.replace(a.item, threshold=a.threshold, parent=parent)
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
        if all(a.threshold == self.decision.threshold for a in asked):  # decided at the service's point
            signature = self.decision.sign(signature)
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

    # -- the streaming check (docs/streaming.md) ----------------------------------------------------

    def open_stream(self, opened: Opened) -> Session:
        """A new stream: the knowledge checked once (422 with the contract's sentence), the
        open-stream bound (429). Nothing is scored."""
        from q2_metric.errors import Q2InputError
        from q2_metric.runtime.stream import StreamCore

        if self.config.coref:
            raise RequestError(
                501, "This service resolves coreference (--coref), which the streaming check does not."
            )
        if len(self.streams) >= self.limits.max_streams:
            raise RequestError(
                429,
                f"{len(self.streams)} streams are open, the most this service holds; try again later.",
                {"Retry-After": str(self.limits.retry_after)},
            )
        try:
            core = StreamCore(
                opened.knowledge,
                threshold=opened.threshold,
                max_chars=self.limits.max_stream_chars,
                language=self.config.language,
            )
        except Q2InputError as err:
            why = str(err)
            raise RequestError(422, why[:1].upper() + why[1:]) from None
        ident = secrets.token_urlsafe(12)
        session = self.streams[ident] = Session(ident, core, opened)
        self.metrics.streams_opened.inc()
        self.metrics.streams_open.set(len(self.streams))
        return session

    def session(self, ident: str) -> Session:
        """The open stream `ident`: 410 with the sentence it was closed with, 404 when unknown."""
        found = self.streams.get(ident)
        if found is not None:
            return found
        why = self.closed.get(ident)
        if why is not None:
            raise RequestError(410, why)
        raise RequestError(404, f"No stream {ident!r} is open here.")

    def close_stream(self, session: Session, reason: str, sentence: str) -> None:
        """The stream closed (its memory freed) and counted by `reason`; its later requests get
        410 with `sentence`."""
        if self.streams.pop(session.id, None) is None:
            return
        self.closed[session.id] = sentence
        while len(self.closed) > CLOSED_KEPT:
            self.closed.popitem(last=False)
        self.metrics.streams_closed.labels(reason).inc()
        self.metrics.streams_open.set(len(self.streams))

    async def feed_stream(self, session: Session, text: str, end: bool) -> dict[str, Any]:
        """A chunk of the stream's answer: the sentences it completed, each scored once (all at once
        through the micro-batcher, with the other streams' and requests' items); with `end`, the
        last sentences and the final record (the whole answer's batch entry), and the stream closes.
        A refused or failed scoring (429, 504, 500) leaves the stream as it was: the same chunk may
        be sent again. Past the stream's characters: 413, and the stream is closed."""
        from q2_metric.errors import Q2InputError
        from q2_metric.runtime.stream import score_all

        core = session.core
        async with session.lock:
            if session.id not in self.streams:  # closed while this request waited for its turn
                self.session(session.id)
            session.busy += 1
            state = core.snapshot()
            try:
                try:
                    items, whole = core.finish(text) if end else (core.take(text), None)
                except Q2InputError as err:
                    size = core.chars + len(text)
                    if size > core.max_chars:
                        self.close_stream(
                            session,
                            "limit",
                            f"The stream was closed: it would have held {size} characters, past the "
                            f"most taken ({core.max_chars}).",
                        )
                        raise RequestError(
                            413,
                            f"The stream would hold {size} characters: at most {core.max_chars} are taken "
                            "(--max-stream-chars); it is closed.",
                        ) from None
                    raise RequestError(422, str(err)) from None
                try:
                    results, final = await score_all(core, items, whole, self._score_checked)
                except BaseException:
                    core.restore(state)
                    raise
            finally:
                session.busy -= 1
                session.last = time.monotonic()
        self.metrics.stream_sentences.inc(len(results))
        out: dict[str, Any] = {"sentences": [r.to_dict(spans=session.spans) for r in results]}
        if final is not None:
            asked = Asked(
                session.opened.id, Item(session.opened.key, None, None), core.threshold, session.spans
            )
            entry = item_json(asked, final.result)  # the entry /v1/score gives the whole answer
            signature = final.signature
            if core.threshold == self.decision.threshold:  # decided at the service's point
                signature = self.decision.sign(signature)
            out = {"signature": str(signature), **out, "final": entry}
            self.close_stream(session, "end", "The stream has ended.")
        return out

    async def _score_checked(self, checked: list[CheckedItem]) -> list[Scored]:
        """Items already checked, through the queue bound (429), the micro-batcher and the timeout
        (504); in order."""
        limits, metrics = self.limits, self.metrics
        if self.queued + len(checked) > limits.max_queue:
            raise RequestError(
                429,
                f"The queue is full ({self.queued} items waiting); try again later.",
                {"Retry-After": str(limits.retry_after)},
            )
        assert self.micro is not None
        micro = self.micro
        self.queued += len(checked)
        metrics.queue.set(self.queued)
        tasks = [asyncio.ensure_future(micro.score(c)) for c in checked]
        try:
            return list(await asyncio.wait_for(asyncio.gather(*tasks), limits.timeout))
        except asyncio.TimeoutError:
            metrics.items.labels("timeout").inc(len(checked))
            raise RequestError(504, f"Scoring took longer than {limits.timeout:g} s.") from None
        finally:
            for t in tasks:
                t.cancel()
            self.queued -= len(checked)
            metrics.queue.set(self.queued)

    def sweep(self, now: float | None = None) -> None:
        """Closes every stream quiet for longer than the idle timeout (none with a request in flight)."""
        now = time.monotonic() if now is None else now
        idle = self.limits.stream_idle_timeout
        for session in list(self.streams.values()):
            if session.busy == 0 and now - session.last > idle:
                self.close_stream(
                    session, "idle", f"The stream was closed: no request for {idle:g} s (the idle timeout)."
                )

    def stop_sweeping(self) -> None:
        """The idle sweep stopped (the service stops)."""
        if self._sweeper is not None:
            self._sweeper.cancel()

    async def _sweep(self) -> None:
        """`sweep` every quarter of the idle timeout (at most every second), while the service runs."""
        pause = min(1.0, self.limits.stream_idle_timeout / 4)
        while not self.draining:
            await asyncio.sleep(pause)
            self.sweep()


CLOSED_KEPT = 4096  # closed streams whose reason is kept for their late requests (410); older: 404


@dataclass
class Session:
    """One open stream of the service: its core (`runtime.stream.StreamCore`), its settings, its
    last request's time, the requests in flight and its turn lock (one chunk at a time)."""

    id: str
    core: Any  # runtime.stream.StreamCore
    opened: Opened
    last: float = field(default_factory=time.monotonic)
    busy: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def spans(self) -> bool:
        return self.opened.spans


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
