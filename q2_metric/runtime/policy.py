"""The one batching policy of the micro-batcher (`micro.MicroBatcher`): frozen, checked once, one
default per knob.

`max_wait` has ONE default, 0.02 s, for the service and the harnesses alike. In the service's
adaptive policy it is the longest quiet gap a batch waits out for the items it expects (a lone
client's request never waits), and its latency figures were measured with it
(benchmarks/RESULTS.md); in the harnesses' fixed policy it bounds how long the first item of a
batch waits for more: a harness that wants fuller batches from slow generations sets it higher.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass
from typing import Any

from q2_metric.errors import Q2OptionError
from q2_metric.options import Spelling, python_name

DEFAULT_MAX_BATCH = 64  # items per engine call
DEFAULT_MAX_WAIT = 0.02  # seconds (see the module's docstring)


def check_max_batch(value: Any, spell: Spelling = python_name) -> int:
    """`max_batch` checked: an integer >= 1, else one `Q2OptionError` sentence naming it as `spell` does."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Q2OptionError(f"Invalid Q² option {spell('max_batch')}={value!r}: use an integer >= 1.")
    return value


def check_max_wait(value: Any, spell: Spelling = python_name) -> float:
    """`max_wait` checked: a finite number of seconds >= 0, else one `Q2OptionError` sentence."""
    if isinstance(value, bool) or not (
        isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
    ):
        raise Q2OptionError(f"Invalid Q² option {spell('max_wait')}={value!r}: use a number of seconds >= 0.")
    return float(value)


@dataclass(frozen=True)
class BatchPolicy:
    """How the micro-batcher makes its engine calls: at most `max_batch` items each; the first
    item waits at most `max_wait` seconds for more (`adaptive`: the service's policy, a batch waits
    only for the items it can expect, while they keep coming, no quiet gap longer than `max_wait`).
    Checked when made (`spell`: how the front-end names the knobs in its one sentence)."""

    max_batch: int = DEFAULT_MAX_BATCH
    max_wait: float = DEFAULT_MAX_WAIT
    adaptive: bool = False
    spell: InitVar[Spelling] = python_name

    def __post_init__(self, spell: Spelling) -> None:
        check_max_batch(self.max_batch, spell)
        object.__setattr__(self, "max_wait", check_max_wait(self.max_wait, spell))
        object.__setattr__(self, "adaptive", bool(self.adaptive))
