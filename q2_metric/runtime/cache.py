"""The process's ONE cache of engines and micro-batchers.

One `Engine` (so one model load) per configuration, whatever the batch sizes asked of it; one
`MicroBatcher` per engine, policy and progress: DeepEval copies its metrics for every test case,
MLflow may rebuild a scorer, Inspect builds a scorer per task and ragas a metric per run, and the
copies must still gather their concurrent samples into one engine call, so they find the same
batcher (and the same models) here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from q2_metric import frontend
from q2_metric.options import Spelling, python_name
from q2_metric.runtime.engine import Engine
from q2_metric.runtime.micro import CallLines, MicroBatcher
from q2_metric.runtime.policy import DEFAULT_MAX_WAIT, BatchPolicy, check_max_batch, check_max_wait

_ENGINES: dict[Any, Engine] = {}
_MICRO: dict[tuple[Any, BatchPolicy, bool], MicroBatcher] = {}
_LOCK = threading.Lock()


def engine(config: Any) -> Engine:
    """The process's `Engine` for `config` (one per configuration: one model load)."""
    with _LOCK:
        found = _ENGINES.get(config)
        if found is None:
            found = _ENGINES[config] = Engine(config)
        return found


def engines() -> list[Engine]:
    """Every `Engine` this process made (tests and the benchmark read their counters)."""
    with _LOCK:
        return list(_ENGINES.values())


def reset() -> None:
    """Forgets every engine and micro-batcher (tests)."""
    with _LOCK:
        _ENGINES.clear()
        _MICRO.clear()


def runtime_config(
    options: Mapping[str, Any] | None = None, spell: Spelling = python_name
) -> tuple[Any, int | None]:
    """(`Q2Config`, max_batch) from an adapter's option values: `variant`, `batch_size`, `tiny`,
        `max_batch` (items per engine call; None: the adapter's default) and any `Q2Config` option
    (`operating_point` is left to the adapter's decision, `frontend.decision_of`),
        checked by the contract's options path (`frontend.configure`; `tiny` defaults to the `Q2_TINY`
        environment variable). Errors: one `Q2OptionError` sentence naming the option as `spell`
        spells it."""
    given = dict(options or {})
    variant = given.pop("variant", None) or "paper"
    batch_size = given.pop("batch_size", None)
    tiny = given.pop("tiny", None)
    max_batch = given.pop("max_batch", None)
    given.pop("operating_point", None)  # the decision's, not the engine's (`frontend.decision_of`)
    config = frontend.configure(given, variant=variant, tiny=tiny, batch_size=batch_size, spell=spell)
    return config, None if max_batch is None else check_max_batch(max_batch, spell)


def engine_for(
    options: Mapping[str, Any] | None = None,
    spell: Spelling = python_name,
    check: bool = False,
    tiny_hint: str | None = None,
) -> tuple[Engine, int | None]:
    """The process's `Engine` for these options and the `max_batch` they ask for (see
    `runtime_config`); with `check`, its models checked now (`Engine.check`)."""
    config, max_batch = runtime_config(options, spell)
    found = engine(config)
    if check:
        found.check(spell, tiny_hint)
    return found, max_batch


def micro_batcher(
    options: Mapping[str, Any] | None = None,
    *,
    max_wait: Any = DEFAULT_MAX_WAIT,
    progress: bool = False,
    spell: Spelling = python_name,
    tiny_hint: str | None = None,
    write: Callable[[str], None] | None = None,
) -> tuple[Engine, MicroBatcher]:
    """The process's engine for these Q² options (checked by the contract's options path, the
    models checked before any work: one `Q2Error` sentence naming the option as `spell` does) and
    its one `MicroBatcher` of this `max_batch`, `max_wait` and `progress` (a line on stderr after
    each engine call, `CallLines`)."""
    check_max_wait(max_wait, spell)
    found, max_batch = engine_for(options, spell, check=True, tiny_hint=tiny_hint)
    policy = BatchPolicy(max_batch or found.max_batch, max_wait, spell=spell)
    key = (found.config, policy, bool(progress))
    with _LOCK:
        micro = _MICRO.get(key)
        if micro is None or micro.engine is not found:
            lines = (CallLines(write) if write is not None else CallLines()) if progress else None
            micro = _MICRO[key] = MicroBatcher(found, policy, progress=lines)
        return found, micro
