"""Guardrails AI, through its own runner (`Guard().use(...)`, `.validate(...)` and `.parse(...)`), offline
on the tiny models: `Q2Consistency` passes the responses that `q2 score --threshold 0.5` (the command
line) calls consistent and fails the others, each failure's error spans at the offsets of `q2 score
--spans`' unsupported spans in the response (the whole response when it has none); in process and
against the service (the real `q2 serve` app on a free 127.0.0.1 port, tests/support/serve.py). A service that cannot be reached or refuses fails the response."""

from __future__ import annotations

import importlib.util

import pytest
from support.guardrails import offline_guard, q2_score_outcomes, quiet_guardrails, sample_pairs
from support.harness import env, set_in_process
from support.serve import closed_port_url, q2_service, refusing_service

if importlib.util.find_spec("guardrails") is None:  # (not imported here: quiet_guardrails comes first)
    pytest.skip("Guardrails AI is not installed (make setup installs it)", allow_module_level=True)

THRESHOLD = 0.5


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return sample_pairs(10)


@pytest.fixture(scope="module")
def environ(harness_tiny, tmp_path_factory):
    return env(harness_tiny["q2"], tmp_path_factory.mktemp("guardrails-env"))


@pytest.fixture(scope="module")
def expected(pairs, environ, tmp_path_factory) -> list[dict]:
    """`q2 score --tiny --threshold 0.5 --spans` on the pairs: each row's decision and unsupported spans."""
    want = q2_score_outcomes(pairs, environ, tmp_path_factory.mktemp("guardrails-cli"), THRESHOLD)
    # both outcomes, and failures with spans and without: the rows tell the validator's paths apart
    assert {w["decision"] for w in want} == {"consistent", "inconsistent"}, want
    failing = [w for w in want if w["decision"] == "inconsistent"]
    assert any(w["unsupported"] for w in failing) and any(not w["unsupported"] for w in failing), want
    return want


@pytest.fixture
def in_process(environ, monkeypatch):
    from q2_metric.runtime import cache

    set_in_process(monkeypatch, environ)
    quiet_guardrails()
    cache.reset()
    yield
    cache.reset()


def _check(guard, pairs, expected) -> None:
    for (response, knowledge), want in zip(pairs, expected):
        outcome = guard.validate(response, metadata={"knowledge": knowledge})
        assert outcome.validation_passed is (want["decision"] == "consistent"), (response, want)
        spans = guard.error_spans_in_output()
        if outcome.validation_passed:
            assert spans == []
            continue
        got = [(s.start, s.end) for s in spans]
        if want["unsupported"]:
            assert got == [(s, e) for s, e, _ in want["unsupported"]], (response, got, want)
            assert [response[s:e] for s, e in got] == [t for _, _, t in want["unsupported"]]
        else:  # no span below 1 (Q² fell back to end-to-end NLI): the whole response
            assert got == [(0, len(response))], (response, got)
        assert all(s.reason for s in spans)


def test_the_validator_in_process_passes_and_fails_as_q2_score_decides(in_process, pairs, expected):
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    guard = offline_guard(Q2Consistency(threshold=THRESHOLD, tiny=True, on_fail="noop"))
    _check(guard, pairs, expected)
    # the knowledge as a list of passages: joined by a space, as every front-end joins them
    response, knowledge = pairs[0]
    words = knowledge.split(" ")
    half = len(words) // 2
    outcome = guard.validate(
        response, metadata={"knowledge": [" ".join(words[:half]), " ".join(words[half:])]}
    )
    assert outcome.validation_passed is (expected[0]["decision"] == "consistent")
    # what docs/guardrails.md says: with on_fail="noop", validated_output still holds the blocked
    # answer; validation_passed is what says it was blocked
    blocked = next(p for p, w in zip(pairs, expected) if w["decision"] == "inconsistent")
    outcome = guard.validate(blocked[0], metadata={"knowledge": blocked[1]})
    assert outcome.validation_passed is False and outcome.validated_output == blocked[0]


def test_guard_parse_and_on_fail_exception(in_process, pairs, expected):
    from guardrails.errors import ValidationError

    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    good = next(p for p, w in zip(pairs, expected) if w["decision"] == "consistent")
    bad = next(p for p, w in zip(pairs, expected) if w["decision"] == "inconsistent")
    guard = offline_guard(Q2Consistency(threshold=THRESHOLD, tiny=True, on_fail="exception"))
    outcome = guard.parse(good[0], metadata={"knowledge": good[1]})
    assert outcome.validation_passed and outcome.validated_output == good[0]
    with pytest.raises(ValidationError, match="Q²"):
        guard.parse(bad[0], metadata={"knowledge": bad[1]})


def test_the_validator_fails_closed_on_what_q2_cannot_check(in_process, pairs):
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    guard = offline_guard(Q2Consistency(threshold=0.0, tiny=True, on_fail="noop"))
    response, knowledge = pairs[3]
    cases = (
        ({"knowledge": "\u200b"}, response),
        ({"knowledge": None}, response),
        ({"knowledge": knowledge}, "  "),
    )
    for metadata, value in cases:
        outcome = guard.validate(value, metadata=metadata)
        assert not outcome.validation_passed, (metadata, value)
        assert "Unverified" in outcome.validation_summaries[0].failure_reason
    with pytest.raises(ValueError, match="knowledge"):  # Guardrails AI's own check of the metadata
        guard.validate(response, metadata={})


def test_the_validator_against_the_service_passes_and_fails_as_q2_score_decides(in_process, pairs, expected):
    from q2_metric import Q2Scorer
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    with q2_service(Q2Scorer(tiny=True)) as url:
        guard = offline_guard(Q2Consistency(threshold=THRESHOLD, service_url=url, on_fail="noop"))
        _check(guard, pairs, expected)
    # a service that asks for a key: refused without it (a failure), answered with it
    response, knowledge = next(p for p, w in zip(pairs, expected) if w["decision"] == "consistent")
    with q2_service(Q2Scorer(tiny=True), api_key="s3cret") as url:
        refused = offline_guard(Q2Consistency(threshold=THRESHOLD, service_url=url, on_fail="noop"))
        outcome = refused.validate(response, metadata={"knowledge": knowledge})
        assert not outcome.validation_passed
        assert "HTTP 401" in outcome.validation_summaries[0].failure_reason
        keyed = offline_guard(
            Q2Consistency(threshold=THRESHOLD, service_url=url, api_key="s3cret", on_fail="noop")
        )
        assert keyed.validate(response, metadata={"knowledge": knowledge}).validation_passed


def test_the_validator_fails_closed_when_the_service_is_down_or_full(in_process, pairs):
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    response, knowledge = pairs[3]
    down = offline_guard(
        Q2Consistency(threshold=0.0, service_url=closed_port_url(), timeout=5, on_fail="noop")
    )
    outcome = down.validate(response, metadata={"knowledge": knowledge})
    assert not outcome.validation_passed
    assert "could not be reached" in outcome.validation_summaries[0].failure_reason
    with refusing_service(503) as url:
        full = offline_guard(Q2Consistency(threshold=0.0, service_url=url, on_fail="noop"))
        outcome = full.validate(response, metadata={"knowledge": knowledge})
        assert not outcome.validation_passed
        assert "HTTP 503" in outcome.validation_summaries[0].failure_reason


def test_q2_options_with_a_service_are_refused(in_process):
    from q2_metric.errors import Q2OptionError
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    with pytest.raises(Q2OptionError, match="service's own"):
        Q2Consistency(service_url="http://127.0.0.1:9", tiny=True)
    with pytest.raises(Q2OptionError, match="threshold"):
        Q2Consistency(threshold=2, tiny=True)


# A stand-in service that misbehaves on purpose (tests/support/serve.py), each way, and the words of
# the one sentence the failed validation carries; a consistent reply bent off the contract included.
BROKEN = {
    "not http": ("not http", None, "answered with something that is not HTTP"),
    "cut body": ("cut body", None, "cut its answer short"),
    "not utf-8": ("not utf-8", None, "answered with text that is not UTF-8"),
    "not json": ("not json", None, "answered with something that is not JSON"),
    "no results": ("wrong shape", b'{"results": "none"}', "off the /v1/score contract"),
    "a consistent score as text": (
        "wrong shape",
        b'{"results": [{"id": "0", "status": "scored", "score": "high", "verdict": "consistent"}]}',
        "item 0's score is 'high', not a number from 0 to 1",
    ),
    "spans as text": (
        "wrong shape",
        b'{"results": [{"id": "0", "status": "scored", "score": 0.1, "verdict": "inconsistent", "spans": "x"}]}',
        "item 0's spans are 'x', not a list of objects",
    ),
    "trickle": ("trickle", None, "did not answer within 1 s"),
    "stall": ("stall", None, "did not answer within 1 s"),
    "close": ("close", None, "closed the connection without answering"),
    "reset": ("reset", None, "broke the connection off"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_service_fails_the_validation_never_raises(case):
    """`Guard.validate(on_fail="noop")` returns a failed validation, one sentence, whatever the
    service answers; a reply trickling in is given up at the 1 s deadline."""
    import time

    from support.serve import misbehaving_service

    quiet_guardrails()
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    mode, body, words = BROKEN[case]
    with misbehaving_service(mode, **({"body": body} if body else {})) as url:
        guard = offline_guard(Q2Consistency(threshold=THRESHOLD, service_url=url, timeout=1, on_fail="noop"))
        start = time.monotonic()
        outcome = guard.validate("Bob Ross hosted the show.", metadata={"knowledge": "Bob Ross hosted it."})
        elapsed = time.monotonic() - start
    assert not outcome.validation_passed
    reason = outcome.validation_summaries[0].failure_reason
    assert reason.startswith("Unverified: The Q² service at ") and words in reason and "\n" not in reason, (
        reason
    )
    assert elapsed < 1 + 2, elapsed  # the deadline (a correctness bound, with a generous margin)
