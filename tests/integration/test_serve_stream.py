"""The streaming check end to end: a real `q2 serve` (a subprocess, uvicorn) on the tiny models, a
real HTTP client (httpx) in several threads. Expected values come from the batch path of the same
server (`POST /v1/score` on the whole answer), from a sentence count written here with a regular
expression of the documented rule, and from the requests as written (statuses, counts)."""

from __future__ import annotations

import csv
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from support.cli import tiny_flags
from support.data import DATA
from support.serve import q2_serve

pytest.importorskip("prometheus_client")

BEGIN_ROWS = 24  # the BEGIN sample: the first rows of BEGIN's dev file (data/begin)
# a sentence ends after terminators and closers followed by whitespace and a further character
_END = re.compile("[.!?]+[\"')\\]}\u00bb\u201d\u2019]*(?=\\s+\\S)")


def sentence_count(text: str) -> int:
    ends = [m.end() for m in _END.finditer(text)]
    return len(ends) + (1 if text[ends[-1] if ends else 0 :].strip() else 0)


def begin_rows() -> list[dict]:
    with open(DATA / "begin" / "v1" / "dev_05_24_21.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [{"response": r["response"], "knowledge": r["evidence"]} for r in rows[:BEGIN_ROWS]]


@pytest.fixture(scope="module")
def server(tiny_models, tmp_path_factory):
    flags = tiny_flags(tiny_models, "--stream-idle-timeout", "3")
    with q2_serve(flags, tmp_path_factory.mktemp("serve-stream")) as s:
        yield s


def stream(client: httpx.Client, url: str, answer: str, knowledge: str, seed: int, ident: str) -> dict:
    """One stream: open, the answer in chunks cut at seeded random places, end; what came back."""
    rng = random.Random(seed)
    r = client.post(url + "/v1/score/stream", json={"knowledge": knowledge, "id": ident})
    assert r.status_code == 200, r.text
    sid = r.json()["stream"]
    cuts = sorted(rng.sample(range(1, len(answer)), min(rng.randint(0, 8), max(len(answer) - 1, 0))))
    chunks = [answer[a:b] for a, b in zip([0, *cuts], [*cuts, len(answer)])]
    last = chunks.pop() if chunks and rng.random() < 0.5 else ""  # sometimes sent with the end
    sentences = []
    for chunk in chunks:
        r = client.post(f"{url}/v1/score/stream/{sid}", json={"text": chunk})
        assert r.status_code == 200, r.text
        sentences += r.json()["sentences"]
    r = client.post(f"{url}/v1/score/stream/{sid}/end", json={"text": last} if last else {})
    assert r.status_code == 200, r.text
    end = r.json()
    return {"sentences": sentences + end["sentences"], "final": end["final"], "signature": end["signature"]}


def test_final_equals_the_batch_result_on_every_row(server, rows):
    pairs = [{"response": r["response"], "knowledge": r["knowledge"]} for r in rows] + begin_rows()
    pairs.append(
        {"response": rows[0]["response"] + " " + rows[1]["response"], "knowledge": rows[0]["knowledge"]}
    )
    before = server.metric("q2_serve_stream_sentences_total")

    def one(n: int) -> tuple[dict, dict]:
        p = pairs[n]
        with httpx.Client(timeout=300) as client:
            got = stream(client, server.url, p["response"], p["knowledge"], seed=n, ident=f"r{n}")
            batch = client.post(server.url + "/v1/score", json={**p, "id": f"r{n}"}).json()
        return got, batch

    with ThreadPoolExecutor(6) as pool:  # concurrent streams of mixed lengths
        done = list(pool.map(one, range(len(pairs))))
    total = 0
    for p, (got, batch) in zip(pairs, done):
        assert got["final"] == batch["results"][0], p  # every field, the spans and the reason included
        assert got["signature"] == batch["signature"]
        answer = p["response"]
        assert len(got["sentences"]) == sentence_count(answer), answer
        assert [s["index"] for s in got["sentences"]] == list(range(len(got["sentences"])))
        for s in got["sentences"]:
            assert answer[s["start"] : s["end"]] == s["text"] and s["verdict"] in (
                "consistent",
                "inconsistent",
                "unverified",
            )
            for span in s["spans"]:
                assert answer[span["start"] : span["end"]] == span["text"]
                assert s["start"] <= span["start"] and span["end"] <= s["end"]
        total += len(got["sentences"])
    assert {e["final"]["score"] for e, _ in done} != {None} and len(
        {e["final"]["score"] for e, _ in done}
    ) > 1
    # each sentence scored once: the server's counter is the number of sentences
    assert server.metric("q2_serve_stream_sentences_total") - before == total
    assert server.metric("q2_serve_streams_open") == 0


def test_idle_and_cancelled_streams_are_closed_and_counted(server, rows):
    idle_before = server.metric("q2_serve_streams_closed_total", reason="idle")
    gone_before = server.metric("q2_serve_streams_closed_total", reason="cancelled")
    with httpx.Client(timeout=120) as client:
        quiet = client.post(server.url + "/v1/score/stream", json={"knowledge": rows[0]["knowledge"]}).json()[
            "stream"
        ]
        client.post(f"{server.url}/v1/score/stream/{quiet}", json={"text": "Half a sent"})
        gone = client.post(server.url + "/v1/score/stream", json={"knowledge": rows[1]["knowledge"]}).json()[
            "stream"
        ]
        assert client.delete(f"{server.url}/v1/score/stream/{gone}").status_code == 200
        r = client.post(f"{server.url}/v1/score/stream/{gone}", json={"text": "x"})
        assert r.status_code == 410 and "cancelled" in r.json()["error"]
        deadline = time.time() + 60
        while server.metric("q2_serve_streams_closed_total", reason="idle") == idle_before:
            assert time.time() < deadline, "the quiet stream was not closed"
            time.sleep(0.25)
        r = client.post(f"{server.url}/v1/score/stream/{quiet}/end", json={"text": "ence."})
        assert r.status_code == 410 and "idle timeout" in r.json()["error"]
    assert server.metric("q2_serve_streams_closed_total", reason="cancelled") == gone_before + 1
    assert server.metric("q2_serve_streams_open") == 0


def test_memory_stays_flat_over_1000_streams(server, rows):
    short = [(r["response"].split(". ")[0][:120], r["knowledge"]) for r in rows]
    lock = threading.Lock()
    rss = []

    def one(n: int) -> None:
        answer, knowledge = short[n % len(short)]
        with httpx.Client(timeout=300) as client:
            stream(client, server.url, answer, knowledge, seed=n, ident=str(n))
        if n % 100 == 99:
            with lock:
                rss.append(server.rss_mb())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(1000)))
    assert server.metric("q2_serve_streams_open") == 0  # the open-stream table is empty again
    print(f"server RSS (MB) after each 100 of 1,000 streams: {[round(x) for x in rss]}")
    assert max(rss[2:]) - rss[1] < 150, rss  # after warm-up, no growth with the number of streams
