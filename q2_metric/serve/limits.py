"""The service's limits and batching, each declared ONCE with its `q2 serve` flag and help
(`cli/serve.py` makes its flags from `flags()`; docs/serve.md's table says the same)."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

from q2_metric import display
from q2_metric.errors import Q2OptionError
from q2_metric.options import flag_name
from q2_metric.runtime.policy import DEFAULT_MAX_BATCH, DEFAULT_MAX_WAIT, BatchPolicy

API_KEY_ENV = "Q2_SERVE_API_KEY"
FLAG = flag_name()  # max_body_bytes -> --max-body-bytes


def _limit(default: Any, help: str) -> Any:
    """A limit that is a `q2 serve` flag: its default and its help, declared here only."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Limits:
    """The service's limits and batching (each one a `q2 serve` flag, `flags()`), checked when made."""

    max_body_bytes: int = _limit(1_000_000, "largest request body in bytes (larger: 413)")
    max_items: int = _limit(256, "most items in one request (more: 413)")
    max_queue: int = _limit(
        1024,
        "most items accepted and not yet answered (more: 429 with Retry-After; a request with more "
        "items than this can never be taken: 413)",
    )
    timeout: float = _limit(
        60.0, "seconds a request may take once its body is read (longer: 504; its items leave their batch)"
    )
    read_timeout: float = _limit(
        10.0, "seconds a request's body may take to arrive (longer: 408, and the connection is closed)"
    )
    drain_timeout: float = _limit(
        30.0,
        "seconds a stop (SIGTERM) waits for the requests in flight before it closes their connections "
        "and exits",
    )
    max_batch: int = _limit(DEFAULT_MAX_BATCH, "most items per engine call")
    max_wait: float = _limit(
        DEFAULT_MAX_WAIT,
        "longest quiet gap a batch waits out for the items it expects (a lone client's request never waits)",
    )
    threshold: float = _limit(0.5, "default decision threshold: consistent iff Q² > it")
    max_streams: int = _limit(
        256, "most streams of the streaming check open at once (more: 429 with Retry-After)"
    )
    stream_idle_timeout: float = _limit(
        60.0,
        "seconds a stream may stay quiet (no request of its own) before it is closed with a sentence "
        "(its later requests: 410 with that sentence)",
    )
    max_stream_chars: int = _limit(
        100_000,
        "most characters of one streamed answer (more: 413, and the stream is closed): the memory a "
        "stream may hold",
    )
    retry_after: int = 1  # seconds, in Retry-After
    api_key: str | None = field(default=None, repr=False)  # Authorization: Bearer <key>

    def __post_init__(self) -> None:
        for name in (
            "max_body_bytes",
            "max_items",
            "max_queue",
            "retry_after",
            "max_streams",
            "max_stream_chars",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise Q2OptionError(f"Invalid {FLAG(name)}={value!r}: use an integer >= 1.")
        for name in ("timeout", "read_timeout", "drain_timeout", "stream_idle_timeout"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not (math.isfinite(value) and value > 0)
            ):
                raise Q2OptionError(f"Invalid {FLAG(name)}={value!r}: use a number of seconds > 0.")
        self.policy  # noqa: B018  (max_batch and max_wait: the runtime's one check, in flag words)
        display.check_threshold(self.threshold)

    @property
    def policy(self) -> BatchPolicy:
        """The micro-batcher's policy: adaptive, `max_batch` and `max_wait` (checked in flag words)."""
        return BatchPolicy(self.max_batch, self.max_wait, adaptive=True, spell=FLAG)

    def shown(self) -> dict[str, Any]:
        """The limits as `/v1/info` shows them (the key left out)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "api_key"}


def flags() -> list[tuple[str, str, type, Any, str]]:
    """(field name, flag, type, default, help) of every limit that is a flag."""
    return [
        (f.name, FLAG(f.name), type(f.default), f.default, f.metadata["help"])
        for f in dataclasses.fields(Limits)
        if "help" in f.metadata
    ]


def api_key_from(path: str | None = None) -> str | None:
    """The API key: the file `path` (its first line), else the environment variable Q2_SERVE_API_KEY;
    None: no key asked for."""
    if path:
        with open(path, encoding="utf-8") as f:
            key = f.readline().strip()
        if not key:
            raise Q2OptionError(f"The API key file '{path}' is empty.")
        return key
    return os.environ.get(API_KEY_ENV) or None
