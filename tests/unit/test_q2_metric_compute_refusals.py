"""`compute()` (the `evaluate` module) refuses what it would otherwise ignore or misread (issue 36):
histories without coref=True, a bool threshold; -0 is threshold 0 (`thr:0`)."""

import math

import evaluate
import pytest

import q2_metric
from q2_metric.errors import Q2OptionError

PRED, REF = ["it aired in canada"], ["The show aired in Canada."]


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(q2_metric.module_path())


def test_histories_without_coref_is_refused(metric):
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option histories: it is read by coref=True only; add "
                                            r"coref=True or leave histories out\.$"):
        metric.compute(predictions=PRED, references=REF, histories=[["who hosted it?"]], tiny=True)


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_threshold_is_refused(metric, value):
    with pytest.raises(Q2OptionError, match=rf"^Invalid Q² option threshold={value}: the threshold must be a number "
                                            rf"in \[0, 1\], not the bool {value}\.$"):
        metric.compute(predictions=PRED, references=REF, threshold=value, tiny=True)


def test_minus_zero_threshold_signs_thr_0(metric):
    out = metric.compute(predictions=PRED, references=REF, threshold=-0.0, tiny=True)
    assert out["signature"].endswith("|thr:0") and math.copysign(1, out["threshold"]) == 1.0
    assert out["decisions"] == ["consistent"]  # every score is >= 0
