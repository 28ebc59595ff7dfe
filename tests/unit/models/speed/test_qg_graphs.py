"""The GPU's fast question generator (`qg_graphs`), its scheduler and gate, on the CPU.

CUDA graphs need a GPU (tests/gpu/test_qg_graphs.py replays them there); here a chain that runs
the eager reference step stands in for the graphs, so the scheduler's rules are checked on every
machine: which batches get a chain, that a step is compared before a batch relies on it, that a
difference or a failed capture sends the shape to the reference path, and that the ids are the
reference path's in every case. Expected values: the reference path (`beam_search` over
`decoder_steps`, itself checked against transformers 3.2's recorded beams in
tests/unit/models/paper/test_beam_search.py).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import ClassVar

import pytest
import torch
from support.t5 import EOS, PAD, random_t5
from torch.utils._python_dispatch import TorchDispatchMode

from q2_metric.models.hf_qg import HFQuestionGenerator
from q2_metric.models.paper.beam_search import BeamRules, beam_search
from q2_metric.models.paper.t5_steps import cached_steps, decoder_steps, encoder_rows
from q2_metric.models.speed import qg_graphs
from q2_metric.models.speed.flops import FlopMeter
from q2_metric.models.speed.qg_fast import ExactnessGate
from q2_metric.models.speed.qg_graphs import GraphQG

VOCAB = 300
RULES = BeamRules(
    num_beams=3,
    max_length=9,
    num_return_sequences=2,
    no_repeat_ngram_size=3,
    start_id=PAD,
    eos_id=EOS,
    pad_id=PAD,
)


@pytest.fixture(scope="module")
def model():
    return random_t5(3, 1.5, vocab=VOCAB, d_model=64, d_kv=16, d_ff=128)


def _batch(seed: int, inputs: int, width: int, padded: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, VOCAB, (inputs, width), generator=g)
    mask = torch.ones((inputs, width), dtype=torch.long)
    if padded:
        mask[0, width - 3 :] = 0
        ids[0, width - 3 :] = PAD
    return ids, mask


def _reference(model):
    def search(ids, mask, rules):
        return beam_search(decoder_steps(model, ids, mask, rules.num_beams), len(ids), **vars(rules))

    return search


class EagerChain:
    """A stand-in for `StepGraphs` without a GPU: the same interface, the eager step behind it;
    `differ_at` perturbs one step's logits (a graph whose kernels differ), `fail_at` raises there
    (a step that cannot be captured)."""

    made: ClassVar[list[EagerChain]] = []

    def __init__(self, model, rows, width, padded, differ_at=None, fail_at=None):
        self.model, self.padded, self.differ_at, self.fail_at = model, padded, differ_at, fail_at
        self.checked, self.calls = 0, []
        EagerChain.made.append(self)

    def load(self, hidden, mask):
        self.hidden, self.mask = hidden.clone(), mask.clone() if self.padded else None

    def __call__(self, t, tokens, beam_idx):
        self.calls.append(t)
        if t == 0:  # as graph 0 does, a search's first step starts from the loaded batch alone
            self.step = cached_steps(self.model, self.hidden, self.mask)
        if t == self.fail_at:
            raise RuntimeError("operation not permitted when stream is capturing")
        logits = self.step(tokens, beam_idx).clone()
        if t == self.differ_at:
            logits[0, 0] = torch.nextafter(logits[0, 0], torch.tensor(float("inf")))
        return logits


def _graphs(model, gate, free=None, **chain):
    EagerChain.made = []
    return GraphQG(
        model,
        _reference(model),
        lambda shape: ("cuda graphs", shape),
        gate,
        min_uses=3,
        make_chain=lambda *a: EagerChain(*a, **chain),
        free=free,
    )


def test_batches_of_a_shared_shape_replay_and_give_the_reference_path_s_ids(model):
    batches = [_batch(s, 4, 11) for s in range(4)] + [_batch(9, 4, 11, padded=False), _batch(10, 2, 7)]
    rules = [RULES] * 5 + [RULES]
    gate = ExactnessGate()
    graphs = _graphs(model, gate)
    with torch.inference_mode():
        got = graphs.search(batches, rules)
        want = [_reference(model)(ids, mask, r) for (ids, mask), r in zip(batches, rules)]
    assert len({repr(w) for w in want}) == len(want)  # each batch its own ids, so equality means something
    assert got == want
    # the four (4, 11, padded) batches share a chain; the unpadded one and the (2, 7) one are
    # under min_uses, so they ran the reference path
    assert list(gate.memo.values()) == [True] and next(iter(gate.memo))[1] == (4, 11, 3, True)
    assert len(EagerChain.made) == 1 and graphs.counts["reference"] == 2
    assert graphs.counts["checked"] >= 1 and graphs.counts["checked"] + graphs.counts["replayed"] == 4
    assert EagerChain.made[0].checked == max(EagerChain.made[0].calls) + 1


def _exactly(steps: int) -> BeamRules:
    return dataclasses.replace(RULES, max_length=steps + 1, min_length=steps + 1)


def test_the_first_batch_checks_ahead_and_a_longer_search_runs_side_by_side_again(model):
    """The first batch of a shape (3 steps) goes on past its end to min(the call's longest search,
    twice its own) = 6 steps, and the call's other batches (3 and 6 steps) replay; a second call's
    8-step search reaches steps not compared and runs side by side (its ids the eager steps')."""
    batches = [_batch(s, 4, 11) for s in range(4)]
    gate = ExactnessGate()
    graphs = _graphs(model, gate)
    with torch.inference_mode():
        first = graphs.search(batches[:3], [_exactly(3), _exactly(3), _exactly(6)])
        assert graphs.counts == {"checked": 1, "replayed": 2} and EagerChain.made[0].checked == 6
        assert EagerChain.made[0].calls == [0, 1, 2, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5]
        second = graphs.search(batches[3:], [_exactly(8)])
        assert graphs.counts == {"checked": 2, "replayed": 2} and EagerChain.made[0].checked == 8
        want = [
            _reference(model)(ids, mask, r)
            for (ids, mask), r in zip(batches, [_exactly(3), _exactly(3), _exactly(6), _exactly(8)])
        ]
    assert first + second == want


@pytest.mark.parametrize("fault", [{"differ_at": 2}, {"fail_at": 1}])
def test_a_step_that_differs_or_cannot_be_captured_sends_the_shape_to_the_reference_path(model, fault):
    batches = [_batch(s, 4, 11) for s in range(4)]
    gate = ExactnessGate()
    graphs = _graphs(model, gate, **fault)
    with torch.inference_mode(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = graphs.search(batches, [RULES] * 4)
    assert caught == []  # a refusal is logged at debug level and counted, never a warning
    with torch.inference_mode():
        want = [_reference(model)(ids, mask, RULES) for ids, mask in batches]
    assert got == want
    assert list(gate.memo.values()) == [False] and graphs.chains == {}
    assert graphs.counts == {"checked": 1, "reference": 3}
    assert any("3 by the reference path" in note for note in graphs.notes())


SYNCS = {"_local_scalar_dense", "nonzero", "is_nonzero", "equal", "item"}


class HostSyncs(TorchDispatchMode):
    """The operators that read a tensor's value back to the host (illegal inside a CUDA capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.__name__.split(".")[0] in SYNCS:
            self.seen.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("padded", [True, False])
def test_under_capture_the_reference_step_reads_nothing_back_and_takes_the_eager_branches(
    model, padded, monkeypatch
):
    """`StepGraphs` captures the reference step as it is. Eager, the step reads one value back
    (whether the encoder mask keeps every position, to drop it); under a capture transformers
    cannot, keeps the mask, and `StepGraphs` passes None for an unpadded batch's, which drops it
    the same way. So the captured step makes the eager step's calls: on the CPU, the same logits."""
    ids, mask = _batch(1, 3, 8, padded)
    tokens, reorder = torch.full((9,), 5), torch.arange(9).flip(0)
    with torch.inference_mode():
        hidden, rows_mask = encoder_rows(model, ids, mask, 3)
        eager, seen = cached_steps(model, hidden, rows_mask), []
        with HostSyncs() as syncs:
            want = [eager(tokens, None if t == 0 else reorder).clone() for t in range(3)]
        assert syncs.seen  # the eager step's read-back, so the check below can fail
        monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
        captured = cached_steps(model, hidden, rows_mask if padded else None)
        for t in range(3):
            with HostSyncs() as syncs:
                got = captured(tokens, None if t == 0 else reorder)
            seen += syncs.seen
            assert torch.equal(got, want[t]), t
    assert seen == []


def test_on_a_cpu_nothing_of_the_graph_path_runs(tiny_config, monkeypatch):
    def no_graphs(*args, **kwargs):
        raise AssertionError("a CUDA graph chain was made on a CPU")

    monkeypatch.setattr(qg_graphs, "StepGraphs", no_graphs)
    monkeypatch.setattr(qg_graphs.GraphQG, "__init__", no_graphs)
    qg = HFQuestionGenerator(tiny_config.replace(qg_decoder="fast"))
    assert qg.fast is not None and qg.fast.graphs is None
    assert qg.generate(["PBS", "Canada"], ["Bob Ross hosted a show on PBS.", "It aired in Canada."])


def test_the_flop_meter_counts_the_searches_work_not_the_checks():
    """The model's meter counts what the reference path's searches count: the eager steps that
    make the ids and the replayed ones, not the graphs beside the eager steps or the steps ahead."""
    model = random_t5(4, 1.5, vocab=VOCAB, d_model=64, d_kv=16, d_ff=128)
    meter = FlopMeter.attach(model)
    batches = [_batch(s, 4, 11) for s in range(5)]
    rules = [_exactly(n) for n in (3, 5, 4, 8, 2)]  # the 8-step one runs side by side again
    graphs = _graphs(model, ExactnessGate())
    with torch.inference_mode():
        before = meter.flops
        got = graphs.search(batches, rules)
        used = meter.flops - before
        before = meter.flops
        want = [_reference(model)(ids, mask, r) for (ids, mask), r in zip(batches, rules)]
        useful = meter.flops - before
    assert got == want
    assert graphs.counts == {"checked": 2, "replayed": 3}
    assert used == useful > 0


def test_a_new_shape_gets_graphs_only_while_memory_is_free(model):
    """With under `MIN_FREE` of the memory free, the oldest shape's graphs go first; with none left
    to free, a shape runs the reference path. The ids are the reference path's either way."""
    batches = [_batch(s, 4, 11) for s in range(4)] + [_batch(s, 2, 9) for s in range(4, 8)]
    gate = ExactnessGate()
    graphs = _graphs(model, gate, free=lambda: 1.0 if not graphs.chains else 0.2)
    with torch.inference_mode():
        got = graphs.search(batches, [RULES] * 8)
        want = [_reference(model)(ids, mask, RULES) for ids, mask in batches]
    assert got == want
    assert (
        list(graphs.chains) == [("cuda graphs", (2, 9, 3, True))] and len(EagerChain.made) == 2
    )  # the first went

    starved = _graphs(model, ExactnessGate(), free=lambda: 0.1)
    with torch.inference_mode():
        assert starved.search(batches[:4], [RULES] * 4) == want[:4]
    assert starved.counts == {"reference": 4} and EagerChain.made == []


def _search_by_reference(ids, mask, rules):  # a module-level function: it pickles
    raise AssertionError("not called")


def test_a_pickled_scheduler_leaves_its_graphs_and_its_gate_s_facts(model):
    """Ray ships scorers: the scheduler pickles without its graphs (they stay on their GPU), and its
    gate without its lock and its facts (proved on this machine: a copy proves its own)."""
    import pickle

    gate = ExactnessGate()
    gate.record(("a batch alone", (1, 8, 3, True)), True)
    graphs = GraphQG(model, _search_by_reference, tuple, gate, make_chain=qg_graphs.StepGraphs)
    graphs.chains[(1, 8, 3, True)] = "a chain on a GPU"
    copy = pickle.loads(pickle.dumps(graphs))
    assert copy.chains == {} and graphs.chains
    assert isinstance(copy.gate, ExactnessGate) and copy.gate.memo == {} and gate.memo
    assert copy.free() == 1.0  # off a GPU
