"""Model FLOP accounting (`q2_metric.models.speed.flops`) and the per-stage profile of a run.

The formulas are checked against two independent sources: a hand computation for one small shape,
and torch's own `FlopCounterMode` (which counts every matrix product the kernels are asked for) on
tiny models run with eager attention (its CPU SDPA kernel is not one it counts)."""

import math
import time

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from q2_metric import Q2Scorer
from q2_metric.models.speed.flops import Dims, FlopMeter, decoder_step_flops, encoder_flops, matmul_peak
from q2_metric.progress import StageProfile, format_profile, merge_profiles


def test_encoder_flops_by_hand():
    # BERT-like, hidden 4, ff 8, 1 layer, QA head; 1 row of 3 tokens.
    # per token: q,k,v,o 4*(2*4*4)=128, ff 2*4*8 + 2*8*4 = 128, head 2*4*2 = 16 -> 272 x 3 = 816
    # attention: scores 2*3*3*4 = 72, weighted sum 72 -> 144;  total 960
    d = Dims("encoder", hidden=4, inner=4, ff=8, layers=1, head="qa")
    assert encoder_flops(d, rows=1, width=3) == 960
    # RoBERTa-like head on the first token only: dense 2*4*4 + out 2*4*3 = 56 per row
    cls = Dims("encoder", hidden=4, inner=4, ff=8, layers=1, head="cls", labels=3)
    assert encoder_flops(cls, rows=1, width=3) == 960 - 48 + 56


def test_decoder_step_flops_by_hand():
    # T5-like, d 4, inner 4, ff 8, 1 decoder layer, vocab 10; 2 rows, 1 new token after 2 cached,
    # source 5, cross keys/values computed now.
    # per token: self q,k,v,o 128 + cross q,o 64 + ff 128 = 320 -> 2 tokens 640
    # self attention over 3 positions: 2 rows * 3 * 4 * 4 = 96; cross over 5: 2 * 5 * 4 * 4 = 160
    # cross k,v of 2 rows x 5 positions: 2 * 5 * 2 * 2*4*4 = 640;  lm head 2 * 2*4*10 = 160
    d = Dims("t5", hidden=4, inner=4, ff=8, layers=1, decoder_layers=1, vocab=10)
    assert decoder_step_flops(d, rows=2, new=1, past=2, source=5, cross_kv=True) == 640 + 96 + 160 + 640 + 160
    assert decoder_step_flops(d, rows=2, new=1, past=2, source=5, cross_kv=False) == 640 + 96 + 160 + 160


def _eager(model):
    model.set_attn_implementation("eager")
    return model


def _counted(fn) -> int:
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.fixture(scope="module")
def tiny(tiny_models):
    from transformers import (
        AutoModelForQuestionAnswering,
        AutoModelForSeq2SeqLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    return (
        AutoTokenizer.from_pretrained(tiny_models["qa"]),
        {
            "qa": _eager(AutoModelForQuestionAnswering.from_pretrained(tiny_models["qa"]).eval()),
            "nli": _eager(AutoModelForSequenceClassification.from_pretrained(tiny_models["nli"]).eval()),
            "qg": _eager(AutoModelForSeq2SeqLM.from_pretrained(tiny_models["qg"]).eval()),
        },
    )


@pytest.mark.parametrize("role", ["qa", "nli"])
def test_encoder_meter_matches_torch_flop_counter(tiny, role):
    tok, models = tiny
    model = models[role]
    meter = FlopMeter(model)
    enc = tok(
        ["who hosted the show?", "what is it"],
        ["Bob Ross hosted it on PBS.", "a show"],
        padding=True,
        return_tensors="pt",
    )
    try:
        expected = _counted(lambda: model(**enc))
    finally:
        meter.detach()
    assert meter.flops == expected > 0
    assert meter.tokens == enc["input_ids"].numel() and meter.calls == 1


def test_packed_qa_meter_matches_torch_flop_counter(tiny):
    # the engine's packed rows: position ids and a 4D mask; attention still runs over the whole row
    _tok, models = tiny
    model = models["qa"]
    meter = FlopMeter(model)
    ids = torch.randint(5, 100, (2, 17))
    mask = torch.zeros(2, 1, 17, 17)
    try:
        expected = _counted(
            lambda: model(input_ids=ids, position_ids=torch.arange(17).expand(2, 17), attention_mask=mask)
        )
    finally:
        meter.detach()
    assert meter.flops == expected


@pytest.mark.parametrize("beams", [1, 3])
def test_t5_generation_meter_matches_torch_flop_counter(tiny, beams):
    # encoder once, then each decoder step on every beam row, cross keys/values at the first step
    tok, models = tiny
    model = models["qg"]
    meter = FlopMeter(model)
    enc = tok(
        ["answer: Bob Ross  context: Bob Ross hosted the show. </s>", "answer: PBS  context: on PBS </s>"],
        padding=True,
        return_tensors="pt",
    )
    steps = 6
    try:
        t0 = time.perf_counter()
        expected = _counted(
            lambda: model.generate(
                **enc,
                num_beams=beams,
                num_return_sequences=beams,
                min_new_tokens=steps,
                max_new_tokens=steps,
                no_repeat_ngram_size=3 if beams > 1 else 0,
            )
        )
        elapsed = time.perf_counter() - t0
        generated = (meter.flops, meter.calls, meter.tokens)
        # a direct call runs the encoder inside the model's forward: its time is counted once
        before = meter.seconds
        t0 = time.perf_counter()
        with torch.inference_mode():
            model(**enc, decoder_input_ids=torch.zeros(2, 1, dtype=torch.long))
        direct = time.perf_counter() - t0
    finally:
        meter.detach()
    assert generated == (expected, 1 + steps, enc["input_ids"].numel() + steps * 2 * beams)
    assert 0 < before <= elapsed and 0 < meter.seconds - before <= direct


def test_unknown_architectures_get_no_flop_figures():
    from transformers import BartConfig, BartForConditionalGeneration

    model = BartForConditionalGeneration(
        BartConfig(
            vocab_size=50,
            d_model=16,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=32,
            decoder_ffn_dim=32,
        )
    )
    assert FlopMeter.attach_if_known(model) is None


def test_matmul_peak_is_a_rate():
    rate = matmul_peak(torch.float32, n=256, seconds=0.05)
    assert math.isfinite(rate) and rate > 1e6


def test_profile_counts_match_the_model_inputs(tiny_config, rows):
    # FlopCounterMode sees aten's products, not oneDNN's Linear kernel (`cpu_matmul`); the meter
    # counts from the shapes, whichever kernel runs them
    scorer = Q2Scorer(tiny_config.replace(cpu_matmul="blas")).load()
    responses = [r["response"] for r in rows[:6]]
    knowledge = [r["knowledge"] for r in rows[:6]]
    # QG's check before merging decoder steps (`t5_merged_decoder.rows_independent`, products of
    # random rows, not model work) runs on the first call only
    scorer.score(responses, knowledge)
    for comp in (scorer.qg, scorer.qa, scorer.nli):
        _eager(comp.model)
        comp.tokens_processed = 0
    meters = {role: FlopMeter.attach(getattr(scorer, role).model) for role in ("qg", "qa", "nli")}
    before = {role: (m.flops, m.tokens) for role, m in meters.items()}
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        result = scorer.score(responses, knowledge)
    profile = result.profile
    assert [p.stage for p in profile] == [
        "candidates",
        "questions",
        "question filter",
        "knowledge answers",
        "span scores",
        "response scores",
    ]
    assert all(0 <= t <= p.seconds for p in profile for t in p.model_seconds.values())
    by_stage = {p.stage: p for p in profile}
    assert by_stage["candidates"].flops == {} and set(by_stage["questions"].flops) == {"qg"}
    # every model FLOP torch saw is in exactly one stage
    assert sum(sum(p.flops.values()) for p in profile) == counter.get_total_flops()
    # QA tokens of the two QA stages are the tokens the backend fed its model (its own counter)
    assert by_stage["question filter"].tokens["qa"] > 0
    qa_tokens = sum(by_stage[s].tokens.get("qa", 0) for s in ("question filter", "knowledge answers"))
    assert qa_tokens == scorer.qa.tokens_processed
    nli_tokens = sum(p.tokens.get("nli", 0) for p in profile)
    assert nli_tokens == scorer.nli.tokens_processed
    # QG: the encoder's padded inputs (the backend's counter) plus the decoder's tokens
    assert by_stage["questions"].tokens["qg"] > scorer.qg.tokens_processed
    for role, m in meters.items():
        assert sum(p.flops.get(role, 0) for p in profile) == m.flops - before[role][0]
    assert "profile" not in result.to_dict()  # timings never reach scores or summaries


def test_scripted_components_profile_time_only():
    from q2_metric.testing.scripted import scripted_scorer

    result = scripted_scorer().score(["Bob Ross hosted the show."], ["Bob Ross hosted the show."])
    assert [p.stage for p in result.profile][:2] == ["candidates", "questions"]
    assert all(p.flops == {} and p.tokens == {} for p in result.profile)


def test_merge_and_format_profiles():
    a = [StageProfile("questions", 1.0, {"qg": 10}, {"qg": 2 * 10**9}, {"qg": 3}, {"qg": 0.5})]
    b = [
        StageProfile("questions", 3.0, {"qg": 5}, {"qg": 2 * 10**9}, {"qg": 1}, {"qg": 1.5}),
        StageProfile("span scores", 1.0),
    ]
    merged = merge_profiles([a, b])
    assert merged == [
        StageProfile("questions", 4.0, {"qg": 15}, {"qg": 4 * 10**9}, {"qg": 4}, {"qg": 2.0}),
        StageProfile("span scores", 1.0),
    ]
    table = format_profile(merged).splitlines()
    # 4 GFLOP in 4 s: 1.0 GFLOP/s; over the whole 5 s: 0.8
    assert table[1].split() == ["questions", "4.00", "80.0%", "2.00", "qg:15", "4.00", "1.0"]
    assert table[2].split() == ["span", "scores", "1.00", "20.0%", "-", "-", "-", "-"]
    assert table[-1].split() == ["total", "5.00", "100.0%", "2.00", "4.00", "0.8"]
