"""The Q² service's client (`q2_metric.guardrails.client`) against a real socket: the real `q2 serve`
app (tests/support/serve.py, uvicorn in a thread) over scripted components, no model. It sends
the items in one request and gives back one result per item in order, a bad item's error among
them; whatever keeps the service from answering is one `Q2ServiceError` sentence, never a verdict:
against a stand-in that misbehaves on purpose (tests/support/serve.py), any reply that is not the
contract, however broken, and a reply that comes too slowly (the timeout is a deadline for the
whole request)."""

from __future__ import annotations

import json
import time

import pytest
from support.serve import closed_port_url, misbehaving_service, q2_service, refusing_service

from q2_metric.errors import Q2OptionError
from q2_metric.guardrails.client import Q2Service, Q2ServiceError, is_consistent
from q2_metric.testing.scripted import scripted_scorer

SAME = "Bob Ross hosted the show."


def test_items_go_in_one_request_and_come_back_in_order():
    with q2_service(scripted_scorer()) as url:
        results = Q2Service(url).ask(
            [
                {"response": SAME, "knowledge": SAME, "id": "a"},
                {"response": 7, "knowledge": SAME},
                {"response": "  ", "knowledge": SAME},
            ],
            threshold=0.5,
        )
    assert [r["id"] for r in results] == ["a", "1", "2"]
    assert [r["status"] for r in results] == ["scored", "bad", "empty"]
    assert results[1]["error"] and "response" in results[1]["error"]
    assert [r["verdict"] != "consistent" for r in results[1:]] == [True, True]
    assert not is_consistent(results[1]) and not is_consistent(results[2])


def test_a_key_is_sent_as_a_bearer_token():
    with q2_service(scripted_scorer(), api_key="k") as url:
        with pytest.raises(Q2ServiceError, match="HTTP 401"):
            Q2Service(url).ask([{"response": SAME, "knowledge": SAME}])
        assert len(Q2Service(url, api_key="k").ask([{"response": SAME, "knowledge": SAME}])) == 1


def test_no_answer_is_one_sentence_never_a_verdict():
    with pytest.raises(Q2ServiceError, match="could not be reached") as err:
        Q2Service(closed_port_url(), timeout=5).ask([{"response": SAME, "knowledge": SAME}])
    assert "\n" not in str(err.value)
    full = r"HTTP 429 \(The queue is full \(1024 items waiting\); try again later\.\), retry after 1 s"
    with refusing_service(429) as url, pytest.raises(Q2ServiceError, match=full):
        Q2Service(url).ask([{"response": SAME, "knowledge": SAME}])


def _one_sentence(message: str, url: str) -> None:
    """A user's sentence: one line naming the service, no traceback, no exception's class."""
    assert url in message and message.endswith(".") and "\n" not in message, message
    assert "Traceback" not in message and "Error:" not in message and "b'" not in message, message


# Each reply that is not the contract, however broken, and the words of its one sentence.
BROKEN = {
    "not http": "answered with something that is not HTTP",
    "cut body": "cut its answer short: 40 of 162 bytes",
    "not utf-8": "answered with text that is not UTF-8",
    "not json": "answered with something that is not JSON",
    "wrong shape": "answered off the /v1/score contract: its results are not a list",
    "close": "closed the connection without answering",
    "reset": "broke the connection off",
}


@pytest.mark.parametrize("mode", list(BROKEN))
def test_a_broken_reply_is_one_sentence_never_an_exception_of_its_own(mode):
    with misbehaving_service(mode) as url, pytest.raises(Q2ServiceError) as err:
        Q2Service(url, timeout=10).ask([{"response": SAME, "knowledge": SAME}])
    assert BROKEN[mode] in str(err.value)
    _one_sentence(str(err.value), url)


# JSON of the wrong shape: each is refused, never read as a verdict (a consistent one least of all).
SHAPES = {
    "a list": (b"[]", "its reply is not an object"),
    "no result": (b'{"results": []}', "0 results for 1 item"),
    "two results": (b'{"results": [{}, {}]}', "2 results for 1 item"),
    "a result not an object": (b'{"results": ["consistent"]}', "item 0 is not an object"),
    "no verdict": (
        b'{"results": [{"id": "a", "status": "scored"}]}',
        "item 0's verdict is None, not one of consistent, inconsistent, unverified",
    ),
    "an unknown verdict": (
        b'{"results": [{"id": "a", "status": "scored", "score": 0.9, "verdict": "fine"}]}',
        "item 0's verdict is 'fine', not one of consistent, inconsistent, unverified",
    ),
    "no status": (
        b'{"results": [{"id": "a", "score": 0.9, "verdict": "consistent"}]}',
        "item 0's status is None, not text",
    ),
    "a score as text": (
        b'{"results": [{"id": "a", "status": "scored", "score": "high", "verdict": "consistent"}]}',
        "item 0's score is 'high', not a number from 0 to 1",
    ),
    "a score of true": (
        b'{"results": [{"id": "a", "status": "scored", "score": true, "verdict": "consistent"}]}',
        "item 0's score is True, not a number from 0 to 1",
    ),
    "consistent without a score": (
        b'{"results": [{"id": "a", "status": "scored", "score": null, "verdict": "consistent"}]}',
        "item 0 is consistent without a score",
    ),
    "consistent with NaN": (
        b'{"results": [{"id": "a", "status": "scored", "score": NaN, "verdict": "consistent"}]}',
        "item 0's score is nan, not a number from 0 to 1",
    ),
    "consistent but not scored": (
        b'{"results": [{"id": "a", "status": "error", "score": 0.9, "verdict": "consistent"}]}',
        "item 0 is consistent without being scored",
    ),
    "spans as text": (
        b'{"results": [{"id": "a", "status": "scored", "score": 0.1, "verdict": "inconsistent", "spans": "x"}]}',
        "item 0's spans are 'x', not a list of objects",
    ),
    "a reason as a number": (
        b'{"results": [{"id": "a", "status": "scored", "score": 0.1, "verdict": "inconsistent", "reason": 3}]}',
        "item 0's reason is 3, not text",
    ),
    "another item's id": (
        b'{"results": [{"id": "z", "status": "scored", "score": 0.9, "verdict": "consistent"}]}',
        "item 0's id is 'z', not 'a'",
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_json_of_the_wrong_shape_is_refused(shape):
    body, words = SHAPES[shape]
    with misbehaving_service("wrong shape", body=body) as url, pytest.raises(Q2ServiceError) as err:
        Q2Service(url, timeout=10).ask([{"response": SAME, "knowledge": SAME, "id": "a"}])
    assert f"answered off the /v1/score contract: {words}." in str(err.value)
    _one_sentence(str(err.value), url)


@pytest.mark.parametrize("mode", ["trickle", "stall"])
def test_the_timeout_is_a_deadline_for_the_whole_request(mode):
    """A reply trickling one byte every 0.1 s (each read well within 1 s; the whole reply ~16 s) or
    no reply at all: the 1 s client gives up after 1 s, not after the trickle."""
    with misbehaving_service(mode, step=0.1) as url:
        start = time.monotonic()
        with pytest.raises(Q2ServiceError) as err:
            Q2Service(url, timeout=1).ask([{"response": SAME, "knowledge": SAME}])
        elapsed = time.monotonic() - start
    assert "did not answer within 1 s" in str(err.value)
    _one_sentence(str(err.value), url)
    assert 0.9 < elapsed < 1 + 2, elapsed  # a correctness bound (the deadline), with a generous margin


def test_the_deadline_holds_while_sending():
    """A service that takes the connection and never reads: a request too large for the sockets'
    buffers waits to be sent, and the 1 s client gives up after 1 s."""
    with misbehaving_service("deaf") as url:
        start = time.monotonic()
        with pytest.raises(Q2ServiceError, match="did not answer within 1 s"):
            Q2Service(url, timeout=1).ask([{"response": SAME, "knowledge": "Bob Ross painted. " * 2_000_000}])
        elapsed = time.monotonic() - start
    assert 0.9 < elapsed < 1 + 2, elapsed


def test_a_refused_connection_is_one_sentence():
    url = closed_port_url()
    with pytest.raises(Q2ServiceError, match="could not be reached") as err:
        Q2Service(url, timeout=5).ask([{"response": SAME, "knowledge": SAME}])
    _one_sentence(str(err.value), url)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "30", True])
def test_a_timeout_that_is_no_deadline_is_refused(timeout):
    with pytest.raises(Q2OptionError, match="timeout"):
        Q2Service("http://127.0.0.1:9", timeout=timeout)


@pytest.mark.parametrize(
    "url", ["127.0.0.1:8000", "ftp://127.0.0.1:8000", "http://:8000", "http://[::1", "http://h:99999"]
)
def test_a_url_that_is_no_address_is_refused(url):
    with pytest.raises(Q2OptionError, match="url"):
        Q2Service(url)


def test_is_consistent_needs_the_word_and_a_score():
    assert is_consistent({"status": "scored", "verdict": "consistent"})
    assert not is_consistent({"status": "bad", "verdict": "consistent"})
    assert not is_consistent({"status": "scored", "verdict": "Consistent"})
    assert not is_consistent(json.loads("{}"))


# -- the streaming check (POST /v1/score/stream, its chunks, its end, DELETE) ---------------------------

ANSWER = "Bob Ross hosted the show. It ran for years. It aired on PBS."


def test_a_stream_gives_each_sentence_once_and_the_batch_result_at_the_end():
    with q2_service(scripted_scorer()) as url:
        service = Q2Service(url)
        batch = service.ask([{"response": ANSWER, "knowledge": SAME}], threshold=0.5)[0]
        stream = service.open_stream(SAME, threshold=0.5)
        got = []
        for n in range(0, len(ANSWER), 7):
            got += stream.feed(ANSWER[n : n + 7])
        last, final = stream.end()
        got += last
    texts = [ANSWER[s["start"] : s["end"]] for s in got]
    assert (
        texts
        == [s["text"] for s in got]
        == ["Bob Ross hosted the show.", "It ran for years.", "It aired on PBS."]
    )
    assert len(last) == 1  # the last sentence completes only at the end
    for key in ("status", "score", "verdict", "reason", "spans"):
        assert final[key] == batch[key], key
    with pytest.raises(Q2ServiceError, match="is closed"):
        stream.feed("More.")


def test_a_cancelled_stream_is_gone_on_the_service():
    from q2_metric.guardrails.client import Q2ServiceStream

    with q2_service(scripted_scorer()) as url:
        stream = Q2Service(url).open_stream(SAME)
        stream.feed("Bob Ross hosted it. ")
        stream.cancel()
        stream.cancel()  # once closed, nothing to do
        again = Q2ServiceStream(Q2Service(url), stream.id)
        with pytest.raises(Q2ServiceError, match=r"refused the request: HTTP (404|410)") as err:
            again.feed("It ran.")
        _one_sentence(str(err.value), url)


@pytest.mark.parametrize(
    ("body", "step", "words"),
    [
        (b'{"stream": 7}', "open", "off the /v1/score/stream contract: its stream is 7, not an id"),
        (b'{"stream": "s1", "sentences": "none"}', "feed", "its sentences are not a list"),
        (
            b'{"stream": "s1", "sentences": [{"status": "scored", "score": "high", "verdict": "consistent"}]}',
            "feed",
            "sentence 0's score is 'high', not a number from 0 to 1",
        ),
        (b'{"stream": "s1", "sentences": []}', "end", "its final result is not an object"),
        (
            b'{"stream": "s1", "sentences": [], "final": {"status": "bad", "verdict": "consistent"}}',
            "end",
            "its final result is consistent without being scored",
        ),
    ],
)
def test_a_stream_reply_off_the_contract_is_one_sentence(body, step, words):
    with misbehaving_service("wrong shape", body=body) as url:
        service = Q2Service(url, timeout=5)
        with pytest.raises(Q2ServiceError) as err:
            stream = service.open_stream(SAME)
            if step != "open":
                stream.feed("Bob Ross hosted it. It ran.") if step == "feed" else stream.end(
                    "Bob Ross hosted it."
                )
        assert words in str(err.value), str(err.value)
        _one_sentence(str(err.value), url)


@pytest.mark.parametrize("mode", ["stall", "trickle"])
def test_each_stream_request_has_the_deadline(mode):
    with misbehaving_service(mode) as url:
        start = time.monotonic()
        with pytest.raises(Q2ServiceError, match="did not answer within 1 s"):
            Q2Service(url, timeout=1).open_stream(SAME)
        assert time.monotonic() - start < 1 + 2  # (a correctness bound, with a generous margin)
