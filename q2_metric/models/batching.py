"""Length-sorted batching under a token budget: few pad tokens, results returned in input order."""

from __future__ import annotations

from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def budget_batches(lengths: Sequence[int], max_count: int, max_tokens: int,
                   min_fill: float = 0.8) -> Iterator[list[int]]:
    """Indices grouped into batches of similar length, longest first (an OOM shows up at once).
    A batch holds at most `max_count` inputs and, padded to its longest, at most `max_tokens`
    tokens (a single longer input gets a batch of its own); it also ends before an input shorter
    than `min_fill` of its longest, so that padding stays under about a fifth of the work.

    >>> list(budget_batches([5, 50, 10, 40], max_count=8, max_tokens=100))
    [[1, 3], [2], [0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        longest = lengths[batch[0]] if batch else lengths[i]
        if batch and (len(batch) >= max_count or (len(batch) + 1) * longest > max_tokens
                      or lengths[i] < min_fill * longest):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def pack_rows(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Indices packed into rows of at most `capacity` tokens (first fit, longest first); an input
    longer than `capacity` gets a row of its own. Packed rows carry no padding, so on a CPU, where
    cost follows tokens, a batch of rows costs what its inputs cost one by one, without their
    per-call overhead.

    >>> pack_rows([30, 200, 90, 60, 120], capacity=256)
    [[1, 0], [4, 2], [3]]
    """
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        slot = next((r for r, free in enumerate(room) if lengths[i] <= free), None)
        if slot is None:
            rows.append([i])
            room.append(capacity - lengths[i])
        else:
            rows[slot].append(i)
            room[slot] -= lengths[i]
    return rows


def map_batched(items: Sequence[T], lengths: Sequence[int], max_count: int, max_tokens: int,
                run: Callable[[list[T]], list[R]]) -> list[R]:
    """Apply `run` to budgeted batches of `items`; return one result per item, in input order."""
    out: list[R | None] = [None] * len(items)
    for idx in budget_batches(lengths, max_count, max_tokens):
        for i, result in zip(idx, run([items[i] for i in idx])):
            out[i] = result
    return out  # type: ignore[return-value]
