"""On a real GPU: the reference decoder step replayed from CUDA graphs (`qg_graphs`).

Expected values: the eager reference step (`t5_steps.cached_steps`, the step the reference path
runs) on the same inputs, and the CPU's questions, answers and scores for the pipeline."""

from __future__ import annotations

import pytest
import torch
from support.t5 import random_t5
from test_cuda import trace

from q2_metric import Q2Scorer
from q2_metric.models.hf_qg import HFQuestionGenerator
from q2_metric.models.paper.t5_steps import cached_steps, encoder_rows
from q2_metric.models.speed.flops import FlopMeter
from q2_metric.models.speed.qg_fast import FastSettings
from q2_metric.models.speed.qg_graphs import StepGraphs

VOCAB = 512


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_graph_step_equals_the_eager_step_bit_for_bit_over_several_buckets(dtype):
    model = random_t5(5, 1.0, vocab=VOCAB, d_model=128, d_kv=32, d_ff=256).to("cuda", dtype)
    g = torch.Generator().manual_seed(0)
    beams, steps = 4, 12
    meter, counted = FlopMeter.attach(model), {"eager": 0, "graphs": 0}
    with torch.inference_mode():
        for inputs, width, padded in [(4, 16, True), (8, 24, True), (3, 16, False), (32, 40, True)]:
            rows = inputs * beams
            chain = StepGraphs(model, rows, width, padded)
            for batch in range(2):  # the second batch replays the graphs the first one captured
                ids = torch.randint(2, VOCAB, (inputs, width), generator=g).cuda()
                mask = torch.ones_like(ids)
                if padded:
                    mask[::2, width // 2 :] = 0
                hidden, rows_mask = encoder_rows(model, ids, mask, beams)
                chain.load(hidden, rows_mask)
                eager = cached_steps(model, hidden, rows_mask)
                beam_idx = None
                for t in range(steps):
                    tokens = torch.randint(2, VOCAB, (rows,), generator=g).cuda()
                    flops = meter.flops
                    want = eager(tokens, beam_idx).clone()
                    counted["eager"] += meter.flops - flops
                    flops = meter.flops
                    got = chain(t, tokens, beam_idx)
                    counted["graphs"] += meter.flops - flops
                    assert torch.equal(got, want), (dtype, inputs, width, padded, batch, t)
                    # each row continues a random beam of its own input
                    beam_idx = (
                        torch.arange(rows) // beams * beams + torch.randint(beams, (rows,), generator=g)
                    ).cuda()
            assert len(chain.graphs) == steps and chain.replays == 2 * steps
    # a replay runs no forward pass: the meter is given the step's FLOPs (a capture's are not counted)
    assert counted["graphs"] == counted["eager"] > 0


def test_the_pipeline_with_graphs_on_the_gpu_gives_the_cpu_s_questions_answers_and_scores(tiny_config, rows):
    responses, knowledge = [r["response"] for r in rows], [r["knowledge"] for r in rows]
    config = tiny_config.replace(device="cuda", qg_batch_size=4, qg_decoder="fast")
    qg = HFQuestionGenerator(config, fast=FastSettings(graph_min_uses=2))
    assert qg.fast is not None and qg.fast.graphs is not None
    on_gpu = Q2Scorer(config, qg=qg).score(responses, knowledge)
    on_cpu = Q2Scorer(tiny_config).score(responses, knowledge)
    assert len({r.q2 for r in on_cpu.responses}) > 2  # the rows differ, so a row-by-row match means something
    for i, (gpu, cpu) in enumerate(zip(trace(on_gpu), trace(on_cpu), strict=True)):
        assert gpu == cpu, f"row {i}"
    counts = qg.fast.graphs.counts
    print("graphs:", dict(counts), qg.profile_notes())
    for key, ok in qg.gate.memo.items():
        if key[0] == "cuda graphs":
            print("gate:", key[0], key[-1], "replayed" if ok else "refused")
    assert counts["replayed"] + counts["checked"] > 0
