"""The fast precisions (`models.speed.precision`): the CPU bfloat16 test, the refusals, and int8
quantization of the QA and NLI encoders through the engine's CPU path."""

from __future__ import annotations

import math

import pytest
import torch

from q2_metric import Q2Scorer
from q2_metric.errors import DeviceNotAvailable, Q2OptionError
from q2_metric.models.speed import precision
from q2_metric.models.speed.precision import check_precision, cpu_flags_have_bf16, quantize_encoder
from q2_metric.options import build_config


def test_bf16_flags_from_cpuinfo_or_capability():
    # AVX512-BF16 (Zen 4/5, Cooper Lake) or AMX-BF16 (Sapphire Rapids) multiply bfloat16 natively
    assert cpu_flags_have_bf16({"fpu", "avx512f", "avx512_bf16"})
    assert cpu_flags_have_bf16({"amx_bf16"})
    assert not cpu_flags_have_bf16({"avx512f", "avx512_vnni"}, "AVX512")
    assert not cpu_flags_have_bf16(set(), "AVX2")


def test_bfloat16_refused_on_a_cpu_without_it(monkeypatch):
    monkeypatch.setattr(precision, "cpu_has_bf16", lambda: False)
    with pytest.raises(DeviceNotAvailable, match=r"AVX512-BF16 or AMX-BF16.*use dtype='float32'") as err:
        check_precision("bfloat16", "none", "cpu")
    assert str(err.value).count(". ") == 0  # one sentence
    check_precision("float32", "none", "cpu")
    check_precision("bfloat16", "none", "cuda")  # the GPU decides for itself
    monkeypatch.setattr(precision, "cpu_has_bf16", lambda: True)
    check_precision("bfloat16", "none", torch.device("cpu"))


def test_float16_refused_on_a_cpu_without_it_as_bfloat16_is(monkeypatch, tiny_config):
    """dtype='float16' on a CPU was accepted silently, while bfloat16 was refused (issue 49)."""
    monkeypatch.setattr(precision, "cpu_has_fp16", lambda: False)
    with pytest.raises(DeviceNotAvailable, match=r"AVX512-FP16 or AMX-FP16.*use dtype='float32'") as err:
        check_precision("float16", "none", "cpu")
    assert str(err.value).count(". ") == 0  # one sentence
    check_precision("float16", "none", "cuda")  # the GPU decides for itself
    with pytest.raises(DeviceNotAvailable, match="float16"):
        Q2Scorer(tiny_config.replace(dtype="float16", device="cpu")).check_models()
    monkeypatch.setattr(precision, "cpu_has_fp16", lambda: True)
    check_precision("float16", "none", torch.device("cpu"))


def test_bfloat16_refusal_reaches_the_scorer_before_any_model(monkeypatch, tiny_config):
    monkeypatch.setattr(precision, "cpu_has_bf16", lambda: False)
    with pytest.raises(DeviceNotAvailable, match="bfloat16"):
        Q2Scorer(tiny_config.replace(dtype="bfloat16")).check_models()


def test_int8_only_on_a_cpu_and_only_over_float32():
    with pytest.raises(DeviceNotAvailable, match="runs on a CPU only"):
        check_precision("auto", "int8", "cuda:0")
    with pytest.raises(Q2OptionError, match="cannot be combined with dtype='bfloat16'"):
        build_config("paper", {"quantize": "int8", "dtype": "bfloat16", "device": "cpu"})
    with pytest.raises(Q2OptionError, match="quantize='int4'"):
        build_config("paper", {"quantize": "int4"})


def test_quantize_encoder_keeps_the_head_float():
    from transformers import AlbertConfig, AlbertForQuestionAnswering

    cfg = AlbertConfig(
        vocab_size=50,
        embedding_size=8,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        num_hidden_layers=2,
    )
    model = AlbertForQuestionAnswering(cfg).eval()
    # ALBERT shares one layer: the embedding mapping, q/k/v/dense, ffn, ffn_output
    assert quantize_encoder(model) == 7
    assert type(model.qa_outputs) is torch.nn.Linear
    assert not any(type(m) is torch.nn.Linear for m in model.albert.modules())


def test_int8_runs_the_engine_cpu_path_and_is_signed(tiny_config):
    """QA packing, oneDNN's Linear layers (the heads left float) and the fused GELU all run with
    the quantized encoders; scores stay in [0, 1] and the signature names int8."""
    config = tiny_config.replace(quantize="int8", cpu_matmul="onednn", qa_packing="on", decoding="greedy")
    scorer = Q2Scorer(config)
    texts = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired from 1983 to 1994 in America."]
    result = scorer.score(texts, list(reversed(texts)))
    assert all(0.0 <= s <= 1.0 for s in result.scores if not math.isnan(s))
    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    for model in (scorer.qa.model, scorer.nli.model):
        assert any(isinstance(m, QLinear) for m in model.base_model.modules())
    assert [type(m) for m in scorer.qa.linears.layers] == [torch.nn.Linear]  # the QA head only, on oneDNN
    if scorer.qa.model.config.hidden_act == "gelu_new":  # the fused GELU survives the quantization
        assert any(
            isinstance(m, torch.nn.GELU) and m.approximate == "tanh" for m in scorer.qa.model.modules()
        )
    assert not any(isinstance(m, QLinear) for m in scorer.qg.model.modules())  # T5 stays float32
    sig = result.signature.to_dict()
    assert sig["quant"] == "int8-dynamic-qa,nli" and sig["dtype"] == "float32"
    assert "dtype:float32+int8" in result.signature.short()


@pytest.mark.skipif(not precision.cpu_has_bf16(), reason="this CPU has neither AVX512-BF16 nor AMX-BF16")
def test_bfloat16_runs_on_a_cpu_that_has_it(tiny_config):
    scorer = Q2Scorer(tiny_config.replace(dtype="bfloat16", decoding="greedy"))
    result = scorer.score(["Bob Ross hosted The Joy of Painting on PBS."], ["Bob Ross hosted a show on PBS."])
    assert scorer.qa.model.dtype == torch.bfloat16 and scorer.qg.model.dtype == torch.bfloat16
    assert result.signature.to_dict()["dtype"] == "bfloat16"
