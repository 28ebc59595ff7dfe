"""On a real GPU: the default is the paper's number (float32, the CPU's decisions and scores), and a
faster precision is named in the signature. The expected scores come from the same models on the
CPU, the device every published figure's precision (float32) was checked on here."""

from __future__ import annotations

import pytest
import torch

from q2_metric import Q2Scorer
from q2_metric.errors import Q2Error


def trace(result) -> list[str]:
    """Every decision of every response, and its scores (repr: a NaN equals a NaN)."""
    return [
        repr(
            (
                r.q2,
                r.q2_no_nli,
                r.fallback,
                r.fallback_label,
                [
                    (q.question, q.status, q.response_answer, q.knowledge_answer, q.nli_label)
                    for q in r.questions
                ],
            )
        )
        for r in result.responses
    ]


def test_the_default_on_a_gpu_is_float32(tiny_config):
    scorer = Q2Scorer(tiny_config.replace(device="cuda", decoding="greedy"))
    result = scorer.score(["Bob Ross hosted The Joy of Painting on PBS."], ["Bob Ross hosted a show on PBS."])
    for model in (scorer.qg.model, scorer.qa.model, scorer.nli.model):
        assert next(model.parameters()).dtype == torch.float32 and next(model.parameters()).is_cuda
    assert result.signature.to_dict()["dtype"] == "float32"
    assert "dtype:float32" in result.signature.short()


def test_float32_on_the_gpu_gives_the_cpus_decisions_and_scores(tiny_config, rows):
    responses, knowledge = [r["response"] for r in rows], [r["knowledge"] for r in rows]
    on_cpu = Q2Scorer(tiny_config).score(responses, knowledge)
    on_gpu = Q2Scorer(tiny_config.replace(device="cuda")).score(responses, knowledge)
    assert len({r.q2 for r in on_cpu.responses}) > 2  # the rows differ, so a row-by-row match means something
    for i, (cpu, gpu) in enumerate(zip(trace(on_cpu), trace(on_gpu), strict=True)):
        assert gpu == cpu, f"row {i}"


def test_bfloat16_on_a_gpu_is_named_in_the_signature(tiny_config, rows):
    scorer = Q2Scorer(tiny_config.replace(device="cuda", dtype="bfloat16"))
    result = scorer.score([r["response"] for r in rows[:8]], [r["knowledge"] for r in rows[:8]])
    for model in (scorer.qg.model, scorer.qa.model, scorer.nli.model):
        assert next(model.parameters()).dtype == torch.bfloat16
    assert result.signature.to_dict()["dtype"] == "bfloat16"
    assert "dtype:bfloat16" in result.signature.short()
    assert all(0 <= r.q2 <= 1 for r in result.responses)


def test_a_gpu_past_the_last_is_refused_in_one_sentence(tiny_config):
    with pytest.raises(Q2Error, match=r"cuda:\d+") as err:
        Q2Scorer(tiny_config.replace(device=f"cuda:{torch.cuda.device_count()}")).load()
    assert str(err.value).count(". ") == 0


def test_the_fast_question_generator_on_the_gpu_asks_the_reference_path_s_questions(tiny_config, rows):
    """`qg_decoder`: the fast path (merged steps behind the exactness gate, checked on this GPU) and
    the reference path give the same questions, answers and scores on the tiny models' varied rows;
    the gate's decisions are printed for the run's record."""
    responses, knowledge = [r["response"] for r in rows], [r["knowledge"] for r in rows]
    config = tiny_config.replace(device="cuda", qg_batch_size=8)
    fast = Q2Scorer(config.replace(qg_decoder="fast"))
    reference = Q2Scorer(config)
    got, want = fast.score(responses, knowledge), reference.score(responses, knowledge)
    assert fast.qg.decoder == "fast" and reference.qg.decoder == "reference"
    assert len({r.q2 for r in want.responses}) > 2
    for i, (a, b) in enumerate(zip(trace(got), trace(want), strict=True)):
        assert a == b, f"row {i}"
    assert "|qgdec:fast|" in str(got.signature) and "|qgdec:ref|" in str(want.signature)
    for key, ok in fast.qg.gate.memo.items():  # type: ignore[attr-defined]
        print("gate:", key[0], key[2], key[-1], "fast" if ok else "refused")


def test_bfloat16_on_a_gpu_runs_no_cudnn_attention(tiny_config, rows):
    """cuDNN's attention spent 1.7 ms of host time per call on an H200 (`models/speed/kernels.py`):
    a bfloat16 run's attention goes to the other kernels, and its scores stay in range."""
    from torch.profiler import ProfilerActivity, profile

    scorer = Q2Scorer(tiny_config.replace(device="cuda", dtype="bfloat16")).load()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as ops:
        result = scorer.score([r["response"] for r in rows[:8]], [r["knowledge"] for r in rows[:8]])
    names = {e.key for e in ops.key_averages()}
    assert any("attention" in n for n in names), sorted(names)  # attention ran, through SDPA
    assert not [n for n in names if "cudnn_attention" in n]
    assert all(0 <= r.q2 <= 1 for r in result.responses)
