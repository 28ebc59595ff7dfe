"""The threshold's values (issue 36): a bool is refused, -0 is 0, and so is its signature."""

import math

import pytest

from q2_metric.cli.score import _threshold
from q2_metric.display import check_threshold
from q2_metric.signature import Signature


def test_minus_zero_is_zero_everywhere():
    for value in (check_threshold(-0.0), check_threshold("-0"), _threshold("-0")):
        assert value == 0.0 and math.copysign(1.0, value) == 1.0
    sig = Signature.parse("Q2|v:1|thr:0.5").with_threshold(-0.0)
    assert str(sig).endswith("|thr:0")


@pytest.mark.parametrize("value", [True, False])
def test_bool_is_refused(value):
    with pytest.raises(ValueError, match=f"not the bool {value}$"):
        check_threshold(value)
