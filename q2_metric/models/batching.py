"""Length-sorted batching: fewer pad tokens, results returned in input order."""

from __future__ import annotations

from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices grouped into batches of similar length (longest first, so OOM shows up early)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def map_batched(items: Sequence[T], lengths: Sequence[int], batch_size: int,
                run: Callable[[list[T]], list[R]]) -> list[R]:
    """Apply `run` to length-sorted batches of `items`; return one result per item, in order."""
    out: list[R | None] = [None] * len(items)
    for idx in sorted_batches(lengths, batch_size):
        for i, result in zip(idx, run([items[i] for i in idx])):
            out[i] = result
    return out  # type: ignore[return-value]
