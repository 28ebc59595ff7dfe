"""The tiny models' QA and NLI decisions on the bundled sample sit far from a tie, so no CPU's
rounding flips them (the tests run on Intel Xeons and AMD EPYCs alike, and on GPUs).

Every decision is measured: each QA window's start and end argmax (the released code's decoding,
`hf_qa.decode_reference`: the gap between the best position and the runner-up, the "no answer"
position included) and each NLI pair's label (the gap between the best label's logit and the next).
The bound, MARGIN = 1e-3, is a thousand times the largest difference two kernels were seen to make
in these models' logits (under 1e-6: oneDNN against BLAS Linear layers, merged against single
batches, documented in docs/speed.md), so a flip needs rounding a thousand times worse than any
measured.

The random T5 that asks the tiny questions has no such design, and none was found
(`benchmarks/experiments/qg_margins.py`, on a 2-core AMD EPYC): its 2,160 beam decisions on the
sample have gaps down to 6.7e-6, about 7 float32 ulps of the cumulative scores they separate; one
thread instead of two moves a gap by up to 1.5e-5 (11% of the gap it moved, 7 ulps), without
flipping one; scaling the LM head's logits 8 or 32 times only reaches 24 ulps, because a random
model's top candidates crowd together at any scale. So the suite compares tiny questions across
paths on one machine, where the exactness gate makes the fast path's logits the reference's bit
for bit (`tests/unit/models/speed/test_qg_fast.py`, `test_qg_graphs.py`). The GPU tests
(`tests/gpu/`, run only where a GPU is lent) also compare the GPU's questions with the CPU's: they
held on an H200, but with these margins another GPU's rounding could flip one.
"""

from __future__ import annotations

import numpy as np
import pytest

from q2_metric import Q2Scorer
from q2_metric.models import hf_qa

MARGIN = 1e-3


@pytest.fixture(scope="module")
def margins(tiny_config, rows):
    """Every QA and NLI decision's margin on the sample, through the scorer."""
    qa: list[float] = []
    nli: list[float] = []
    original = hf_qa.decode_reference

    def recorded(start: np.ndarray, end: np.ndarray):
        for logits in (start, end):
            top = np.sort(logits)[::-1]
            qa.append(float(top[0] - top[1]))
        return original(start, end)

    scorer = Q2Scorer(tiny_config).load()
    hook = scorer.nli.model.register_forward_hook(
        lambda module, args, out: nli.extend(
            (lambda top: (top[:, 0] - top[:, 1]).tolist())(
                out.logits.float().sort(-1, descending=True).values
            )
        )
    )
    hf_qa.decode_reference = recorded
    try:
        scorer.score([r["response"] for r in rows], [r["knowledge"] for r in rows])
    finally:
        hf_qa.decode_reference = original
        hook.remove()
    return {"qa": qa, "nli": nli}


@pytest.mark.parametrize("role", ["qa", "nli"])
def test_every_decision_clears_the_margin(margins, role):
    values = margins[role]
    assert len(values) > 30  # decisions were measured (QA: two per window; NLI: one per pair)
    assert min(values) >= MARGIN, f"{role}: smallest margin {min(values):.2e} < {MARGIN:g}"
