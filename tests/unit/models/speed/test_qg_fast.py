"""The fast question generator (`qg_fast`) and its exactness gate.

Expected values: the reference path (`models/paper/`: 3.2's rules per batch over 3.2's decoder
step, itself checked against transformers 3.2's recorded beams in tests/unit/models/paper/
test_beam_search.py). The gate's decisions depend on the machine's kernels, so these tests assert
its contract, never one machine's numbers: where it says yes, the fast steps give the reference's
logits bit for bit and the same ids; where it says no (forced here by a product that rounds by its
row count, as BLAS kernels may), the questions are still the reference path's.
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch
from support.data import sample_rows
from support.t5 import EOS, PAD, random_t5
from transformers import T5ForConditionalGeneration

from q2_metric import Q2Scorer
from q2_metric.models.hf_qg import HFQuestionGenerator, qg_input
from q2_metric.models.paper.beam_search import BeamRules, SearchState, beam_search
from q2_metric.models.paper.t5_steps import decoder_steps
from q2_metric.models.speed import qg_fast
from q2_metric.models.speed.qg_fast import ExactnessGate, FastQG, FastSettings, merged_search, same_logits
from q2_metric.models.speed.t5_merged_decoder import merged_decoder_steps
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention

VOCAB = 300
# answers for the tiny QG's prompts: its first word follows the answer's word (`tiny_builder.chain_qg`)
WORDS = sorted(
    {w for r in sample_rows() for w in r["response"].lower().split() if w.isalpha() and len(w) > 4}
)


def _t5(seed: int, eos_bias: float) -> T5ForConditionalGeneration:
    return random_t5(seed, eos_bias, vocab=VOCAB, d_model=64, d_kv=16, d_ff=128)


def _batch(g: torch.Generator, batch: int, low: int, high: int) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.randint(low, high, (batch,), generator=g).tolist()
    width = max(lengths)
    ids = torch.full((batch, width), PAD)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, :n] = torch.randint(2, VOCAB, (n,), generator=g)
        mask[i, :n] = 1
    return ids, mask


def _rules(beams: int, max_length: int, min_length: int = 0) -> BeamRules:
    return BeamRules(
        num_beams=beams,
        max_length=max_length,
        min_length=min_length,
        num_return_sequences=2,
        no_repeat_ngram_size=3,
        start_id=PAD,
        eos_id=EOS,
        pad_id=PAD,
    )


def _reference(model, batches, rules) -> tuple[list, list[list[torch.Tensor]]]:
    """Each batch's ids and every step's logits by the reference path."""
    ids_out, logits_out = [], []
    for (ids, mask), r in zip(batches, rules):
        step, seen = decoder_steps(model, ids, mask, r.num_beams), []

        def recorded(tokens, beam_idx, step=step, seen=seen):
            seen.append(step(tokens, beam_idx).clone())
            return seen[-1]

        ids_out.append(beam_search(recorded, len(ids), **vars(r)))
        logits_out.append(seen)
    return ids_out, logits_out


def _fast(model, shared, batches, rules, leave: bool = True):
    """The scheduler over the batches' states, merged steps; every step's (running, logits)."""
    states = [SearchState(len(ids), r) for (ids, _), r in zip(batches, rules)]
    seen: list[tuple[list[int], torch.Tensor]] = []
    with merged_decoder_steps(
        model, shared, batches, rules[0].num_beams, max(r.max_length for r in rules)
    ) as step:

        def recorded(tokens, beam_idx, running):
            seen.append((list(running), step(tokens, beam_idx, running).clone()))
            return seen[-1][1]

        merged_search(recorded, states, lambda left: leave)
    return [s.results() for s in states], seen


def _gate_says_yes(model, shared, batches, rules) -> bool:
    beams, longest = rules[0].num_beams, max(r.max_length for r in rules)
    shapes = [(len(ids), ids.shape[1]) for ids, _ in batches]
    settings = FastSettings()
    # the gate's checks: every step a search may run, each batch alone and the batches merged
    alone = all(
        same_logits(model, shared, [s], beams, r.max_length, settings, r.max_length - 1, "reference")
        and same_logits(model, shared, [s], beams, longest, settings, longest - 1, "reference")
        for s, r in zip(shapes, rules)
    )
    return alone and same_logits(model, shared, shapes, beams, longest, settings, longest - 1, "alone")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("leave", [True, False])
@pytest.mark.parametrize(
    ("seed", "beams", "sizes", "limits", "eos_bias"),
    [
        (0, 5, (8, 10, 9), ((20, 0), (20, 0), (20, 0)), 2.0),
        (5, 5, (8, 10, 9), ((20, 0), (9, 9), (14, 4)), 2.0),
        (6, 4, (12, 10, 11), ((6, 6), (30, 0), (12, 12)), 1.5),
    ],
)
def test_the_gate_s_contract_on_merged_steps(seed, beams, sizes, limits, eos_bias, leave, threads):
    """Batches of different padded lengths and length limits (early ends, min = max, the limit).
    Where the gate passes their classes on this machine, every step of each batch's search gets the
    reference's logits bit for bit, and the same ids, its rows leaving the products when it ends
    (`leave`) or running on unused; where it refuses, the fast generator's ids are the reference's."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = _t5(seed, eos_bias=eos_bias)
        shared = attach_shared_cross_attention(model)
        g = torch.Generator().manual_seed(seed)
        batches = [_batch(g, n, 3 + 6 * k, 12 + 9 * k) for k, n in enumerate(sizes)]
        rules = [_rules(beams, m, low) for m, low in limits]
        with torch.inference_mode():
            want, want_logits = _reference(model, batches, rules)
            ends = {len(h) for batch in want for hyps in batch for h in hyps}
            assert len(ends) >= 2 and max(r.max_length for r in rules) in ends  # early ends and the limit
            if not _gate_says_yes(model, shared, batches, rules):
                fast = FastQG(
                    model, shared, FastSettings(min_rows=1), _one_reference(model), lambda: ("cpu", threads)
                )
                assert fast.search(batches, rules) == want
                assert fast.gate.refused()
                return
            got, steps = _fast(model, shared, batches, rules, leave)
    finally:
        torch.set_num_threads(previous)
    assert got == want
    for t, (running, logits) in enumerate(steps):
        start = 0
        for k in running:
            rows = sizes[k] * beams
            if t < len(want_logits[k]):
                assert torch.equal(logits[start : start + rows], want_logits[k][t]), (t, k)
            start += rows
        assert start == len(logits)
    counts = [len(logits) for _, logits in steps]
    assert len(steps) == max(len(seen) for seen in want_logits)
    if leave and len({m for m, _ in limits}) > 1:  # the products shrank as batches ended
        assert counts[-1] < counts[0] and counts == sorted(counts, reverse=True)
    if not leave:
        assert set(counts) == {sum(sizes) * beams}


def _one_reference(model):
    def search(ids, mask, rules):
        return beam_search(decoder_steps(model, ids, mask, rules.num_beams), len(ids), **vars(rules))

    return search


def _rounding_by_rows(model: T5ForConditionalGeneration) -> None:
    """The LM head's product made to round by its row count, as a BLAS kernel may from some size on
    (a forward hook: it stays whichever kernel runs the layer, `cpu_matmul`)."""
    model.lm_head.register_forward_hook(lambda module, args, out: out + 1e-3 * out.shape[0])


def test_a_product_that_rounds_by_row_count_makes_the_gate_refuse_and_the_questions_stay(tiny_config):
    """The gate sees merged products' other numbers and refuses (no warning: the profile's notes
    count the batches each path took), and the generator's questions are the reference path's."""
    config = dataclasses.replace(tiny_config, qg_batch_size=8, qg_decoder="fast")
    fast = HFQuestionGenerator(config)
    reference = HFQuestionGenerator(config.replace(qg_decoder="reference"))
    assert fast.decoder == "fast" and reference.decoder == "reference"
    prompts = [
        qg_input(WORDS[i], f"the show {WORDS[i]} aired in canada " + "and more " * (i % 7)) for i in range(40)
    ]
    want = reference.generate_ids(prompts)
    assert len({tuple(q[0]) for q in want}) > 10  # the questions differ from prompt to prompt
    _rounding_by_rows(fast.model)
    assert fast.fast is not None
    # merged against alone: the LM head sees 80 rows merged and 40 alone, so other numbers
    assert not same_logits(fast.model, fast.fast.shared, [(8, 12), (8, 20)], 5, 8, FastSettings(), 2, "alone")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fast.generate_ids(prompts)
    assert got == want
    assert fast.gate.refused() and fast.fast.gate is fast.gate
    assert not [w for w in caught if "q2" in str(w.message)]  # an ordinary run shows no warning
    (note,) = fast.profile_notes()
    assert "reference path" in note and f"({len(fast.gate.refused())} keys refused)" in note


def test_a_batch_whose_fast_steps_differ_runs_the_reference_path(tiny_config, monkeypatch):
    """A class of one batch alone refused (as a kernel that differed): that batch's search runs the
    reference path, with the reference's questions."""
    monkeypatch.setattr(qg_fast, "same_logits", lambda *args: False)
    import q2_metric.models.hf_qg as hf_qg

    fast = HFQuestionGenerator(tiny_config.replace(qg_decoder="fast"))
    calls: list[int] = []
    steps = hf_qg.decoder_steps  # the reference path's decoder step, made once per batch it searches
    monkeypatch.setattr(hf_qg, "decoder_steps", lambda *a: calls.append(1) or steps(*a))
    prompts = [qg_input(WORDS[i], f"a text about {WORDS[i]} things") for i in range(12)]
    got = fast.generate_ids(prompts)
    assert calls and got == HFQuestionGenerator(tiny_config.replace(qg_decoder="reference")).generate_ids(
        prompts
    )


def test_the_gate_checks_each_class_once():
    """Each key is made when it is used (the settings read then) and checked once."""
    gate, calls = ExactnessGate(), []
    assert gate.allows(lambda: ("x", 1), lambda: calls.append(1) or True)
    assert gate.allows(lambda: ("x", 1), lambda: calls.append(1) or False)
    assert not gate.allows(lambda: ("y", 2), lambda: False) and gate.refused() == [("y", 2)]
    assert calls == [1]


def test_the_pipeline_asks_the_same_questions_on_the_sample(tiny_config, rows):
    """The scorer on the tiny models' sample, batches small enough to merge several: the fast path's
    questions and scores are the reference path's."""
    responses = [r["response"] for r in rows]
    knowledge = [r["knowledge"] for r in rows]
    config = dataclasses.replace(tiny_config, qg_batch_size=8)
    new = Q2Scorer(config.replace(qg_decoder="fast")).score(responses, knowledge)
    old = Q2Scorer(config.replace(qg_decoder="reference")).score(responses, knowledge)
    assert sum(len(r.questions) for r in new.responses) > 40
    assert len({q.question for r in new.responses for q in r.questions}) > 20  # they differ row to row
    assert [r.questions for r in new.responses] == [r.questions for r in old.responses]
    assert new.scores == old.scores and len(set(new.scores)) > 2


def test_per_batch_lengths_through_the_public_argument(tiny_config):
    """`new_tokens`: each batch generates exactly its prompts' largest number of tokens, by either path."""
    config = dataclasses.replace(tiny_config, qg_batch_size=8)
    fast, reference = HFQuestionGenerator(config.replace(qg_decoder="fast")), HFQuestionGenerator(config)
    prompts = [
        qg_input(WORDS[i], f"the {WORDS[i]} item " + "word " * i) for i in range(40)
    ]  # batches of 8 neighbours
    lengths = [3 + i // 8 for i in range(40)]
    got = fast.generate_ids(prompts, new_tokens=lengths)
    assert got == reference.generate_ids(prompts, new_tokens=lengths)
    assert len({len(beams[0]) for beams in got}) >= 3  # several lengths


def test_the_settings_are_given_to_the_constructor(tiny_config):
    settings = FastSettings(merged_rows=0, grouped_query=False, in_place_cache=False)
    qg = HFQuestionGenerator(tiny_config.replace(qg_decoder="fast"), fast=settings)
    assert isinstance(qg.fast, FastQG) and qg.fast.settings is settings
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.merged_rows = 5  # type: ignore[misc]
    prompts = [qg_input(WORDS[i], f"a text about {WORDS[i]} things") for i in range(20)]
    assert qg.generate_ids(prompts) == HFQuestionGenerator(
        tiny_config.replace(qg_decoder="reference")
    ).generate_ids(prompts)


def test_the_flop_meter_counts_the_batches_own_work():
    """Merged steps count what the batches' own fast steps count (the same number of steps each: no
    end token before the limit)."""
    from q2_metric.models.speed.flops import FlopMeter

    model = _t5(3, eos_bias=0.0)
    shared = attach_shared_cross_attention(model)
    meter = FlopMeter.attach(model)
    g = torch.Generator().manual_seed(3)
    batches = [_batch(g, 8, 3, 9), _batch(g, 9, 20, 30)]
    rules = [_rules(5, 6, 6)] * 2
    with torch.inference_mode():
        before = meter.flops
        for b, r in zip(batches, rules):
            _fast(model, shared, [b], [r])
        alone = meter.flops - before
        before = meter.flops
        _fast(model, shared, batches, rules)
        merged = meter.flops - before
    assert merged == alone > 0


def test_the_checks_probe_is_a_view_of_the_model_s_first_blocks():
    """`probe_model`: with every block it gives the model's own logits (the reference step, on the
    same random inputs); with fewer it runs those blocks, the model keeps all of its own and its
    hooks, the LM head's hooks still fire (a rounding product stays visible to the checks) and the
    model's meter does not count the checks."""
    from q2_metric.models.speed.flops import FlopMeter

    model = _t5(5, eos_bias=0.0)
    meter = FlopMeter.attach(model)
    fired: list[int] = []
    model.lm_head.register_forward_hook(lambda m, i, o: fired.append(len(i[0])))
    g = torch.Generator().manual_seed(5)
    ids, mask = _batch(g, 4, 3, 9)
    tokens = torch.randint(2, VOCAB, (4 * 3,), generator=g)
    hidden = torch.randn((4, ids.shape[1], 64), generator=g)  # as the checks feed (the encoder is not theirs)
    with torch.inference_mode():
        own = decoder_steps(model, ids, mask, 3, hidden)(tokens, None)
        flops = meter.flops
        whole = decoder_steps(qg_fast.probe_model(model, 3), ids, mask, 3, hidden)(tokens, None)
        probe = qg_fast.probe_model(model, 1)
        first = decoder_steps(probe, ids, mask, 3, hidden)(tokens, None)
        # without the head: the hidden states its one call makes the logits from
        headless = decoder_steps(qg_fast.probe_model(model, 3, head=False), ids, mask, 3, hidden)(
            tokens, None
        )
        assert torch.equal(model.lm_head(headless), own) and headless.shape == (12, 64)
    assert torch.equal(own, whole) and not torch.equal(own, first)
    assert len(model.decoder.block) == 3 and model.config.num_decoder_layers == 3
    assert len(probe.decoder.block) == 1 and probe.decoder.block[0] is model.decoder.block[0]
    assert meter.flops == flops and fired == [12, 12, 12, 12]


# -- the gate's keys: every batch outside a checked key runs the reference path --------------------


def _equal_lengths(g: torch.Generator, batch: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of inputs of one length: no padding (its attention runs without a mask)."""
    return torch.randint(2, VOCAB, (batch, width), generator=g), torch.ones((batch, width), dtype=torch.long)


def _padded(g: torch.Generator, batch: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of `width` tokens whose last input is shorter (padded)."""
    ids, mask = _equal_lengths(g, batch, width)
    ids[-1, width // 2 :], mask[-1, width // 2 :] = PAD, 0
    return ids, mask


class _Checks:
    """`same_logits` recorded: each check's (shapes, steps, against); `refuse(shapes, steps)` says
    which checks fail (as a kernel that differed), every other one passes."""

    def __init__(self, refuse=lambda shapes, steps: False) -> None:
        self.calls: list[tuple] = []
        self.refuse = refuse

    def __call__(self, model, shared, shapes, beams, max_length, settings, steps, against) -> bool:
        self.calls.append((list(shapes), steps, against))
        return not self.refuse(list(shapes), steps)


def _gated(monkeypatch, checks: _Checks, **settings):
    model = _t5(7, eos_bias=1.0)
    monkeypatch.setattr(qg_fast, "same_logits", checks)
    fast = FastQG(
        model,
        attach_shared_cross_attention(model),
        FastSettings(min_rows=1, **settings),
        _one_reference(model),
        lambda: ("cpu", "test"),
    )
    return model, fast


@pytest.mark.parametrize("case", ["unpadded", "width in a later bucket"])
def test_a_batch_outside_the_checked_keys_is_checked_for_its_own_key_and_refused_runs_the_reference(
    monkeypatch, case
):
    """A batch like one already checked but for its padding (equal lengths, no mask: another
    attention branch) or its exact width (40 then 45: one power-of-two bucket, other kernels' splits)
    gets a check of its own key; where that check fails, it runs the reference path, with the
    reference path's ids. Before, both rode on the first batch's check."""
    g = torch.Generator().manual_seed(11)
    first = _padded(g, 3, 40) if case == "unpadded" else _equal_lengths(g, 3, 40)
    second = _equal_lengths(g, 3, 40) if case == "unpadded" else _equal_lengths(g, 3, 45)
    want_shape = (3, 40, False) if case == "unpadded" else (3, 45, False)
    checks = _Checks(refuse=lambda shapes, steps: shapes == [want_shape])
    model, fast = _gated(monkeypatch, checks)
    rules = _rules(3, 8)
    with torch.inference_mode():
        got_first = fast.search([first], [rules])
        assert len(checks.calls) == 1 and fast.gate.counts == {"fast": 1}
        got_second = fast.search([second], [rules])
        want = [_one_reference(model)(ids, mask, rules) for ids, mask in (first, second)]
    assert [got_first[0], got_second[0]] == want
    assert checks.calls[1] == ([want_shape], 7, "reference")  # its own key, every step of the search
    assert fast.gate.counts == {"fast": 1, "refused": 1} and len(fast.gate.refused()) == 1
    with torch.inference_mode():  # the refusal is remembered: no second check
        assert fast.search([second], [rules])[0] == want[1]
    assert len(checks.calls) == 2


def test_a_search_past_the_checked_steps_runs_the_reference_path(monkeypatch):
    """A search whose cache grows past the steps its key checked (here 64, the cache buffer's first
    size, for a search of 80 tokens that grows it) is searched again by the reference path; with
    every step checked (the default), the key covers the search, past 64 positions, and the fast
    path gives the reference's ids."""
    g = torch.Generator().manual_seed(12)
    batch = _batch(g, 2, 5, 9)
    rules = _rules(2, 81, 81)  # exactly 80 new tokens: the cache passes 64 positions
    checks = _Checks()
    model, fast = _gated(monkeypatch, checks, gate_steps=64)
    with torch.inference_mode():
        want = _one_reference(model)(*batch, rules)
        assert fast.search([batch], [rules])[0] == want
    assert [steps for _, steps, _ in checks.calls] == [64]
    assert fast.gate.counts == {"past the checked steps": 1}

    checks = _Checks()
    model, fast = _gated(monkeypatch, checks)
    with torch.inference_mode():
        assert fast.search([batch], [rules])[0] == want
    assert [steps for _, steps, _ in checks.calls] == [80]  # every cache length up to the limit
    assert fast.gate.counts == {"fast": 1}


def test_merged_batches_are_keyed_by_each_one_s_width_and_padding(monkeypatch):
    """Merged steps are checked for the batches' exact widths and padding, in order: two merges of
    the same row counts but other widths are two checks; a refused merge runs its batches alone."""
    g = torch.Generator().manual_seed(13)
    a, b, c = _padded(g, 3, 20), _equal_lengths(g, 3, 30), _equal_lengths(g, 3, 33)
    checks = _Checks(refuse=lambda shapes, steps: len(shapes) > 1 and shapes[1][1] == 33)
    model, fast = _gated(monkeypatch, checks)
    rules = _rules(3, 6)
    with torch.inference_mode():
        got = fast.search([a, b], [rules] * 2) + fast.search([a, c], [rules] * 2)
        want = [_one_reference(model)(*x, rules) for x in (a, b, a, c)]
    assert got == want
    merged = [shapes for shapes, _, against in checks.calls if against == "alone"]
    assert merged == [[(3, 20, True), (3, 30, False)], [(3, 20, True), (3, 33, False)]]


def test_the_keys_hold_the_backend_settings_read_at_each_use(monkeypatch):
    """The float32 matmul precision (as any backend setting) is read when a key is used: after a
    change, the same shapes are checked again under the new settings; a check across a change
    proves nothing."""
    from q2_metric.models.speed.kernels import backend_settings

    g = torch.Generator().manual_seed(14)
    batch = _batch(g, 2, 5, 9)
    checks = _Checks()
    model = _t5(7, eos_bias=1.0)
    monkeypatch.setattr(qg_fast, "same_logits", checks)
    cpu = torch.device("cpu")
    fast = FastQG(
        model,
        attach_shared_cross_attention(model),
        FastSettings(),
        _one_reference(model),
        lambda: backend_settings(cpu),
    )
    rules = _rules(2, 6)
    before = torch.get_float32_matmul_precision()
    try:
        with torch.inference_mode():
            fast.search([batch], [rules])
            fast.search([batch], [rules])
            assert len(checks.calls) == 1
            torch.set_float32_matmul_precision("medium" if before != "medium" else "high")
            fast.search([batch], [rules])
            assert len(checks.calls) == 2

            def changing(*args):  # the settings change while the check runs
                torch.set_float32_matmul_precision(before)
                return True

            monkeypatch.setattr(qg_fast, "same_logits", changing)
            torch.set_float32_matmul_precision("highest" if before != "highest" else "high")
            keys = len(fast.gate.memo)
            assert fast.search([batch], [rules])[0] == _one_reference(model)(*batch, rules)
            assert len(fast.gate.memo) == keys  # nothing recorded
    finally:
        torch.set_float32_matmul_precision(before)


def test_the_checks_random_batches_have_the_batch_s_padding():
    g = torch.Generator().manual_seed(1)
    cpu = torch.device("cpu")
    assert qg_fast._random_batch(g, 3, 10, VOCAB, cpu, padded=False)[1].all()
    for inputs in (1, 3):
        assert not qg_fast._random_batch(g, inputs, 10, VOCAB, cpu, padded=True)[1].all()
