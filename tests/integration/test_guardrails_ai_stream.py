"""Guardrails AI's own streaming runner (`Guard(...)(llm_api, stream=True)`, a generator of chunks as the
LLM) over `Q2Consistency(on_fail="fix")`, offline on the tiny models, in process and against the real
`q2 serve` app on a free 127.0.0.1 port (tests/support/serve.py): the runner lets out each sentence
Q²'s streaming check finds consistent, holds back the first that is not and everything after it,
and lets the rest out at the end only when the final result of the whole answer is consistent
(docs/streaming.md); the final result's verdict is the one `q2 score --threshold 0.5` (the
command line, the batch path) gives the whole answer. The per-sentence yardstick is `Q2Stream` in
process run on the whole answer at once (the sentences do not depend on the chunking). A service
that is down, refuses, misbehaves, stalls or closes the stream fails closed: nothing it did not
check is released, and the last outcome has not passed."""

from __future__ import annotations

import importlib.util
import time

import pytest
from support.guardrails import offline_guard, q2_score_outcomes, quiet_guardrails, sample_pairs
from support.harness import env, set_in_process
from support.serve import closed_port_url, misbehaving_service, q2_service, refusing_service

if importlib.util.find_spec("guardrails") is None:
    pytest.skip("Guardrails AI is not installed (make setup installs it)", allow_module_level=True)

THRESHOLD = 0.5
SIZE = 5  # characters per chunk


@pytest.fixture(scope="module")
def pairs() -> list[tuple[str, str]]:
    return sample_pairs(12)


@pytest.fixture(scope="module")
def environ(harness_tiny, tmp_path_factory):
    return env(harness_tiny["q2"], tmp_path_factory.mktemp("guardrails-stream-env"))


@pytest.fixture(scope="module")
def decisions(pairs, environ, tmp_path_factory) -> list[str]:
    """`q2 score --tiny --threshold 0.5` on the whole answers: the batch decision of each."""
    want = q2_score_outcomes(pairs, environ, tmp_path_factory.mktemp("guardrails-stream-cli"), THRESHOLD)
    return [w["decision"] for w in want]


@pytest.fixture
def in_process(environ, monkeypatch):
    from q2_metric.runtime import cache

    set_in_process(monkeypatch, environ)
    quiet_guardrails()
    cache.reset()
    yield
    cache.reset()


@pytest.fixture
def sentences(in_process, pairs) -> list[list[tuple[int, int, bool]]]:
    """Each answer's sentences ([start, end), consistent) from `Q2Stream` fed the whole answer at once."""
    from q2_metric.runtime.stream import Q2Stream

    out = []
    for response, knowledge in pairs:
        stream = Q2Stream(knowledge, threshold=THRESHOLD, tiny=True)
        stream.feed(response)
        stream.end()
        out.append([(r.sentence.start, r.sentence.end, r.consistent) for r in stream.sentences])
    return out


def released_by_the_rule(text: str, sents: list[tuple[int, int, bool]], final_ok: bool) -> str:
    """What the stream should let out (docs/streaming.md): each sentence completed mid-stream while
    it and every one before it is consistent; the rest (from the first that is not, or from the last
    sentence, which completes only at the end) when the final result is consistent, else nothing."""
    first_bad = next((start for start, _, ok in sents[:-1] if not ok), None)
    held = first_bad if first_bad is not None else (sents[-2][1] if len(sents) > 1 else 0)
    return text if final_ok else text[:held]


def stream(guard, response: str, knowledge: object, pause: float = 0.0, size: int = SIZE):
    """The answer through the guard's streaming runner, `size` characters a chunk: the released text,
    the outcomes, and the validation results the validator gave (from the guard's history)."""
    chunks = [response[i : i + size] for i in range(0, len(response), size)]

    def llm(*, messages=None, **kwargs):
        for n, chunk in enumerate(chunks):
            if n and pause:
                time.sleep(pause)
            yield chunk

    outcomes = list(
        guard(
            llm,
            messages=[{"role": "user", "content": "Tell me more."}],
            metadata={"knowledge": knowledge},
            stream=True,
            temperature=0,
        )
    )
    released = "".join(o.validated_output or "" for o in outcomes)
    logs = guard.history.last.iterations.last.validator_logs
    return released, outcomes, [log.validation_result for log in logs if log.validation_result is not None]


def _check(guard, pairs, decisions, sentences) -> None:
    assert set(decisions) == {"consistent", "inconsistent"}, decisions
    assert any(not ok for sents in sentences for *_, ok in sents[:-1]), "no sentence fails mid-answer"
    assert any(len(s) > 1 and all(ok for *_, ok in s[:-1]) for s in sentences), sentences
    for (response, knowledge), decision, sents in zip(pairs, decisions, sentences):
        # the last sentence starts before the last chunk: the runner then ends the stream (see docs)
        assert sents[-1][0] < (len(response) - 1) // SIZE * SIZE, response
        released, outcomes, results = stream(guard, response, knowledge)
        final = results[-1].metadata
        assert final["q2_final_verdict"] == decision, (response, final)
        final_ok = decision == "consistent"
        assert released == released_by_the_rule(response, sents, final_ok), (response, released, sents)
        if not final_ok or all(ok for *_, ok in sents):
            assert outcomes[-1].validation_passed is final_ok, response
        assert len(results) <= len(sents), (response, len(results))  # none while held back


def metric(url: str, name: str) -> float:
    """A counter's value from the service's /metrics (0 when absent)."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=30).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


def test_the_streaming_runner_in_process_releases_what_q2_checked(in_process, pairs, decisions, sentences):
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    guard = offline_guard(Q2Consistency(threshold=THRESHOLD, tiny=True, on_fail="fix"))
    _check(guard, pairs, decisions, sentences)


def test_the_streaming_runner_against_the_service(in_process, pairs, decisions, sentences):
    from q2_metric import Q2Scorer
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    with q2_service(Q2Scorer(tiny=True)) as url:
        guard = offline_guard(Q2Consistency(threshold=THRESHOLD, service_url=url, on_fail="fix"))
        _check(guard, pairs, decisions, sentences)
        # one stream per answer, each sentence scored once (the service's counters)
        assert metric(url, "q2_serve_streams_opened_total") == len(pairs)
        assert metric(url, "q2_serve_stream_sentences_total") == sum(len(s) for s in sentences)
        # the knowledge as a list of passages; no knowledge: every sentence unverified, nothing released
        response, knowledge = pairs[3]
        released, outcomes, _ = stream(guard, response, [knowledge[:40], knowledge[40:]])
        assert outcomes[-1].validation_passed is (decisions[3] == "consistent")
        released, outcomes, results = stream(guard, response, "   ")
        assert released == "" and outcomes[-1].validation_passed is False
        assert "Unverified: Not scored: empty knowledge." in results[0].error_message


def test_other_on_fail_actions_fail_every_chunk_of_a_stream(in_process, pairs):
    """Guardrails AI streams chunks out before the validator sees them except with on_fail="fix",
    and never asks about the text after the last complete sentence: Q² does not pass such a stream."""
    from guardrails.errors import ValidationError

    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    response, knowledge = pairs[3]
    noop = offline_guard(Q2Consistency(threshold=0.0, tiny=True, on_fail="noop"))
    _, outcomes, results = stream(noop, response, knowledge)
    assert all(o.validation_passed is False for o in outcomes)
    assert 'on_fail="fix"' in results[0].error_message
    raising = offline_guard(Q2Consistency(threshold=0.0, tiny=True, on_fail="exception"))
    with pytest.raises(ValidationError, match='on_fail="fix"'):
        stream(raising, response, knowledge)


def _fails_closed(url: str, words: str, timeout: float = 1) -> float:
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    guard = offline_guard(Q2Consistency(threshold=0.0, service_url=url, timeout=timeout, on_fail="fix"))
    start = time.monotonic()
    released, outcomes, results = stream(
        guard, "Bob Ross hosted the show. It ran for years.", "Bob Ross hosted it."
    )
    elapsed = time.monotonic() - start
    assert released == "", released
    assert outcomes[-1].validation_passed is False
    message = results[0].error_message
    assert message.startswith("Unverified: The Q² service at ") and words in message and "\n" not in message
    return elapsed


BROKEN = {
    "not http": ("not http", None, "answered with something that is not HTTP"),
    "cut body": ("cut body", None, "cut its answer short"),
    "not json": ("not json", None, "answered with something that is not JSON"),
    "no stream id": ("wrong shape", b'{"stream": 7}', "its stream is 7, not an id"),
    "stall": ("stall", None, "did not answer within 1 s"),
    "trickle": ("trickle", None, "did not answer within 1 s"),
    "reset": ("reset", None, "broke the connection off"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_service_releases_nothing(case):
    quiet_guardrails()
    mode, body, words = BROKEN[case]
    with misbehaving_service(mode, **({"body": body} if body else {})) as url:
        elapsed = _fails_closed(url, words)
    assert elapsed < 1 + 2, elapsed  # the deadline (a correctness bound, with a generous margin)


def test_a_service_down_or_full_releases_nothing():
    quiet_guardrails()
    _fails_closed(closed_port_url(), "could not be reached", timeout=5)
    with refusing_service(503) as url:
        _fails_closed(url, "HTTP 503")


def test_a_stream_the_service_closes_withholds_the_rest(in_process, pairs, sentences):
    """A stream quiet past the service's idle timeout is closed there: the next chunk is refused
    (410), and nothing from there on is released."""
    from q2_metric import Q2Scorer
    from q2_metric.guardrails.guardrails_ai import Q2Consistency

    n = next(i for i, s in enumerate(sentences) if len(s) > 1 and s[0][2])  # a first sentence that passes
    response, knowledge = pairs[n]
    first_end = sentences[n][0][1]
    with q2_service(Q2Scorer(tiny=True), stream_idle_timeout=0.5) as url:
        guard = offline_guard(Q2Consistency(threshold=THRESHOLD, service_url=url, on_fail="fix"))
        released, outcomes, results = stream(guard, response, knowledge, pause=0.8, size=first_end + 2)
    assert released == response[:first_end], released
    assert outcomes[-1].validation_passed is False
    assert "HTTP 410" in results[-1].error_message or "HTTP 404" in results[-1].error_message, results[-1]


def test_a_last_chunk_that_completes_a_sentence_never_lets_the_rest_out_unchecked():
    """Guardrails AI's runner asks the validator about the end of a stream of plain strings only when
    the last chunk completed no sentence: when it did, the text after that sentence is not checked,
    and it is not let out either. The next stream gives the one left open up (cancelled)."""
    from q2_metric.guardrails.guardrails_ai import Q2Consistency
    from q2_metric.testing.scripted import scripted_scorer

    quiet_guardrails()
    same = "Bob Ross hosted the show."
    with q2_service(scripted_scorer()) as url:
        guard = offline_guard(Q2Consistency(threshold=THRESHOLD, service_url=url, on_fail="fix"))
        released, _, results = stream(guard, same + " It ran on PBS.", same, size=len(same))
        assert released == same and "q2_final_verdict" not in results[-1].metadata, released
        assert metric(url, "q2_serve_streams_closed_total") == 0
        released, _, _ = stream(guard, same, same)  # ends in the middle of its only sentence
        assert released == same
        assert metric(url, "q2_serve_streams_closed_total") == 2  # the one left open, cancelled; this one
