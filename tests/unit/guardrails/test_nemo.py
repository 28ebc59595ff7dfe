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


def test_the_operating_point_of_the_config_is_sent_and_decides(tmp_path):
    """`custom_data: q2: operating_point:` against a real service (the `q2 serve` app on uvicorn, in
    process, over the scripted scorer): its threshold (0.4) is the one sent, so a Q² of 0.5 passes,
    which the service's own 0.5 would block; a threshold beside it that is not its own is refused."""
    import asyncio
    import json

    from support.serve import q2_service

    from q2_metric.guardrails.nemo import decision_of, q2_check_consistency
    from q2_metric.testing.scripted import scripted_scorer

    op = tmp_path / "op.json"
    op.write_text(
        json.dumps(
            {
                "format": "q2-operating-point",
                "version": 1,
                "threshold": 0.4,
                "rule": {"name": "balanced_accuracy"},
                "dataset": {"name": "d", "sha256": "a" * 64},
                "scores": {"sha256": "b" * 64, "signature": "q2:0.5.0|qg:x"},
                "figures": {"balanced_accuracy": {"value": 0.7, "low": 0.6, "high": 0.8}},
                "calibration": {"ece": 0.1, "table": []},
                "created": "2026-12-01T23:00:00+00:00",
            }
        )
    )
    context = {"bot_message": "Paris and Rome are big.", "relevant_chunks": "Paris is big."}  # Q² 0.5
    with q2_service(scripted_scorer()) as url:
        at_op = SimpleNamespace(custom_data={"q2": {"url": url, "operating_point": str(op)}})
        plain = SimpleNamespace(custom_data={"q2": {"url": url}})
        passed = asyncio.run(q2_check_consistency(dict(context), at_op))
        blocked = asyncio.run(q2_check_consistency(dict(context), plain))
    assert settings(at_op)[1] == 0.4 and decision_of(at_op).operating_point is not None
    assert passed.return_value is True and passed.context_updates["q2_verdict"] == "consistent"
    assert blocked.return_value is False and blocked.context_updates["q2_verdict"] == "inconsistent"
    with pytest.raises(Q2OptionError, match="disagree"):
        settings(SimpleNamespace(custom_data={"q2": {"operating_point": str(op), "threshold": 0.5}}))
