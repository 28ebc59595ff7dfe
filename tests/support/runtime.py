"""The runtime's tests' pairs and helpers (tests/unit/runtime): scripted components, no model.

The yardstick is `Q2Scorer.score` called directly on all pairs at once (the engine itself), never
the code under test."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from q2_metric import Q2Config
from q2_metric.frontend import Item
from q2_metric.runtime.engine import Engine
from q2_metric.runtime.micro import MicroBatcher
from q2_metric.runtime.policy import BatchPolicy
from q2_metric.testing.scripted import scripted_scorer

PAIRS = [
    ("Bob Ross hosted The Joy of Painting on PBS.", "Bob Ross hosted The Joy of Painting on PBS."),
    (
        "The show aired in Canada and Europe.",
        "The show aired on PBS in the United States and also in Canada.",
    ),
    (
        "Gardening is relaxing for Many People.",
        "Gardening is considered by many people to be a relaxing activity.",
    ),
    ("", "Knowledge with no reply."),
    ("i like it", "The Micro-pigs are small pigs."),
    ("Paris is the capital of France.", "Paris is the capital and most populous city of France."),
    ("Ross died in Orlando.", "Ross died of lymphoma in Orlando, Florida."),
]


def engine(max_batch: int) -> Engine:
    return Engine(Q2Config(), max_batch=max_batch, scorer=scripted_scorer())


def micro(engine: Any, max_wait: float, adaptive: bool = False, **kwargs: Any) -> MicroBatcher:
    """A micro-batcher over `engine` (its `max_batch`) waiting at most `max_wait` seconds."""
    return MicroBatcher(engine, BatchPolicy(engine.max_batch, max_wait, adaptive), **kwargs)


def items(pairs=PAIRS) -> list[Item]:
    return [Item(f"row {i + 1}", r, k) for i, (r, k) in enumerate(pairs)]


def direct():
    return scripted_scorer().score([r for r, _ in PAIRS], [k for _, k in PAIRS])


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


class Recording:
    """An engine that records the thread of each call and takes `seconds` per call."""

    max_batch = 8

    def __init__(self, seconds: float = 0.0):
        self.inner, self.seconds, self.threads = engine(8), seconds, []

    def score_checked(self, given, max_batch=None, progress=None):
        self.threads.append(threading.get_ident())
        time.sleep(self.seconds)
        return self.inner.score_checked(given, max_batch, progress)
