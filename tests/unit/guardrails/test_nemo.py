"""The NeMo Guardrails action's settings (`guardrails.nemo.settings`), read from the rails config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("nemoguardrails")

from q2_metric.errors import Q2OptionError
from q2_metric.guardrails.nemo import settings


def test_a_timeout_of_zero_is_refused_not_replaced_by_the_default():
    with pytest.raises(Q2OptionError, match="timeout"):
        settings(SimpleNamespace(custom_data={"q2": {"timeout": 0}}))


def test_no_timeout_is_the_clients_default_and_a_given_one_is_kept():
    service, threshold = settings(SimpleNamespace(custom_data={"q2": {"timeout": 2.5, "threshold": 0.4}}))
    assert service.timeout == 2.5 and threshold == 0.4
    default, _ = settings(SimpleNamespace(custom_data={}))
    assert default.timeout == 30.0
