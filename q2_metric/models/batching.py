"""Length-sorted batching under a token budget: few pad tokens, results returned in input order;
and each model's batch limits on its device."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal, TypeVar

import torch

from q2_metric.config import Q2Config
from q2_metric.progress import batch_done

Role = Literal["qg", "qa", "nli"]
# (inputs per batch, padded tokens per batch) when the options leave them to the device: a CPU's
CPU_LIMITS: dict[str, tuple[int, int]] = {"qg": (16, 16384), "qa": (32, 16384), "nli": (32, 16384)}
# and a GPU's with room to spare: on an H200 these limits scored 600 responses at paper shapes in
# float32 with 7.3 GB of GPU memory at peak (benchmarks/RESULTS.md). A GPU with less free memory
# than GPU_ROOM gets them scaled down in proportion, never below a CPU's.
GPU_LIMITS: dict[str, tuple[int, int]] = {"qg": (128, 262144), "qa": (256, 131072), "nli": (256, 131072)}
GPU_ROOM = 16 * 2**30


def free_bytes(device: torch.device) -> int:
    """The memory free for PyTorch on a GPU: the driver's free memory and the blocks PyTorch's
    allocator holds unused."""
    free, _ = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def batch_limits(
    config: Q2Config, role: Role, device: torch.device, free: int | None = None
) -> tuple[int, int]:
    """A model's (inputs per batch, padded tokens per batch): the options' where they are set,
    else the device's (`free`: the GPU's free bytes, read now when not given).

    >>> batch_limits(Q2Config(), "qa", torch.device("cpu"))
    (32, 16384)
    >>> batch_limits(Q2Config(qa_batch_size=8), "qa", torch.device("cuda"), free=2**40)
    (8, 131072)
    >>> batch_limits(Q2Config(), "qg", torch.device("cuda"), free=4 * 2**30)
    (32, 65536)
    """
    count, tokens = getattr(config, f"{role}_batch_size"), getattr(config, f"{role}_max_tokens")
    limits = CPU_LIMITS[role]
    if device.type == "cuda" and (count is None or tokens is None):
        limits = device_limits(role, device, free)
    return configured(config, role, limits)


def device_limits(role: Role, device: torch.device, free: int | None = None) -> tuple[int, int]:
    """A model's batch limits when the options leave them to the device: a CPU's, or a GPU's
    scaled by its free memory (`free`, read now when not given)."""
    limits = CPU_LIMITS[role]
    if device.type != "cuda":
        return limits
    scale = min(1.0, (free_bytes(device) if free is None else free) / GPU_ROOM)
    return (
        max(limits[0], int(GPU_LIMITS[role][0] * scale)),
        max(limits[1], int(GPU_LIMITS[role][1] * scale)),
    )


def configured(config: Q2Config, role: Role, defaults: tuple[int, int]) -> tuple[int, int]:
    """The limits of one call: the options' where they are set, else `defaults` (the device's,
    measured when the model loaded). Backends read them on every call, so that every call's options
    are honoured, whichever options the model was loaded with.

    >>> configured(Q2Config(qg_batch_size=4), "qg", (16, 16384))
    (4, 16384)
    """
    count, tokens = getattr(config, f"{role}_batch_size"), getattr(config, f"{role}_max_tokens")
    return (defaults[0] if count is None else count, defaults[1] if tokens is None else tokens)


T = TypeVar("T")
R = TypeVar("R")
H = TypeVar("H")


def budget_batches(
    lengths: Sequence[int], max_count: int, max_tokens: int, min_fill: float = 0.8
) -> Iterator[list[int]]:
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
        if batch and (
            len(batch) >= max_count
            or (len(batch) + 1) * longest > max_tokens
            or lengths[i] < min_fill * longest
        ):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def pack_rows(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Indices packed into as few rows as hold `capacity` tokens each on average, balanced: each
    input, longest first, joins the row with the fewest tokens, so rows end up nearly equal and
    padding them to the longest costs little. Packed rows carry no other padding, so on a CPU,
    where cost follows tokens, a batch of rows costs what its inputs cost one by one, without
    their per-call overhead.

    >>> pack_rows([30, 200, 90, 60, 120], capacity=256)
    [[1, 3], [4, 2, 0]]
    """
    total = sum(lengths)
    rows: list[list[int]] = [[] for _ in range(max(1, -(-total // capacity)))]
    filled = [0] * len(rows)
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        r = min(range(len(rows)), key=filled.__getitem__)
        rows[r].append(i)
        filled[r] += lengths[i]
    even_out(rows, filled, lengths)
    return [row for row in rows if row]


def even_out(rows: list[list[int]], filled: list[int], lengths: Sequence[int], rounds: int = 10_000) -> None:
    """Lower the fullest row, in place, by moving one of its inputs to another row or swapping it
    with a shorter one there, as long as some move does (the greedy packing can leave the longest
    row an input's length above the others, and every row is padded to the longest).

    >>> rows, filled = [[0, 3], [1, 2]], [60, 40]
    >>> even_out(rows, filled, [40, 25, 15, 20]); rows, filled
    ([[3, 1], [2, 0]], [45, 55])
    """
    for _ in range(rounds):
        top = max(range(len(rows)), key=filled.__getitem__)
        best: tuple[int, int, int, int | None] | None = None  # (larger of the two rows after, row, i, j)
        for r in range(len(rows)):
            if r == top:
                continue
            for i, a in enumerate(rows[top]):
                for j, b in [(None, None), *enumerate(rows[r])]:
                    moved = lengths[a] - (0 if b is None else lengths[b])
                    after = max(filled[top] - moved, filled[r] + moved)
                    if moved > 0 and after < filled[top] and (best is None or after < best[0]):
                        best = (after, r, i, j)
        if best is None:
            return
        _, r, i, j = best
        a = rows[top].pop(i)
        moved = lengths[a]
        if j is not None:
            b = rows[r].pop(j)
            rows[top].append(b)
            moved -= lengths[b]
        rows[r].append(a)
        filled[top] -= moved
        filled[r] += moved


def packed_calls(
    lengths: Sequence[int], max_count: int, max_tokens: int, row_tokens: int
) -> Iterator[list[list[int]]]:
    """Model calls for packing: inputs taken longest first, at most `max_count` inputs and
    `max_tokens` tokens a call, each call's indices packed into rows (see `pack_rows`).

    >>> list(packed_calls([30, 200, 90, 60, 120], max_count=4, max_tokens=1000, row_tokens=256))
    [[[1, 3], [4, 2]], [[0]]]
    """
    call: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if call and (len(call) >= max_count or tokens + lengths[i] > max_tokens):
            yield [[call[k] for k in row] for row in pack_rows([lengths[j] for j in call], row_tokens)]
            call, tokens = [], 0
        call.append(i)
        tokens += lengths[i]
    if call:
        yield [[call[k] for k in row] for row in pack_rows([lengths[j] for j in call], row_tokens)]


def pipelined(
    calls: Iterable[T], launch: Callable[[T], H], collect: Callable[[H], R]
) -> Iterator[tuple[T, R]]:
    """(call, collect(launch(call))) for each call, in order, with each call launched before the
    previous one is collected. On a GPU `launch` only queues the kernels, so the CPU prepares
    (tokenizes, pads) the next batch while the device still runs the one before. On a CPU `launch`
    does the work itself, and the order of the results is all that matters.

    >>> log = []
    >>> launch = lambda c: log.append(f"launch {c}") or c
    >>> collect = lambda h: log.append(f"collect {h}") or h * 10
    >>> list(pipelined([1, 2, 3], launch, collect)), log
    ([(1, 10), (2, 20), (3, 30)], ['launch 1', 'launch 2', 'collect 1', 'launch 3', 'collect 2', 'collect 3'])
    """
    pending: tuple[T, H] | None = None
    for call in calls:
        handle = launch(call)
        if pending is not None:
            yield pending[0], collect(pending[1])
        pending = (call, handle)
    if pending is not None:
        yield pending[0], collect(pending[1])


def _as_they_are(results: Any) -> Any:
    """`map_batched`'s default `collect`: `run` gave the results themselves."""
    return results


def map_batched(
    items: Sequence[T],
    lengths: Sequence[int],
    max_count: int,
    max_tokens: int,
    run: Callable[[list[T]], H],
    collect: Callable[[H], list[R]] | None = None,
) -> list[R]:
    """Apply `run` to budgeted batches of `items`; return one result per item, in input order.
    With `collect`, `run` only launches a batch and `collect` waits for its results (`pipelined`)."""
    out: list[R | None] = [None] * len(items)
    done = 0
    batches = budget_batches(lengths, max_count, max_tokens)
    finish: Callable[[H], Any] = collect if collect is not None else _as_they_are
    for idx, results in pipelined(batches, lambda idx: run([items[i] for i in idx]), finish):
        for i, result in zip(idx, results):
            out[i] = result
        done += len(idx)
        batch_done(done, len(items))
    return out  # type: ignore[return-value]  # every slot was filled by the loop: no None is left
