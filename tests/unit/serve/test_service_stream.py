"""The streaming check's sessions below their routes (`q2_metric.serve.service`, `app`, `protocol`),
in process over the scripted scorer: bad input is one 422 sentence naming the field before any
scoring, closed streams answer 410 with their sentence and unknown ones 404, each limit (open
streams, characters, idle time, the queue) and each close reason counted, and the final entry is
`/v1/score`'s entry of the whole answer. Real HTTP and real models: tests/integration/test_serve_stream.py."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("prometheus_client")
from support.serve import app_client, ready

KNOWLEDGE = "Bob Ross hosted the show. He painted happy trees."
ANSWER = "Bob Ross hosted the show. He painted trees! Did he paint lakes? Yes"


def metric(client, name, **labels):
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def opened(client, **body):
    r = client.post("/v1/score/stream", json={"knowledge": KNOWLEDGE, **body})
    assert r.status_code == 200, r.text
    return r.json()["stream"]


def test_stream_sentences_then_the_batch_entry_of_the_whole_answer():
    with app_client() as c:
        ready(c)
        sid = opened(c, id="a1", threshold=0.3)
        got = []
        for chunk in ("Bob Ross hosted the sh", "ow. He painted trees! Did", " he paint lakes?"):
            r = c.post(f"/v1/score/stream/{sid}", json={"text": chunk})
            assert r.status_code == 200, r.text
            got += r.json()["sentences"]
        end = c.post(f"/v1/score/stream/{sid}/end", json={"text": " Yes"}).json()
        got += end["sentences"]
        batch = c.post(
            "/v1/score", json={"response": ANSWER, "knowledge": KNOWLEDGE, "id": "a1", "threshold": 0.3}
        )
        assert end["final"] == batch.json()["results"][0] and end["signature"] == batch.json()["signature"]
        assert [(s["index"], s["text"]) for s in got] == [
            (0, "Bob Ross hosted the show."),
            (1, "He painted trees!"),
            (2, "Did he paint lakes?"),
            (3, "Yes"),
        ]
        for s in got:
            assert ANSWER[s["start"] : s["end"]] == s["text"]
            for span in s["spans"]:
                assert ANSWER[span["start"] : span["end"]] == span["text"]
                assert s["start"] <= span["start"] and span["end"] <= s["end"]
        assert metric(c, "q2_serve_stream_sentences_total") == 4
        assert metric(c, "q2_serve_streams_closed_total", reason="end") == 1
        assert metric(c, "q2_serve_streams_open") == 0
        r = c.post(f"/v1/score/stream/{sid}", json={"text": "more"})
        assert (r.status_code, r.json()) == (410, {"error": "The stream has ended."})
        assert c.post("/v1/score/stream/unknown", json={"text": "x"}).status_code == 404
        paths = c.get("/openapi.json").json()["paths"]
        assert {"/v1/score/stream", "/v1/score/stream/{stream}", "/v1/score/stream/{stream}/end"} <= set(
            paths
        )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"knowledge": 7}, "field 'knowledge' must be a string, got int"),
        ({}, "field 'knowledge' must be a string, got None"),
        ({"knowledge": "k", "threshold": 2}, "threshold"),
        ({"knowledge": "k", "spans": "yes"}, "Field 'spans'"),
        (["k"], "JSON object"),
    ],
)
def test_a_bad_open_is_one_422_sentence(body, words):
    with app_client() as c:
        ready(c)
        r = c.post("/v1/score/stream", json=body)
        assert r.status_code == 422 and words in r.json()["error"] and "\n" not in r.json()["error"]
        assert metric(c, "q2_serve_streams_opened_total") == 0


def test_a_bad_chunk_is_one_422_sentence_and_the_stream_goes_on():
    with app_client() as c:
        ready(c)
        sid = opened(c)
        for body in ({"text": 5}, {}, {"text": None}, "text"):
            r = c.post(f"/v1/score/stream/{sid}", json=body)
            assert r.status_code == 422 and (
                "Field 'text'" in r.json()["error"] or "object" in r.json()["error"]
            )
        r = c.post(f"/v1/score/stream/{sid}/end", json={})  # the end's text is optional
        assert r.status_code == 200 and r.json()["final"]["status"] == "empty"


def test_limits_open_streams_characters_and_cancel_are_counted():
    with app_client(max_streams=2, max_stream_chars=30) as c:
        ready(c)
        first, second = opened(c), opened(c)
        r = c.post("/v1/score/stream", json={"knowledge": "k"})
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        r = c.post(f"/v1/score/stream/{first}", json={"text": "x" * 31})
        assert r.status_code == 413 and "30" in r.json()["error"]
        r = c.post(f"/v1/score/stream/{first}", json={"text": "x"})
        assert r.status_code == 410 and "31 characters" in r.json()["error"]
        assert c.delete(f"/v1/score/stream/{second}").json() == {"stream": second, "closed": "cancelled"}
        assert c.delete(f"/v1/score/stream/{second}").status_code == 410
        assert metric(c, "q2_serve_streams_closed_total", reason="limit") == 1
        assert metric(c, "q2_serve_streams_closed_total", reason="cancelled") == 1
        assert metric(c, "q2_serve_streams_open") == 0
        opened(c)  # room again


def test_a_quiet_stream_is_closed_with_a_sentence():
    with app_client(stream_idle_timeout=0.2) as c:
        ready(c)
        sid = opened(c)
        deadline = time.time() + 30
        while metric(c, "q2_serve_streams_closed_total", reason="idle") < 1:
            assert time.time() < deadline
            time.sleep(0.05)
        r = c.post(f"/v1/score/stream/{sid}", json={"text": "Hi."})
        assert r.status_code == 410 and "idle timeout" in r.json()["error"]


def test_a_chunk_refused_by_the_full_queue_leaves_the_stream_as_it_was():
    with app_client(max_queue=2) as c:
        ready(c)
        sid = opened(c)
        r = c.post(f"/v1/score/stream/{sid}", json={"text": ANSWER})  # three sentences: over the queue
        assert r.status_code == 429
        assert metric(c, "q2_serve_stream_sentences_total") == 0
        got = []
        for chunk in ("Bob Ross hosted the show. He painted trees!", " Did he paint lakes? Yes"):
            got += c.post(f"/v1/score/stream/{sid}", json={"text": chunk}).json()["sentences"]
        end = c.post(f"/v1/score/stream/{sid}/end", json={}).json()
        got += end["sentences"]
        assert [s["index"] for s in got] == [0, 1, 2, 3] and [s["text"] for s in got][-1] == "Yes"
        batch = c.post("/v1/score", json={"response": ANSWER, "knowledge": KNOWLEDGE}).json()
        assert end["final"] == batch["results"][0]
