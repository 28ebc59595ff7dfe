"""De-duplication of model inputs: every stage calls a component once, on distinct inputs only."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from q2_metric.progress import model_inputs

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def unique_call(keys: Sequence[K], run: Callable[[list[K]], list[V]]) -> dict[K, V]:
    """Call `run` once on the distinct keys (in first-seen order); no call when there are none.

    >>> unique_call(["a", "b", "a"], lambda keys: [k.upper() for k in keys])
    {'a': 'A', 'b': 'B'}
    """
    distinct = list(dict.fromkeys(keys))
    if not distinct:
        return {}
    with model_inputs(len(distinct)):  # counted in the running stage's progress
        return dict(zip(distinct, run(distinct)))
