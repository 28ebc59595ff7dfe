"""Packing QA pairs into rows (`q2_metric.models.batching.pack_rows`), a pure rule.

The lengths are the token counts of the 8 packed QA calls of `make bench` on 16 annotated
responses (recorded from `bench_speed.py --size tiny --n 16 --qa-packing on`, whose tokenizer and
pairs are those of the paper-shape run). With the greedy packing alone they were padded to 5,867
tokens for 5,664 real ones (3.5% padding, the `QA tokens (padded)` line of RESULTS.md).
"""

import pytest
import torch

from q2_metric import Q2Config
from q2_metric.models.batching import batch_limits, pack_rows, packed_calls

BENCH_CALLS = [
    [
        32,
        33,
        33,
        33,
        33,
        34,
        34,
        34,
        35,
        35,
        35,
        36,
        36,
        36,
        36,
        37,
        37,
        38,
        38,
        38,
        38,
        38,
        38,
        39,
        39,
        40,
        41,
        42,
        43,
        44,
        46,
        48,
    ],
    [23, 26, 28, 29, 29, 30, 30, 31, 31, 31, 32, 32],
    [27, 28, 29, 29, 30, 31, 31, 31, 32, 33, 33, 34, 34, 34, 35, 36, 36, 37, 39, 41, 42],
    [27, 31, 32, 33, 33, 33, 33, 34, 34, 34, 36, 37, 39],
    [33, 33, 35, 36],
    [37],
    [
        44,
        44,
        45,
        45,
        45,
        46,
        46,
        47,
        47,
        47,
        47,
        48,
        50,
        50,
        51,
        51,
        52,
        53,
        54,
        55,
        68,
        68,
        69,
        69,
        71,
        77,
        78,
        78,
        90,
        90,
        91,
        94,
    ],
    [28, 28, 30, 30, 32, 32, 33, 33, 34, 36, 37, 37, 37, 37, 37, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41],
]


@pytest.mark.parametrize("lengths", BENCH_CALLS)
def test_every_input_once_in_as_few_rows_as_the_capacity_allows(lengths):
    rows = pack_rows(lengths, capacity=256)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    assert len(rows) == -(-sum(lengths) // 256)


def test_rows_are_nearly_equal_so_padding_them_costs_little():
    real = sum(map(sum, BENCH_CALLS))
    padded = 0
    for lengths in BENCH_CALLS:
        rows = pack_rows(lengths, capacity=256)
        padded += len(rows) * max(sum(lengths[i] for i in row) for row in rows)
    assert real == 5664
    assert padded - real < 0.01 * real  # under 1% (the greedy packing alone: 203 tokens, 3.5%)
    # the 5-row call: 1,199 tokens cannot be padded to less than 5 x 240; greedy alone gave 5 x 259
    first = pack_rows(BENCH_CALLS[0], capacity=256)
    assert max(sum(BENCH_CALLS[0][i] for i in row) for row in first) <= 241


def test_calls_respect_the_count_and_token_limits():
    lengths = [n for call in BENCH_CALLS for n in call]
    calls = list(packed_calls(lengths, max_count=32, max_tokens=2048, row_tokens=256))
    assert sorted(i for call in calls for row in call for i in row) == list(range(len(lengths)))
    for call in calls:
        members = [i for row in call for i in row]
        assert len(members) <= 32 and sum(lengths[i] for i in members) <= 2048


def test_batch_limits_are_the_options_or_the_device_s():
    """A CPU's limits are the ones the options had before they could be left to the device; a GPU's
    grow with its free memory up to the limits the H200 run used, never below a CPU's."""
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert [batch_limits(Q2Config(), r, cpu) for r in ("qg", "qa", "nli")] == [
        (16, 16384),
        (32, 16384),
        (32, 16384),
    ]
    assert batch_limits(Q2Config(qg_batch_size=5, qg_max_tokens=99), "qg", cpu) == (5, 99)
    roomy = [batch_limits(Q2Config(), r, gpu, free=80 * 2**30) for r in ("qg", "qa", "nli")]
    assert roomy == [(128, 262144), (256, 131072), (256, 131072)]
    assert batch_limits(Q2Config(), "qa", gpu, free=8 * 2**30) == (128, 65536)  # half the room: half
    assert batch_limits(Q2Config(), "qa", gpu, free=2**28) == (32, 16384)  # little room: a CPU's
    assert batch_limits(Q2Config(nli_max_tokens=4096), "nli", gpu, free=2**40) == (256, 4096)


def test_the_backends_batch_by_their_limits(tiny_config):
    from q2_metric.models.hf_nli import HFNLIClassifier
    from q2_metric.models.hf_qa import HFQuestionAnswerer
    from q2_metric.models.hf_qg import HFQuestionGenerator

    config = tiny_config.replace(device="cpu", qa_batch_size=7)
    assert (HFQuestionAnswerer(config).batch_size, HFQuestionAnswerer(config).max_tokens) == (7, 16384)
    assert (HFNLIClassifier(config).batch_size, HFQuestionGenerator(config).batch_size) == (32, 16)
