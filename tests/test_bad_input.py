"""Bad input: errors name the item and the field before any model runs; empty text is NaN."""

import math

import pytest

from q2_metric import Q2Config, Q2InputError, Q2Scorer
from q2_metric.testing.scripted import scripted_scorer


def unloadable():
    # Any model use would fail: these checks must happen before.
    return Q2Scorer(Q2Config(qg_model="/nonexistent/qg"))


def test_mismatched_lengths():
    with pytest.raises(Q2InputError, match="response has 2 items but knowledge has 1"):
        unloadable().score(["a", "b"], ["c"])


@pytest.mark.parametrize("responses, knowledge, message", [
    (["ok", None], ["k", "k"], "item 1: field 'response' must be a string, got None"),
    (["ok", "ok"], ["k", 3], "item 1: field 'knowledge' must be a string, got int"),
    ("a single string", ["k"],
     r"response must be a sequence of strings \(list, tuple, numpy array, pandas Series\), got a single str"),
])
def test_non_strings(responses, knowledge, message):
    with pytest.raises(Q2InputError, match=message):
        unloadable().score(responses, knowledge)


def test_empty_and_whitespace_give_nan_and_are_counted():
    result = scripted_scorer().score(["Paris is big.", "", "Rome.", " \n"],
                                     ["Paris is big.", "Paris.", "  ", "Rome."])
    reasons = [r.reason for r in result.responses]
    assert reasons == [None, "empty response", "empty knowledge", "empty response"]
    assert [math.isnan(s) for s in result.scores] == [False, True, True, True]
    assert result.q2 == 1.0 and result.system.num_skipped == 3 and result.system.num_scored == 1


def test_all_empty_batch_needs_no_model():
    result = unloadable().score(["", " "], ["x", "y"])
    assert math.isnan(result.q2) and result.system.num_skipped == 2


def test_config_rejects_unknown_choices():
    with pytest.raises(ValueError, match="decoding"):
        Q2Config(decoding="sampling")
    with pytest.raises(ValueError, match="num_return_sequences"):
        Q2Config(num_beams=2, num_return_sequences=5)
