"""Beam search with each input's cross-attention keys and values made once (`t5_shared_cross`).

Expected values come from two sources independent of the code under test: transformers' own
plain beam search (keys and values per beam, the cache reordered whole) on the same model, bit for
bit, and the beam search ids that transformers 3.2.0 generated with the 3.x T5 of tests/data/ref32
(recorded by tests/data/ref32/record.py in the 3.2 environment), and torch's `FlopCounterMode`
for the FLOPs.
"""

from __future__ import annotations

import json

import pytest
import torch
from support.data import TEST_DATA
from torch.utils.flop_counter import FlopCounterMode

from q2_metric.models.hf_qg import HFQuestionGenerator
from q2_metric.models.paper.t5_cross_bias import attach_cross_attention_bias
from q2_metric.models.speed.flops import FlopMeter
from q2_metric.models.speed.t5_shared_cross import attach_shared_cross_attention

REF32 = TEST_DATA / "ref32"

PROMPTS = [
    "answer: Bob Ross  context: Bob Ross hosted The Joy of Painting on PBS. </s>",
    "answer: PBS  context: on PBS </s>",
    "answer: 1983  context: The show ran from 1983 to 1994, for 31 seasons. </s>",
]


@pytest.fixture(scope="module")
def tiny_t5(tiny_models):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["qg"])
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_models["qg"]).eval()
    return tok, model, attach_shared_cross_attention(model)


def _generate(model, enc, beams: int, **extra):
    options = dict(
        num_beams=beams,
        num_return_sequences=beams,
        no_repeat_ngram_size=3,
        max_new_tokens=12,
        do_sample=False,
        output_scores=True,
        return_dict_in_generate=True,
    )
    with torch.inference_mode():
        return model.generate(**enc, **{**options, **extra})


@pytest.mark.parametrize("beams", [2, 5])
def test_same_ids_and_scores_as_the_plain_beam_search(tiny_t5, beams):
    tok, model, shared = tiny_t5
    enc = tok(PROMPTS, padding=True, return_tensors="pt")  # padded rows: masks differ per input
    plain = _generate(model, enc, beams)
    with shared.sharing(beams):
        got = _generate(model, enc, beams)
    assert torch.equal(got.sequences, plain.sequences)
    assert torch.equal(got.sequences_scores, plain.sequences_scores)
    assert not hasattr(model, "_reorder_cache") and shared.beams == 1  # nothing left behind


def test_the_3x_t5_with_its_cross_bias_still_generates_what_transformers_3_2_did():
    from transformers import T5ForConditionalGeneration

    case = json.loads((REF32 / "expected.json").read_text(encoding="utf-8"))["t5_model"]
    model = T5ForConditionalGeneration.from_pretrained(str(REF32 / "t5")).eval()
    assert attach_cross_attention_bias(model, str(REF32 / "t5"))
    shared = attach_shared_cross_attention(model)
    with torch.no_grad(), shared.sharing(3):
        beam = model.generate(
            input_ids=torch.tensor([case["input_ids"]]),
            max_length=10,
            num_beams=3,
            num_return_sequences=3,
            do_sample=False,
        )
    assert beam.tolist() == case["beam"]


def test_sharing_ends_when_generation_fails(tiny_t5):
    _tok, model, shared = tiny_t5
    with pytest.raises(ValueError), shared.sharing(3):
        raise ValueError("generation failed")
    assert not hasattr(model, "_reorder_cache") and shared.beams == 1


def test_the_meter_counts_the_shared_projections_as_torch_does(tiny_t5):
    tok, model, shared = tiny_t5
    model.set_attn_implementation("eager")  # FlopCounterMode does not count the CPU SDPA kernel
    enc = tok(PROMPTS[:2], padding=True, return_tensors="pt")
    meter = FlopMeter(model)
    try:
        with FlopCounterMode(display=False) as counter, shared.sharing(3):
            _generate(model, enc, 3, min_new_tokens=6, max_new_tokens=6)
        with FlopCounterMode(display=False) as plain:
            _generate(model, enc, 3, min_new_tokens=6, max_new_tokens=6)
    finally:
        meter.detach()
        model.set_attn_implementation("sdpa")
    # the plain path projects 2 inputs x 3 beams; the shared one 2 inputs, once each
    d = meter.dims
    saved = d.decoder_layers * (2 * 3 - 2) * enc["input_ids"].shape[1] * 2 * 2 * d.hidden * d.inner
    assert plain.get_total_flops() - counter.get_total_flops() == saved
    assert meter.flops == counter.get_total_flops() + plain.get_total_flops()


def test_the_qg_backend_shares_and_the_config_decides_as_before(tiny_config):
    qg = HFQuestionGenerator(tiny_config)
    assert qg.shared_cross is not None
    prompts = ["answer: Bob Ross  context: Bob Ross hosted The Joy of Painting on PBS."]
    shared = qg.generate_ids(prompts)
    qg.shared_cross = None  # transformers' plain beam search, on the same model
    assert qg.generate_ids(prompts) == shared


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("inputs", "beams", "heads", "length", "size"),
    [(3, 5, 4, 1, 16), (16, 5, 12, 37, 64), (7, 4, 12, 200, 64), (2, 3, 2, 600, 8)],
)
def test_one_grouped_query_call_gives_every_beam_slot_its_numbers(
    inputs, beams, heads, length, size, threads
):
    """The beam slots' cross-attention in one grouped-query SDPA call: the outputs of transformers'
    SDPA attention called once per slot (rows j, j + beams, ...), bit for bit, with a mask hiding a
    different tail of each input's keys, a bias per head, key lengths past the kernel's 512 block."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from q2_metric.models.speed.t5_shared_cross import _grouped_query

    g = torch.Generator().manual_seed(inputs * length)
    rows = inputs * beams
    query = torch.randn((rows, 1, heads, size), generator=g).transpose(1, 2)  # as T5's view
    key, value = (torch.randn((inputs, heads, length, size), generator=g) for _ in range(2))
    kept = torch.randint(1, length + 1, (inputs,), generator=g)
    mask = (torch.arange(length)[None, :] < kept[:, None]).repeat_interleave(beams, 0)[:, None, None, :]
    bias = torch.randn((1, heads, 1, length), generator=g)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        slots = []
        for j in range(beams):
            out, _ = sdpa_attention_forward(
                None,
                query[j::beams],
                key,
                value,
                mask[j::beams],
                dropout=0.0,
                scaling=1.0,
                position_bias=bias,
            )
            slots.append(out)
        expected = torch.stack(slots, dim=1).reshape(rows, 1, heads, size)
        got = _grouped_query(
            query, key, value, mask, beams, {"position_bias": bias, "dropout": 0.0, "scaling": 1.0}
        )
    finally:
        torch.set_num_threads(previous)
    assert torch.equal(got, expected)
    assert length == 1 or not torch.equal(expected[0], expected[1])  # the beams' queries differ


def test_generation_uses_the_grouped_call_unless_its_check_fails(tiny_t5, monkeypatch):
    """Beam search runs the cross-attention in one grouped call per layer (same ids and scores as the
    plain beam search); when the check on random rows finds other numbers, one call per slot."""
    import q2_metric.models.speed.t5_shared_cross as module

    tok, model, shared = tiny_t5
    enc = tok(PROMPTS, padding=True, return_tensors="pt")
    plain = _generate(model, enc, 4)
    calls: list[int] = []
    grouped = module._grouped_query

    def counted(*args, **kwargs):
        calls.append(1)
        return grouped(*args, **kwargs)

    monkeypatch.setattr(module, "_grouped_query", counted)
    monkeypatch.setattr(module, "_GQA_CHECKED", {})
    with shared.sharing(4):
        got = _generate(model, enc, 4)
    assert calls and torch.equal(got.sequences, plain.sequences)
    assert all(torch.equal(a, b) for a, b in zip(got.scores, plain.scores))

    calls.clear()
    monkeypatch.setattr(module, "_GQA_CHECKED", {})
    monkeypatch.setattr(module, "_same_as_slots", lambda *args: False)  # as a kernel that differed
    with shared.sharing(4):
        got = _generate(model, enc, 4)
    assert not calls and torch.equal(got.sequences, plain.sequences)
