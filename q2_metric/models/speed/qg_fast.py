"""The fast question generator: the reference path's beam search (`models/paper/beam_search.py`),
its rows run merged and behind one exactness gate.

The reference path searches each QG batch alone (`SearchState`) over 3.2's decoder step
(`models/paper/t5_steps.py`). Here the same states are advanced by a scheduler (`merged_search`)
whose step runs the rows of several batches at once (`t5_merged_decoder`): each batch keeps its own
encoder pass, and its cross-attention keys and values are made once per input (`t5_shared_cross`),
the beam slots' cross-attention in one grouped-query call, the self-attention cache written in
place (`t5_beam_cache`); a batch whose search has ended leaves the products. The search's rules
are the states', so the questions are the reference path's as long as every step gives each
batch's rows the reference's logits.

That is what `ExactnessGate` checks, on this machine, before a batch takes the fast path (the
path is opt-in: `Q2Config.qg_decoder="fast"`; the default is the reference path). It runs whole
decoder steps both ways on random encoder outputs and tokens of the batch's own shapes (the encoder
runs the same either way) and compares the logits bit for bit. A check proves one key, and the key
holds everything that changes a kernel call of a step:
- the model's dimensions, the fast path's settings and the cache's first buffer;
- the batch: its number of inputs, beams, its exact width, and whether any input is padded (an
  unpadded batch's attention runs without a mask, another branch);
- merged batches: each one's inputs, width and padding, in order;
- the steps compared: every cache length a search runs is compared (`FastSettings.gate_steps`,
  default every step up to the length limit, past the cache buffer's growth at 64 positions); a
  search that would run past them is searched again by the reference path;
- the machine: the device and its name, dtype, threads, the Linear layers' kernel and the backend
  settings (the SDPA backends enabled, float32 matmul precision and TF32, denormals flushed), read
  when the key is used and again after a check (a check whose settings changed while it ran proves
  nothing).
- a batch alone: its fast steps against the reference's; batches merged: the merged steps against
  each batch's fast steps alone.
A batch outside every checked key runs the reference path: a key not yet checked is checked first,
and one that failed stays refused (merged batches run alone; a batch alone runs the reference path).
The gate belongs to its generator (`HFQuestionGenerator.gate`); refusals are logged at debug level
and counted in the run's profile, never shown as a warning.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import torch

from q2_metric.models.paper.beam_search import BeamRules, SearchState
from q2_metric.models.paper.t5_steps import decoder_steps
from q2_metric.models.speed.fast_search import FastSearchState
from q2_metric.models.speed.qg_graphs import GraphQG
from q2_metric.models.speed.t5_beam_cache import FIRST_CAPACITY
from q2_metric.models.speed.t5_merged_decoder import merged_decoder_steps
from q2_metric.models.speed.t5_shared_cross import SharedCrossAttention

Step = Callable[..., torch.Tensor]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FastSettings:
    """The fast path's choices (the benchmarks' comparison arms change them; the gate checks each)."""

    merged_rows: int = 320  # the most rows (inputs x beams) of merged steps; 0: each batch alone
    min_rows: int = 40  # a batch with fewer rows is searched alone (too small to gain from merging)
    merge_limits: bool = True  # batches whose settings differ in their length limits alone merge too
    grouped_query: bool = True  # the beam slots' cross-attention in one grouped-query call
    in_place_cache: bool = True  # the self-attention cache in preallocated buffers (`t5_beam_cache`)
    time_major: bool = True  # ... laid out time-major
    # decoder steps a check compares (every cache length a search may reach up to it); None: every
    # step up to the search's length limit. A search that would go further runs the reference path.
    gate_steps: int | None = None
    cuda_graphs: bool = True  # on a GPU: the reference step replayed from CUDA graphs (`qg_graphs`) instead
    graph_min_uses: int = 4  # ... for the shapes of at least this many batches (over the calls)
    graph_chains: int = 8  # ... keeping at most this many shapes' graphs


class ExactnessGate:
    """Key -> whether the fast steps gave the reference's logits here (`qg_fast`'s docstring says
    what a key holds). One per generator; `counts` tallies the batches by the path they took."""

    def __init__(self) -> None:
        self.memo: dict[tuple, bool] = {}
        self.counts: Counter[str] = Counter()
        self._lock = threading.RLock()

    def __getstate__(self) -> dict:
        """Pickled (Ray ships scorers) without its lock, and without its facts: they were proved on
        this machine, and a copy proves its own."""
        return {"memo": {}, "counts": Counter()}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def allows(self, key: Callable[[], tuple], check: Callable[[], bool]) -> bool:
        """Whether the key `key()` (made now) was proved, checking it first when it is new; the key is
        made again after the check, and a check across a change of settings proves nothing."""
        with self._lock:
            made = key()
            if made not in self.memo:
                ok = bool(check())
                if key() != made:
                    log.debug("q2 fast QG: the backend settings changed during a check; not recorded")
                    return False
                self.record(made, ok)
            return self.memo[made]

    def record(self, key: tuple, ok: bool) -> None:
        """A check's outcome, made elsewhere (`qg_graphs` compares steps as its batches run): a key
        once refused stays refused."""
        with self._lock:
            if self.memo.get(key) is False:
                return
            self.memo[key] = ok
            if not ok:
                log.debug("q2 fast QG: the exactness gate refused %s %s", key[0], key[-1])

    def refused(self) -> list[tuple]:
        return [key for key, ok in self.memo.items() if not ok]


PROBE_LAYERS = 1  # the decoder blocks a check runs (see `probe_model`)


def probe_model(model: torch.nn.Module, layers: int = PROBE_LAYERS, head: bool = True) -> torch.nn.Module:
    """A view of the T5 `model` whose decoder runs only its first `layers` blocks: the same modules
    and weights (and their hooks), nothing of `model` changed. The checks' decoder steps run on it.
    Every block makes the same calls on the same shapes (block 0 also makes the relative position
    bias, a lookup that the later blocks reuse, adding it to their scores as block 0 does), so the
    first block meets every kernel call a step makes; the embedding, final norm and LM head are the
    model's own. The view has none of the hooks of the
    model and its decoder themselves (a `FlopMeter` counts useful work, not the checks').
    `head=False`: without the LM head, its "logits" the scaled hidden states the head would read."""

    def view(module: torch.nn.Module) -> torch.nn.Module:
        out = copy.copy(module)
        for name, value in vars(module).items():
            if name.startswith(("_forward", "_backward")) and isinstance(value, dict):
                setattr(out, name, type(value)())
        out._modules = dict(module._modules)
        return out

    config = copy.copy(model.config)
    config.num_decoder_layers = layers
    decoder = view(model.decoder)
    decoder._modules["block"] = torch.nn.ModuleList(list(model.decoder.block)[:layers])
    decoder.config = copy.copy(model.decoder.config)
    decoder.config.num_layers = layers
    probe = view(model)
    probe._modules["decoder"] = decoder
    if not head:
        probe._modules["lm_head"] = torch.nn.Identity()
    probe.config = config
    return probe


def _random_batch(
    g: torch.Generator, inputs: int, length: int, vocab: int, device: torch.device, padded: bool = True
) -> tuple:
    """Random ids of `length` tokens; `padded`: each input's mask hides another tail (its own
    padding; at least one input padded), else every mask is all ones (no padding: another branch)."""
    ids = torch.randint(2, vocab, (inputs, length), generator=g)
    keep = [length] * inputs
    if padded:
        keep = [length - (i * length) // (2 * max(1, inputs)) for i in range(inputs)]
        keep[-1] = min(keep[-1], max(1, length - 1))
    mask = torch.tensor([[1] * n + [0] * (length - n) for n in keep])
    return ids.to(device), mask.to(device)


def same_logits(
    model: torch.nn.Module,
    shared: SharedCrossAttention,
    shapes: Sequence[tuple[int, int] | tuple[int, int, bool]],
    beams: int,
    max_length: int,
    settings: FastSettings,
    steps: int,
    against: Literal["reference", "alone"],
) -> bool:
    """Whether `steps` fast decoder steps over batches of `shapes` ((inputs, key length[, padded])
    each; padded when not said),
    merged, give every batch's rows the logits of its own steps, bit for bit, on random inputs:
    its reference steps (`against="reference"`) or its fast steps alone (`"alone"`). The steps run
    on `probe_model(model)`: the first decoder block meets every kernel call of a step. Against
    the reference, without the LM head (the largest product of a step): both paths give it the
    same rows, the final norm's output, so the same hidden states make the same logits; merged
    steps give it other rows, so there it runs."""
    model = probe_model(model, head=against != "reference")
    device = next(model.parameters()).device
    full = [(s[0], s[1], bool(s[2]) if len(s) > 2 else True) for s in shapes]
    g = torch.Generator().manual_seed(sum(n * 7 + length for n, length, _ in full))
    vocab = model.config.vocab_size
    batches = [_random_batch(g, n, length, vocab, device, padded) for n, length, padded in full]
    # random encoder outputs of the real shapes (the decoder steps are what is checked; the encoder
    # runs the same either way), at the scale of T5's normed encoder output
    dtype = next(model.parameters()).dtype
    encoded = [
        (torch.randn((n, length, model.config.d_model), generator=g) * 0.1).to(device, dtype)
        for n, length, _ in full
    ]
    rows = [n * beams for n, _, _ in full]
    tokens = [torch.randint(2, vocab, (sum(rows),), generator=g).to(device) for _ in range(steps)]
    # each row continues a random beam of its own input
    reorders = [
        torch.tensor(
            [
                (r // beams) * beams + int(j)
                for r, j in enumerate(torch.randint(beams, (sum(rows),), generator=g))
            ]
        )
        for _ in range(steps)
    ]

    def run(step: Step, part: slice | None) -> list[torch.Tensor]:
        """`steps` steps of `step` over the rows `part` (every row, merged, when None)."""
        out = []
        for t in range(steps):
            if part is None:
                x, idx = tokens[t], reorders[t]
            else:
                x, idx = tokens[t][part], reorders[t][part] - part.start
            out.append(step(x, None if t == 0 else idx.to(device)))
        return out

    with torch.inference_mode():
        with _fast_steps(model, shared, batches, beams, max_length, settings, encoded) as step:
            fast = run(step, None)
        start = 0
        for (ids, mask), hidden, n in zip(batches, encoded, rows):
            part = slice(start, start + n)
            if against == "reference":
                own = run(decoder_steps(model, ids, mask, beams, hidden), part)
            else:
                with _fast_steps(
                    model, shared, [(ids, mask)], beams, max_length, settings, [hidden]
                ) as alone:
                    own = run(alone, part)
            if not all(torch.equal(f[part], o) for f, o in zip(fast, own)):
                return False
            start += n
    return True


def _fast_steps(
    model: torch.nn.Module,
    shared: SharedCrossAttention,
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    beams: int,
    max_length: int,
    settings: FastSettings,
    encoded: Sequence[torch.Tensor] | None = None,
) -> contextlib.AbstractContextManager[Step]:
    return merged_decoder_steps(
        model,
        shared,
        batches,
        beams,
        max_length,
        grouped_query=settings.grouped_query,
        in_place_cache=settings.in_place_cache,
        time_major=settings.time_major,
        encoded=encoded,
    )


def merged_search(
    step: Step,
    states: Sequence[SearchState],
    may_leave: Callable[[list[int]], bool],
    limit: int | None = None,
) -> None:
    """Advance every state to its end, one `step(tokens, beam_idx, running)` over the rows of the
    states in `running` at a time; a state's rows leave when it ends, if `may_leave(the states
    left)` (else they run on with pad tokens, unused, as a done input's rows do). With a `limit`,
    at most that many steps: states not finished by then are left unfinished."""
    running = [k for k, s in enumerate(states) if not s.finished]
    beam_idx: torch.Tensor | None = None
    taken = 0
    while running:
        if limit is not None and taken >= limit:
            return
        taken += 1
        tokens = torch.cat(
            [states[k].tokens() if not states[k].finished else _pads(states[k]) for k in running]
        )
        logits = step(tokens, beam_idx, list(running))
        continues, start = {}, 0
        for k in running:
            s = states[k]
            local = s.advance(logits[start : start + s.rows]) if not s.finished else None
            if local is None:  # ended (or running on): each row continues itself
                local = torch.arange(s.rows, device=logits.device)
            continues[k] = start + local.to(logits.device)
            start += s.rows
        left = [k for k in running if not states[k].finished]
        if not left:
            return
        if left != running and may_leave(left):
            running = left
        beam_idx = torch.cat([continues[k] for k in running])


def _pads(state: SearchState) -> torch.Tensor:
    return torch.full((state.rows,), state.rules.pad_id, dtype=torch.long, device=state.device)


Batch = tuple[torch.Tensor, torch.Tensor]


def is_padded(mask: torch.Tensor) -> bool:
    """Whether any input of a batch is padded (else its attention runs without a mask)."""
    return not bool(mask.all())


class FastQG:
    """The fast path of one T5: batches' beam searches merged where the gate allows it."""

    def __init__(
        self,
        model: torch.nn.Module,
        shared: SharedCrossAttention,
        settings: FastSettings,
        reference: Callable[[torch.Tensor, torch.Tensor, BeamRules], list[list[list[int]]]],
        environment: Callable[[], tuple],
        gate: ExactnessGate | None = None,
    ) -> None:
        self.model, self.shared, self.settings = model, shared, settings
        self.reference = reference  # a batch's search by the reference path (a refused class)
        self.environment = environment  # what the gate's keys hold besides the shapes (read per use)
        self.gate = gate if gate is not None else ExactnessGate()  # the generator's
        on_gpu = next(model.parameters()).device.type == "cuda"
        self.graphs = (
            GraphQG(
                model,
                reference,
                self._graph_key,
                self.gate,
                settings.graph_min_uses,
                settings.graph_chains,
            )
            if on_gpu and settings.cuda_graphs
            else None
        )

    def _key(self, kind: str, shape: tuple, max_length: int) -> tuple:
        """A key: the model's dimensions, the machine state (`environment`, read now), the settings
        that change a step (`merged_rows` only says which chunks form), the cache's first buffer and
        the shapes."""
        c = self.model.config
        dims = (c.d_model, c.d_kv, c.num_heads, c.d_ff, c.num_decoder_layers, c.vocab_size)
        capacity = min(max_length, FIRST_CAPACITY)  # as `merged_decoder_steps` sizes it
        return (kind, dims, self.environment(), replace(self.settings, merged_rows=0), capacity, shape)

    def _graph_key(self, shape: tuple) -> tuple:
        return self._key("cuda graphs", shape, 0)

    def steps(self, max_length: int) -> int:
        """The decoder steps a check compares, and so the most a fast search may run, for a search
        of `max_length` (every step it can take unless `gate_steps` is smaller)."""
        most = max(1, max_length - 1)
        return most if self.settings.gate_steps is None else max(1, min(self.settings.gate_steps, most))

    def _alone_ok(self, batch: Batch, beams: int, max_length: int) -> bool:
        ids, mask = batch
        inputs, width, padded = len(ids), ids.shape[1], is_padded(mask)
        steps = self.steps(max_length)
        return self.gate.allows(
            lambda: self._key("a batch alone", (inputs, beams, width, padded, steps), max_length),
            lambda: same_logits(
                self.model,
                self.shared,
                [(inputs, width, padded)],
                beams,
                max_length,
                self.settings,
                steps,
                "reference",
            ),
        )

    def _merged_ok(self, shapes: list[tuple[int, int, bool]], beams: int, max_length: int) -> bool:
        if len(shapes) <= 1:
            return True
        steps = self.steps(max_length)
        return self.gate.allows(
            lambda: self._key("merged", (beams, tuple(shapes), steps), max_length),
            lambda: same_logits(
                self.model, self.shared, shapes, beams, max_length, self.settings, steps, "alone"
            ),
        )

    def search(self, batches: Sequence[Batch], rules: Sequence[BeamRules]) -> list[list[list[list[int]]]]:
        """Each batch's results, as the reference path's search of it alone gives them."""
        if self.graphs is not None:
            return self.graphs.search(batches, rules)
        out: list[list[list[list[int]]] | None] = [None] * len(batches)
        chunks: dict[BeamRules, list[list[int]]] = {}  # by settings but the length limits: chunks
        for b, ((ids, mask), r) in enumerate(zip(batches, rules)):
            if not self._alone_ok((ids, mask), r.num_beams, r.max_length):
                self.gate.counts["refused"] += 1
                out[b] = self.reference(ids, mask, r)
                continue
            rows = len(ids) * r.num_beams
            if rows < self.settings.min_rows or self.settings.merged_rows <= 0:
                out[b] = self._searched([(ids, mask)], [r])[0]
                continue
            like = replace(r, max_length=0, min_length=0) if self.settings.merge_limits else r
            open_chunks = chunks.setdefault(like, [[]])
            chunk = open_chunks[-1]
            if (
                chunk
                and (sum(len(batches[i][0]) for i in chunk) + len(ids)) * r.num_beams
                > self.settings.merged_rows
            ):
                chunk = []
                open_chunks.append(chunk)
            chunk.append(b)
        for open_chunks in chunks.values():
            for chunk in open_chunks:
                shapes = [_shape(batches[i]) for i in chunk]
                beams, longest = rules[chunk[0]].num_beams, max(rules[i].max_length for i in chunk)
                # each batch's own steps at the chunk's cache size proved too (its limit may be shorter)
                if self._merged_ok(shapes, beams, longest) and all(
                    self._alone_ok(batches[i], beams, longest)
                    for i in chunk
                    if rules[i].max_length != longest
                ):
                    results = self._searched([batches[i] for i in chunk], [rules[i] for i in chunk])
                else:
                    results = [self._searched([batches[i]], [rules[i]])[0] for i in chunk]
                for i, result in zip(chunk, results):
                    out[i] = result
        return out  # type: ignore[return-value]  # every slot was filled above

    def _searched(self, batches: Sequence[Batch], rules: Sequence[BeamRules]) -> list[list[list[list[int]]]]:
        """`_run`'s results; a batch whose search would go past the steps checked is searched again
        by the reference path."""
        out = []
        for (ids, mask), r, result in zip(batches, rules, self._run(batches, rules)):
            if result is None:
                self.gate.counts["past the checked steps"] += 1
                out.append(self.reference(ids, mask, r))
            else:
                self.gate.counts["fast"] += 1
                out.append(result)
        return out

    def _run(
        self, batches: Sequence[Batch], rules: Sequence[BeamRules]
    ) -> list[list[list[list[int]]] | None]:
        """The batches' fast search, merged, for at most the checked steps (None: a batch unfinished)."""
        device = batches[0][0].device
        states = [FastSearchState(len(ids), r, device) for (ids, _), r in zip(batches, rules)]
        beams, longest = rules[0].num_beams, max(r.max_length for r in rules)
        shapes = [_shape(b) for b in batches]

        def may_leave(left: list[int]) -> bool:
            return self._merged_ok([shapes[k] for k in left], beams, longest)

        with _fast_steps(self.model, self.shared, batches, beams, longest, self.settings) as step:
            merged_search(step, states, may_leave, self.steps(longest))
        return [s.results() if s.finished else None for s in states]

    def notes(self) -> list[str]:
        """What the gate did, for the run's profile."""
        c = self.gate.counts
        if not sum(c.values()):
            return []
        return [
            f"qg: fast path: {c['fast']} batches; reference path: {c['refused']} refused by the exactness "
            f"gate, {c['past the checked steps']} past the steps it checked ({len(self.gate.refused())} "
            "keys refused)"
        ]


def _shape(batch: Batch) -> tuple[int, int, bool]:
    ids, mask = batch
    return (len(ids), ids.shape[1], is_padded(mask))
