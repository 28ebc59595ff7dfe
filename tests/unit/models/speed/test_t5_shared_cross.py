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


def test_the_3x_t5_with_its_cross_bias_still_generates_what_transformers_3_2_did():
    from transformers import T5ForConditionalGeneration

    case = json.loads((REF32 / "expected.json").read_text(encoding="utf-8"))["t5_model"]
    model = T5ForConditionalGeneration.from_pretrained(str(REF32 / "t5")).eval()
    assert attach_cross_attention_bias(model, str(REF32 / "t5"))
    attach_shared_cross_attention(model)  # (its hooks do nothing outside merged steps)
    with torch.no_grad():
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
