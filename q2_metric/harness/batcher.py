"""Batched engine calls shared by the harness adapters.

Harnesses hand replies to a metric one at a time; Q² is fast only over many at once (each stage
de-duplicates its model inputs and makes one component call per engine call). Two ways in:

- `Q2Engine.score_pairs` (and `collect`): a whole run's (reply, knowledge) pairs at once, in
  engine calls of at most `max_batch` replies (lm-eval: by default the whole run in one call);
  `collect` remembers the last result, so that the several figures of one run (lm-eval aggregates
  each metric apart) cost one engine call.
- `AsyncBatcher`: concurrent `await batcher.score(reply, knowledge)` calls (Inspect AI's
  scorers, ragas' samples) are gathered into one engine call of at most `max_batch` replies,
  waiting at most `max_wait` seconds for more after the first; the engine runs in a worker
  thread, so the event loop goes on.

One engine (so one model load) per process and configuration: `engine(config)`, whatever the
batch sizes asked of it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from dataclasses import dataclass
from typing import Any, Sequence

DEFAULT_MAX_BATCH = 64
DEFAULT_MAX_WAIT = 0.05  # seconds the micro-batcher waits for more requests after the first


@dataclass(frozen=True)
class Scored:
    """One reply's score: its `ResponseScore` and the signature of the engine call that made it."""

    response: Any  # q2_metric.ResponseScore
    signature: Any  # q2_metric.Signature

    @property
    def value(self) -> float:
        return self.response.q2

    def reason(self) -> str:
        """Why the score is what it is, in one sentence (as `q2 score` writes it)."""
        from q2_metric.explain import reason_line

        return reason_line(self.response)


class Q2Engine:
    """A scorer with counters: `engine_calls` (calls of the Q² engine) and the replies scored."""

    def __init__(self, config: Any, max_batch: int = DEFAULT_MAX_BATCH, scorer: Any = None) -> None:
        from q2_metric import Q2Scorer

        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"Invalid max_batch={max_batch!r}: use an integer >= 1.")
        self.config = config
        self.max_batch = max_batch
        self.scorer = scorer if scorer is not None else Q2Scorer(config)  # tests pass a scripted one
        self.engine_calls = 0
        self.replies = 0
        self._lock = threading.Lock()  # one engine call at a time (the models are not re-entrant)
        self._last: tuple[tuple, Any] | None = None

    def score_pairs(self, replies: Sequence[str], knowledge: Sequence[str],
                    max_batch: int | None = None) -> list[Scored]:
        """Every pair scored, in engine calls of at most `max_batch` replies (default: the engine's)."""
        step = max_batch or self.max_batch
        out: list[Scored] = []
        for start in range(0, len(replies), step):
            stop = start + step
            with self._lock:
                result = self.scorer.score(list(replies[start:stop]), list(knowledge[start:stop]))
                self.engine_calls += 1
                self.replies += len(result.responses)
            out += [Scored(r, result.signature) for r in result.responses]
        return out

    def collect(self, pairs: Sequence[tuple[str, str]], max_batch: int | None = None) -> "Collected":
        """A run's pairs scored once (engine calls of at most `max_batch`): the same pairs asked
        again give the remembered result."""
        key = tuple((str(r), str(k)) for r, k in pairs)
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
        scored = self.score_pairs([r for r, _ in key], [k for _, k in key], max_batch)
        collected = Collected(scored)
        with self._lock:
            self._last = (key, collected)
        return collected


class Collected:
    """The scores of a whole run and its system figures (as `q2 score` computes them)."""

    def __init__(self, scored: list[Scored]) -> None:
        from q2_metric.steps.system_score import system_of

        self.scored = scored
        self.system = system_of([s.response for s in scored])
        sigs = list(dict.fromkeys(str(s.signature) for s in scored))
        self.signature = scored[0].signature if len(sigs) == 1 else None
        self.signatures = sigs


_ENGINES: dict[tuple, Q2Engine] = {}
_ENGINES_LOCK = threading.Lock()


def engine(config: Any) -> Q2Engine:
    """The process's engine for `config` (one per configuration: one model load). On the tiny
    random models it logs, once, the line every front-end prints: the scores mean nothing."""
    with _ENGINES_LOCK:
        found = _ENGINES.get(config)
        if found is None:
            found = _ENGINES[config] = Q2Engine(config)
            from q2_metric.models.tiny import meaningless_note, uses_tiny

            if uses_tiny(config):
                logging.getLogger("q2_metric").warning(meaningless_note())
        return found


def engines() -> list[Q2Engine]:
    """Every engine this process made (tests and the benchmark read their counters)."""
    with _ENGINES_LOCK:
        return list(_ENGINES.values())


def reset_engines() -> None:
    with _ENGINES_LOCK:
        _ENGINES.clear()


class AsyncBatcher:
    """Gathers concurrent `score` calls into engine calls of at most `max_batch` replies.

    The first request of a batch waits at most `max_wait` seconds for others (a full batch goes at
    once); one batch is scored at a time, in a worker thread. Works across event loops (each loop
    gets its own queue state), so one batcher may serve several `asyncio.run` calls.
    """

    def __init__(self, q2_engine: Q2Engine, max_batch: int | None = None,
                 max_wait: float = DEFAULT_MAX_WAIT) -> None:
        self.engine = q2_engine
        self.max_batch = max_batch or getattr(q2_engine, "max_batch", DEFAULT_MAX_BATCH)
        if not (isinstance(max_wait, (int, float)) and max_wait >= 0 and math.isfinite(max_wait)):
            raise ValueError(f"Invalid max_wait={max_wait!r}: use a number of seconds >= 0.")
        self.max_wait = float(max_wait)
        self._state: dict[int, dict[str, Any]] = {}
        self.batches: list[int] = []  # the size of each engine call made (tests read it)

    def _loop_state(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        state = self._state.get(id(loop))
        if state is None or state["loop"] is not loop:
            state = self._state[id(loop)] = {"loop": loop, "pending": [], "full": asyncio.Event(),
                                             "worker": None, "run": asyncio.Lock()}
        return state

    async def score(self, reply: str, knowledge: str) -> Scored:
        state = self._loop_state()
        future: asyncio.Future = state["loop"].create_future()
        state["pending"].append((reply, knowledge, future))
        if len(state["pending"]) >= self.max_batch:
            state["full"].set()
        if state["worker"] is None or state["worker"].done():
            state["worker"] = asyncio.ensure_future(self._drain(state))
        return await future

    async def _drain(self, state: dict[str, Any]) -> None:
        while state["pending"]:
            if len(state["pending"]) < self.max_batch and self.max_wait:
                state["full"].clear()
                try:
                    await asyncio.wait_for(state["full"].wait(), self.max_wait)
                except asyncio.TimeoutError:
                    pass
            batch = state["pending"][:self.max_batch]
            del state["pending"][:self.max_batch]
            self.batches.append(len(batch))
            try:
                scored = await asyncio.to_thread(self.engine.score_pairs, [b[0] for b in batch],
                                                 [b[1] for b in batch], self.max_batch)
            except BaseException as err:  # noqa: BLE001 - every waiting sample gets the error
                for *_, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
                if not isinstance(err, Exception):
                    raise
                continue
            for (*_, fut), s in zip(batch, scored):
                if not fut.done():
                    fut.set_result(s)


# -- options -------------------------------------------------------------------------------------

HARNESS_OPTIONS = ("variant", "batch_size", "tiny", "max_batch")


def harness_config(options: dict[str, Any] | None = None, spell: Any = None) -> tuple[Any, int | None]:
    """(`Q2Config`, max_batch) from a harness's option values: `variant`, `batch_size`, `tiny`,
    `max_batch` (replies per engine call; None: the adapter's default) and any `Q2Config` option,
    checked by the project's one options path (`build_config`; `tiny` defaults to the `Q2_TINY`
    environment variable)."""
    from q2_metric.options import build_config

    options = dict(options or {})
    variant = options.pop("variant", None) or "paper"
    batch_size = options.pop("batch_size", None)
    tiny = options.pop("tiny", None)
    max_batch = options.pop("max_batch", None)
    kwargs = {"spell": spell} if spell is not None else {}
    config = build_config(variant, options, batch_size=batch_size, tiny=tiny, **kwargs)
    if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1):
        raise ValueError(f"Invalid Q² option max_batch={max_batch!r}: use an integer >= 1.")
    return config, max_batch


def engine_for(options: dict[str, Any] | None = None) -> tuple[Q2Engine, int | None]:
    """The process's engine for these harness options and the `max_batch` they ask for (see
    `harness_config`)."""
    config, max_batch = harness_config(options)
    return engine(config), max_batch
