"""The one batching policy (`q2_metric.runtime.policy.BatchPolicy`): one default per knob, checked
once when made, in the front-end's words, and frozen."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from q2_metric.errors import Q2OptionError
from q2_metric.runtime.policy import BatchPolicy


def test_one_default_per_knob_shared_by_the_service_and_the_adapters():
    from q2_metric.harness import inspect_task
    from q2_metric.serve.limits import Limits

    policy = BatchPolicy()
    assert (policy.max_batch, policy.max_wait, policy.adaptive) == (64, 0.02, False)
    assert (Limits().max_batch, Limits().max_wait) == (policy.max_batch, policy.max_wait)
    assert inspect.signature(inspect_task.q2).parameters["max_wait"].default == policy.max_wait


@pytest.mark.parametrize(
    "given, word",
    [
        ({"max_batch": 0}, "max_batch=0: use an integer >= 1"),
        ({"max_batch": True}, "max_batch=True: use an integer >= 1"),
        ({"max_batch": 2.0}, "max_batch=2.0: use an integer >= 1"),
        ({"max_wait": -0.1}, "max_wait=-0.1: use a number of seconds >= 0"),
        ({"max_wait": float("inf")}, "max_wait=inf: use a number of seconds >= 0"),
        ({"max_wait": "1"}, "max_wait='1': use a number of seconds >= 0"),
    ],
)
def test_each_knob_is_checked_once_in_one_sentence(given, word):
    with pytest.raises(Q2OptionError) as err:
        BatchPolicy(**given)
    assert str(err.value) == f"Invalid Q² option {word}."
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option --max-"):
        BatchPolicy(**given, spell=lambda n: "--" + n.replace("_", "-"))


def test_the_policy_is_frozen_and_its_wait_a_float():
    policy = BatchPolicy(8, 1, True)
    assert policy.max_wait == 1.0 and isinstance(policy.max_wait, float)
    assert policy == BatchPolicy(8, 1.0, True) and hash(policy) == hash(BatchPolicy(8, 1.0, True))
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.max_batch = 3  # type: ignore[misc]
