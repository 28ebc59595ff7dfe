"""The GPU's fast question generator: the reference path's own decoder step, replayed from CUDA graphs.

On a GPU a QG decoder step is a few hundred small kernels over a few hundred beam rows, and the GPU
waits on their launches (about 70% of QG's wall time on an H200). The CPU's fast path reshapes
the step's work (`qg_fast`), which on a GPU changes cuBLAS's kernels and so the numbers. Here the
work is not reshaped: `StepGraphs` records the reference step (`t5_steps.cached_steps`: the beam
reorder of the whole cache, then the decoder with its growing cache) once per step number for one
batch shape, and replays it: the same kernels on the same shapes, launched by one call.

- Graph `t` reads the cache that graph `t - 1` wrote, so a search replays graphs 0, 1, ... in the
  order they were captured; they share one memory pool, each reusing what the one before freed.
  A later batch of the same shape copies its encoder output into the chain's buffers and replays.
- The exactness gate (`qg_fast.ExactnessGate`, the generator's) compares every graph with the eager
  step before it is used; its key holds the batch's shape (inputs, exact width, beams, padding) and
  the backend settings, read at each use, and a chain is held per key: the first batch that reaches step `t` of a chain runs the eager reference steps and
  the graphs side by side (its ids come from the eager steps) and compares their logits bit for
  bit. On a difference the shape falls back to the reference path for the rest of the run.
- That first batch goes on past its own end (pad tokens, each row continuing itself) up to the
  longest search any batch of its shape may run in the call, at most a quarter (and 4 steps) past
  its own, so that later batches seldom reach a step not compared (one that does runs side by
  side again).
- A shape gets a chain once `min_uses` batches of the generator's calls have had it: the first
  batch costs about two eager searches (the eager one, and the capture) and each later one saves
  about half of one, so a shape of few batches runs the reference path. At most `chains` chains are kept (each holds its own memory
  pool); the least recently used goes first.
- Replays run no forward pass, so the model's `FlopMeter` is given each replayed step's count (the
  count its capture made, which ran nothing); the checks' work (the graphs beside the eager steps,
  the steps ahead) is not counted.
"""

from __future__ import annotations

import contextlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import torch

from q2_metric.models.batching import free_bytes
from q2_metric.models.paper.beam_search import BeamRules
from q2_metric.models.paper.t5_steps import cached_steps, encoder_rows
from q2_metric.models.speed.fast_search import FastSearchState

Results = list[list[list[int]]]  # per input, its sequences


# A new shape gets graphs only while this fraction of the GPU's memory is free (counting what
# PyTorch holds unused): the graphs' pools stay held between calls, and QA and NLI run after QG.
MIN_FREE = 0.3


def free_fraction(device: torch.device) -> float:
    """The fraction of `device`'s memory free for PyTorch: the driver's free memory and the blocks
    PyTorch's allocator holds unused."""
    return free_bytes(device) / torch.cuda.mem_get_info(device)[1]


class Chain(Protocol):
    """One batch shape's decoder steps, step `t` of a search by `chain(t, tokens, beam_idx)`."""

    checked: int  # steps compared with the eager step so far (steps 0 .. checked - 1)

    def load(self, hidden: torch.Tensor, mask: torch.Tensor) -> None: ...

    def __call__(self, t: int, tokens: torch.Tensor, beam_idx: torch.Tensor | None) -> torch.Tensor: ...


class StepGraphs:
    """CUDA graphs of the reference decoder step for batches of one shape (`rows` beam rows over
    encoder outputs of `width` positions), one graph per step number, captured on first use."""

    def __init__(self, model: torch.nn.Module, rows: int, width: int, padded: bool) -> None:
        weight = next(model.parameters())
        device = weight.device
        self.model = model
        self.hidden = torch.zeros((rows, width, model.config.d_model), dtype=weight.dtype, device=device)
        # Eager, transformers drops an all-ones encoder mask after asking the GPU (a host sync);
        # under capture it cannot ask and keeps it. None drops it the same way without asking.
        self.mask = torch.ones((rows, width), dtype=torch.long, device=device) if padded else None
        self.tokens = torch.zeros(rows, dtype=torch.long, device=device)
        self.beam_idx = torch.arange(rows, device=device)
        self.logits: torch.Tensor | None = None
        self.graphs: list[Any] = []  # torch.cuda.CUDAGraph, one per step number
        self.pool = torch.cuda.graph_pool_handle()
        self.stream = torch.cuda.Stream(device)
        self.step = cached_steps(model, self.hidden, self.mask)
        self.checked = 0
        self.replays = 0
        self.work: list[tuple[int, int, int]] = []  # per graph: what the FlopMeter counts for it

    def load(self, hidden: torch.Tensor, mask: torch.Tensor) -> None:
        """A new batch: its encoder output and mask (`encoder_rows`)."""
        self.hidden.copy_(hidden)
        if self.mask is not None:
            self.mask.copy_(mask)

    def __call__(self, t: int, tokens: torch.Tensor, beam_idx: torch.Tensor | None) -> torch.Tensor:
        """Step `t` of the loaded batch's search (steps 0 .. t - 1 ran just before): its logits, in
        a buffer the next step overwrites."""
        self.tokens.copy_(tokens)
        if beam_idx is not None:
            self.beam_idx.copy_(beam_idx)
        if t == len(self.graphs):
            self._capture(t)
        self.graphs[t].replay()
        self.replays += 1
        meter = getattr(self.model, "_q2_flop_meter", None)
        if meter is not None:
            flops, tokens, calls = self.work[t]
            meter.flops, meter.tokens, meter.calls = (
                meter.flops + flops,
                meter.tokens + tokens,
                meter.calls + calls,
            )
        assert self.logits is not None  # made by the first capture
        return self.logits

    def _capture(self, t: int) -> None:
        meter = getattr(self.model, "_q2_flop_meter", None)
        start = _counts(meter)
        if t == 0:  # lazy initialisations (cuBLAS's workspace for the stream) outside the capture
            self.stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.stream):
                warm = cached_steps(self.model, self.hidden, self.mask)
                warm(self.tokens, None)
                warm(self.tokens, self.beam_idx)
        before = _counts(meter)
        graph = torch.cuda.CUDAGraph()
        self.stream.wait_stream(torch.cuda.current_stream())
        # the capture calls of torch.cuda.graph without its garbage collection and cache emptying
        with torch.cuda.stream(self.stream):
            graph.capture_begin(pool=self.pool)
            try:
                logits = self.step(self.tokens, None if t == 0 else self.beam_idx)
                if self.logits is None:  # one buffer for every step's logits
                    self.logits = torch.empty_like(logits)
                self.logits.copy_(logits)
                del logits
            finally:
                graph.capture_end()
        torch.cuda.current_stream().wait_stream(self.stream)
        self.graphs.append(graph)
        after = _counts(meter)
        self.work.append((after[0] - before[0], after[1] - before[1], after[2] - before[2]))
        if meter is not None:  # the warm-up and the capture ran no useful work
            meter.flops, meter.tokens, meter.calls = start


def _counts(meter: Any) -> tuple[int, int, int]:
    return (meter.flops, meter.tokens, meter.calls) if meter is not None else (0, 0, 0)


@contextlib.contextmanager
def uncounted(model: torch.nn.Module) -> Iterator[None]:
    """The model's FLOP meter (if any) counts nothing of what runs inside: the checks' work."""
    meter = getattr(model, "_q2_flop_meter", None)
    start = _counts(meter)
    try:
        yield
    finally:
        if meter is not None:
            meter.flops, meter.tokens, meter.calls = start


class GraphQG:
    """Batches' beam searches by the reference path's rules over replayed decoder steps, where the
    gate allows it (`gate`: `qg_fast.ExactnessGate`), else by the reference path."""

    def __init__(
        self,
        model: torch.nn.Module,
        reference: Callable[[torch.Tensor, torch.Tensor, BeamRules], Results],
        key: Callable[[tuple], tuple],
        gate: Any,
        min_uses: int = 4,
        chains: int = 8,
        make_chain: Callable[[torch.nn.Module, int, int, bool], Chain] = StepGraphs,
        free: Callable[[], float] | None = None,
    ) -> None:
        self.model, self.reference, self.key, self.gate = model, reference, key, gate
        self.min_uses, self.max_chains, self.make_chain = min_uses, chains, make_chain
        self.device = next(model.parameters()).device
        self.free_memory = free
        self.chains: OrderedDict[tuple, Chain] = OrderedDict()
        self.counts: Counter[str] = Counter()  # batches: replayed, checked (side by side), reference
        self.seen: Counter[tuple] = Counter()  # batches of each shape, over the generator's calls

    def __getstate__(self) -> dict:
        """Pickled (Ray ships scorers) without its graphs, which stay on their GPU: a copy makes its
        own (and its gate, pickled without its facts, proves its own)."""
        state = dict(self.__dict__)
        state["chains"] = OrderedDict()
        return state

    @staticmethod
    def shape(ids: torch.Tensor, mask: torch.Tensor, rules: BeamRules) -> tuple:
        """A batch's chain: its inputs, width, beams and whether any input is padded."""
        return (len(ids), ids.shape[1], rules.num_beams, not bool(mask.all()))

    def search(
        self, batches: Sequence[tuple[torch.Tensor, torch.Tensor]], rules: Sequence[BeamRules]
    ) -> list[Results]:
        """Each batch's results, as the reference path's search of it gives them."""
        shapes = [self.shape(ids, mask, r) for (ids, mask), r in zip(batches, rules)]
        self.seen.update(shapes)
        # the most steps a search of each shape may run in this call
        steps: dict[tuple, int] = {}
        for shape, r in zip(shapes, rules):
            steps[shape] = max(steps.get(shape, 0), r.max_length - 1)
        out = []
        for (ids, mask), r, shape in zip(batches, rules, shapes):
            key = self.key(shape)  # the backend settings read now, at each use
            if self.seen[shape] < self.min_uses or self.gate.memo.get(key) is False:
                self.counts["reference"] += 1
                out.append(self.reference(ids, mask, r))
            else:
                out.append(self._replayed(key, shape, ids, mask, r, steps[shape]))
        return out

    def free(self) -> float:
        """The fraction of the device's memory free (1 off a GPU)."""
        if self.free_memory is not None:
            return self.free_memory()
        return free_fraction(self.device) if self.device.type == "cuda" else 1.0

    def release(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _chain(self, key: tuple, shape: tuple) -> Chain | None:
        """The key's chain (its shape's graphs under its settings), made if it is new and memory
        allows (None: it does not)."""
        if key in self.chains:
            self.chains.move_to_end(key)
            return self.chains[key]
        while self.chains and (len(self.chains) >= self.max_chains or self.free() < MIN_FREE):
            self.chains.popitem(last=False)
            self.release()
        if self.free() < MIN_FREE:
            return None
        inputs, width, beams, padded = shape
        self.chains[key] = self.make_chain(self.model, inputs * beams, width, padded)
        return self.chains[key]

    def _replayed(
        self, key: tuple, shape: tuple, ids: torch.Tensor, mask: torch.Tensor, r: BeamRules, longest: int
    ) -> Results:
        chain = self._chain(key, shape)
        if chain is None:  # too little memory left for another shape's graphs
            self.counts["reference"] += 1
            return self.reference(ids, mask, r)
        hidden, rows_mask = encoder_rows(self.model, ids, mask, r.num_beams)
        chain.load(hidden, rows_mask)
        state = FastSearchState(len(ids), r, ids.device)
        beam_idx, t = None, 0
        meter = getattr(self.model, "_q2_flop_meter", None)
        start = _counts(meter)
        while not state.finished:
            if t >= chain.checked:  # a step not compared yet: this batch runs side by side
                if meter is not None:  # the replays so far go unused
                    meter.flops, meter.tokens, meter.calls = start
                return self._side_by_side(key, shape, chain, hidden, rows_mask, len(ids), r, longest)
            beam_idx = state.advance(chain(t, state.tokens(), beam_idx))
            t += 1
        self.counts["replayed"] += 1
        return state.results()

    def _side_by_side(
        self,
        key: tuple,
        shape: tuple,
        chain: Chain,
        hidden: torch.Tensor,
        mask: torch.Tensor,
        inputs: int,
        r: BeamRules,
        longest: int,
    ) -> Results:
        """The batch's search over the eager reference steps, with the chain's step beside each:
        every step past `chain.checked` compared bit for bit (the gate's check). After the search,
        both go on with pad tokens up to `longest` steps, at most a quarter (and 4) past its own."""
        eager = cached_steps(self.model, hidden, mask)
        state = FastSearchState(inputs, r, hidden.device)
        beam_idx: torch.Tensor | None = None
        t, same, ahead = 0, True, 0
        while same or not state.finished:
            if state.finished:  # checking ahead: every row continues itself with a pad token
                tokens = torch.full((state.rows,), r.pad_id, dtype=torch.long, device=hidden.device)
                beam_idx = None if t == 0 else torch.arange(state.rows, device=hidden.device)
            else:
                tokens = state.tokens()
            # the meter counts the search's eager steps, not the checks (the graphs, the steps ahead)
            with uncounted(self.model) if state.finished else contextlib.nullcontext():
                want = eager(tokens, beam_idx)
            if same:
                try:
                    with uncounted(self.model):
                        got = chain(t, tokens, beam_idx)
                except RuntimeError:  # the step cannot be captured here (a host sync, memory)
                    same = False
                else:
                    if t >= chain.checked:
                        same = torch.equal(got, want)
                        chain.checked = t + 1 if same else chain.checked
            if not state.finished:
                beam_idx = state.advance(want)
                ahead = min(longest, t + 1 + max(4, (t + 1) // 4))
            t += 1
            if state.finished and t >= ahead:
                break
        if self.key(shape) != key:  # the settings changed while it ran: nothing proved
            self.chains.pop(key, None)
        else:
            self.gate.record(key, same)
            if not same:
                self.chains.pop(key, None)
        self.counts["checked"] += 1
        return state.results()

    def notes(self) -> list[str]:
        """What the run did, for its profile."""
        if not sum(self.counts.values()):
            return []
        c = self.counts
        return [
            f"qg: CUDA graphs: {c['replayed']} batches replayed, {c['checked']} checked side by side "
            f"against the eager steps, {c['reference']} by the reference path ({len(self.chains)} shapes held)"
        ]
