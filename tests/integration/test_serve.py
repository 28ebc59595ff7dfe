"""`q2 serve` end to end: a real uvicorn server on a free 127.0.0.1 port (a subprocess), a real
HTTP client (httpx). Expected values come from the requests as written (statuses, counts, codes)
and from `q2 score` on the same items (the scores)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import time

import httpx
import pytest
from support.cli import cli, tiny_flags
from support.serve import q2_serve

pytest.importorskip("prometheus_client")


@pytest.fixture(scope="module")
def pairs(rows):
    return [{"response": r["response"], "knowledge": r["knowledge"]} for r in rows[:8]]


@pytest.fixture(scope="module")
def server(tiny_models, tmp_path_factory):
    with q2_serve(tiny_flags(tiny_models), tmp_path_factory.mktemp("serve")) as s:
        yield s


def test_bad_items_each_get_one_error_and_the_rest_are_scored(server, pairs, tiny_models, tmp_path):
    items = [
        pairs[0],
        {"response": 7, "knowledge": "k"},
        pairs[1],
        "not an item",
        {"response": "r"},
        pairs[2],
    ]
    r = httpx.post(server.url + "/v1/score", json={"items": items}, timeout=120)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [e["status"] for e in out["results"]] == ["scored", "bad", "scored", "bad", "bad", "scored"]
    assert [e["id"] for e in out["results"]] == ["0", "1", "2", "3", "4", "5"]
    for n, e in enumerate(out["results"]):
        if e["status"] == "bad":
            assert e["error"].startswith(f"item {n}: ") and "\n" not in e["error"], e
            assert e["verdict"] == "unverified" and e["score"] is None  # fail closed
    assert "response" in out["results"][1]["error"] and "int" in out["results"][1]["error"]
    assert "knowledge" in out["results"][4]["error"]
    # the scores are q2 score's on the same items
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in (pairs[0], pairs[1], pairs[2])))
    done = cli(
        "score", str(source), "-o", str(tmp_path / "out.jsonl"), "--no-cache", *tiny_flags(tiny_models)
    )
    assert done.returncode == 0, done.stderr
    expected = [json.loads(line)["q2"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [out["results"][i]["score"] for i in (0, 2, 5)] == expected
    assert out["signature"].startswith("q2:")


def test_one_item_verdicts_spans_and_info(server, pairs):
    r = httpx.post(server.url + "/v1/score", json={**pairs[3], "id": "a", "threshold": 0.0}, timeout=120)
    e = r.json()["results"][0]
    assert (e["id"], e["status"]) == ("a", "scored")
    assert e["verdict"] == ("consistent" if e["score"] > 0.0 else "inconsistent")
    for span in e["spans"]:
        assert pairs[3]["response"][span["start"] : span["end"]] == span["text"]
    # Server-Timing: the engine call this request waited for, within the request's own time
    timing = dict(part.strip().split(";dur=") for part in r.headers["server-timing"].split(","))
    assert 0 < float(timing["engine"]) <= float(timing["total"])
    info = httpx.get(server.url + "/v1/info", timeout=30).json()
    assert info["batch_invariant"] is True and info["signature"] == r.json()["signature"]
    assert httpx.get(server.url + "/health").status_code == 200
    assert "/v1/score" in httpx.get(server.url + "/openapi.json").json()["paths"]
    assert server.metric("q2_serve_requests_total", code="200") >= 1


def test_limits_413_and_422(tiny_models, tmp_path, pairs):
    with q2_serve(tiny_flags(tiny_models, "--max-items", "2", "--max-body-bytes", "2000"), tmp_path) as s:
        many = httpx.post(s.url + "/v1/score", json={"items": pairs[:3]}, timeout=60)
        assert many.status_code == 413 and "at most 2" in many.json()["error"]
        big = httpx.post(s.url + "/v1/score", json={"response": "x" * 5000, "knowledge": "k"}, timeout=60)
        assert big.status_code == 413
        bad = httpx.post(s.url + "/v1/score", content=b"{not json", timeout=60)
        assert bad.status_code == 422 and "\n" not in bad.json()["error"]
        thr = httpx.post(s.url + "/v1/score", json={**pairs[0], "threshold": 2}, timeout=60)
        assert thr.status_code == 422 and "threshold" in thr.json()["error"]


def test_the_api_key(tiny_models, tmp_path, pairs):
    with q2_serve(tiny_flags(tiny_models), tmp_path, env={"Q2_SERVE_API_KEY": "s3cret"}) as s:
        assert httpx.post(s.url + "/v1/score", json=pairs[0], timeout=60).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.post(s.url + "/v1/score", json=pairs[0], headers=wrong, timeout=60).status_code == 401
        right = {"Authorization": "Bearer s3cret"}
        r = httpx.post(s.url + "/v1/score", json=pairs[0], headers=right, timeout=60)
        assert r.status_code == 200 and r.json()["results"][0]["status"] == "scored"
        assert httpx.get(s.url + "/v1/info", timeout=30).status_code == 401
        assert httpx.get(s.url + "/health", timeout=30).status_code == 200


def _many(pairs: list[dict], n: int) -> list[dict]:
    """`n` distinct items (the engine de-duplicates repeated ones): many engine calls of work."""
    return [
        {**pairs[i % len(pairs)], "response": f"{pairs[i % len(pairs)]['response']} Number {i}."}
        for i in range(n)
    ]


def test_a_disconnect_drops_its_items(tiny_models, tmp_path, pairs):
    # 600 items in engine calls of 64: the client leaves after 0.5 s, long before the last call
    with q2_serve(tiny_flags(tiny_models, "--max-items", "1000"), tmp_path) as s:
        with pytest.raises(httpx.ReadTimeout):
            body = {"items": _many(pairs, 600), "spans": False}
            httpx.post(s.url + "/v1/score", json=body, timeout=httpx.Timeout(60, read=0.5))
        deadline = time.time() + 60
        while s.metric("q2_serve_queue_depth") and time.time() < deadline:
            time.sleep(0.2)
        assert s.metric("q2_serve_items_total", outcome="dropped") == 600
        assert s.metric("q2_serve_batch_size_sum") < 600  # the items still waiting never reached the engine
        assert s.metric("q2_serve_items_total", outcome="scored") == 0
        assert s.metric("q2_serve_queue_depth") == 0


def test_a_timeout_is_504(tiny_models, tmp_path, pairs):
    with q2_serve(tiny_flags(tiny_models, "--max-items", "1000", "--timeout", "0.3"), tmp_path) as s:
        r = httpx.post(s.url + "/v1/score", json={"items": _many(pairs, 600)}, timeout=60)
        assert r.status_code == 504 and "0.3 s" in r.json()["error"]


async def _burst(url: str, items: list[dict], n: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=n)) as client:
        return await asyncio.gather(
            *(client.post(url + "/v1/score", json=items[i % len(items)]) for i in range(n))
        )


def test_overload_is_429_and_memory_stays_bounded(tiny_models, tmp_path, pairs):
    with q2_serve(tiny_flags(tiny_models, "--max-queue", "4", "--max-wait", "0.2"), tmp_path) as s:
        first = asyncio.run(_burst(s.url, pairs, 40))
        codes = [r.status_code for r in first]
        assert set(codes) <= {200, 429} and codes.count(429) >= 20 and 200 in codes, codes
        refused = next(r for r in first if r.status_code == 429)
        assert refused.headers["Retry-After"] == "1"
        base = s.rss_mb()
        for _ in range(6):
            codes += [r.status_code for r in asyncio.run(_burst(s.url, pairs, 40))]
        grown = s.rss_mb() - base
        assert grown < 100, f"RSS grew {grown:.0f} MB under overload"
        assert s.metric("q2_serve_queue_depth") == 0
        assert s.metric("q2_serve_requests_total", code="429") == codes.count(429)


def test_sigterm_answers_every_accepted_request_and_exits_0(tiny_models, tmp_path, pairs):
    with q2_serve(tiny_flags(tiny_models, "--max-wait", "1.5"), tmp_path) as s:

        async def run() -> list:
            async with httpx.AsyncClient(timeout=120) as client:
                sent = [
                    asyncio.ensure_future(client.post(s.url + "/v1/score", json={"items": pairs[:4]}))
                    for _ in range(5)
                ]
                await asyncio.sleep(0.7)  # accepted, waiting in the micro-batcher
                s.proc.send_signal(signal.SIGTERM)
                return await asyncio.gather(*sent, return_exceptions=True)

        answered = asyncio.run(run())
        assert all(isinstance(r, httpx.Response) and r.status_code == 200 for r in answered), answered
        assert all(len(r.json()["results"]) == 4 for r in answered)
        assert s.proc.wait(60) == 0, s.log.read_text()
        lines = [line for line in s.log.read_text().splitlines() if line.startswith("q2 serve: ")]
        assert lines[-2].startswith("q2 serve: stopping (requests in flight get up to 30 s)"), lines
        assert (
            lines[-1] == "q2 serve: stopped" and '"POST /v1/score' not in s.log.read_text()
        )  # no access log
        with pytest.raises(httpx.ConnectError):
            httpx.post(s.url + "/v1/score", json=pairs[0], timeout=10)


def _stalled(url: str, headers_only: bool = False) -> socket.socket:
    """A client that sends a request's headers and 12 of its 100 bytes of body (or only part of
    its headers), then nothing."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    head = b"POST /v1/score HTTP/1.1\r\nHost: q2\r\nContent-Type: application/json\r\n"
    sock.sendall(head if headers_only else head + b"Content-Length: 100\r\n\r\n" + b'{"response":')
    return sock


def _answer(sock: socket.socket) -> bytes:
    """What the server sends before it closes the connection."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


def test_the_edges_stalled_body_oversized_request_and_bodies_that_are_not_json_text(
    tiny_models, tmp_path, pairs
):
    flags = tiny_flags(tiny_models, "--max-queue", "4", "--read-timeout", "1", "--access-log")
    with q2_serve(flags, tmp_path) as s:
        # a body that stalls after 12 of its 100 bytes: 408 within the read timeout, then closed
        sock = _stalled(s.url)
        start = time.perf_counter()
        got = _answer(sock)
        sock.close()
        assert time.perf_counter() - start < 10
        assert got == b"" or got.startswith(b"HTTP/1.1 408"), got[:200]
        # more items than the queue can ever hold: 413 at once, no Retry-After (a retry cannot succeed)
        start = time.perf_counter()
        many = httpx.post(s.url + "/v1/score", json={"items": [pairs[0]] * 5}, timeout=60)
        assert many.status_code == 413 and time.perf_counter() - start < 5
        assert "at most 4" in many.json()["error"] and "retry-after" not in many.headers
        # bodies the JSON reader cannot take: one 422 sentence each, before any scoring
        calls = s.metric("q2_serve_batch_size_count")
        deep = httpx.post(s.url + "/v1/score", content=b"[" * 100_000, timeout=60)
        lone = b'{"id": "\\ud800", "response": "Bob Ross.", "knowledge": "Bob Ross."}'
        surrogate = httpx.post(s.url + "/v1/score", content=lone, timeout=60)
        for reply in (deep, surrogate):
            assert reply.status_code == 422 and "\n" not in reply.json()["error"], reply.text
            assert reply.headers["content-type"] == "application/json"
        assert "nests deeper" in deep.json()["error"] and "lone surrogate" in surrogate.json()["error"]
        assert s.metric("q2_serve_batch_size_count") == calls
        assert s.metric("q2_serve_requests_total", code="422") == 2
        assert s.metric("q2_serve_requests_total", code="413") == 1
        assert s.metric("q2_serve_requests_total", code="408") in (0, 1)  # counted if it was sent
        assert s.metric("q2_serve_requests_total", code="200") == 0
        log = s.log.read_text()
        assert "q2 serve: ready (models loaded and warmed; q2:" in log
        assert (
            '"POST /v1/score HTTP/1.1" 413' in log and '"POST /v1/score HTTP/1.1" 422' in log
        )  # the access log


def test_sigterm_ends_within_the_drain_time_whatever_a_client_does(tiny_models, tmp_path, pairs):
    flags = tiny_flags(tiny_models, "--read-timeout", "600", "--drain-timeout", "2")
    with q2_serve(flags, tmp_path) as s:
        stalled = [_stalled(s.url), _stalled(s.url, headers_only=True)]
        time.sleep(0.5)  # both connected and read
        start = time.perf_counter()
        s.proc.send_signal(signal.SIGTERM)
        code = s.proc.wait(60)
        took = time.perf_counter() - start
        for sock in stalled:
            sock.close()
        assert code == 0, s.log.read_text()
        assert took < 15, f"the stop took {took:.1f} s with a drain time of 2 s"


def test_serve_reads_the_operating_point_q2_calibrate_wrote_signs_it_and_decides_by_it(tiny_models, tmp_path):
    """`q2 score` then `q2 calibrate` on the bundled annotated WoW sample (its consistent and
    inconsistent labels) write an operating-point file; a real `q2 serve --operating-point` reads it
    back: /v1/info shows it, each reply's signature names it (`thr:` and `op:` with the file's
    digest) and every verdict is its threshold's (consistent iff Q² > it, the rule written here)."""
    import csv
    import hashlib

    from support.data import SAMPLE

    scores, summary, op = tmp_path / "scores.csv", tmp_path / "summary.json", tmp_path / "op.json"
    done = cli(
        "score", str(SAMPLE), "-o", str(scores), "--summary", str(summary), "--no-cache", "--quiet",
        *tiny_flags(tiny_models),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = cli(
        "calibrate", "--dataset", f"wow={SAMPLE}", "--scores", str(scores), "--summary", str(summary),
        "-o", str(op), "--consistent-label", "consistent", "--bootstrap", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = json.loads(op.read_text(encoding="utf-8"))
    t, digest = written["threshold"], hashlib.sha256(op.read_bytes()).hexdigest()
    assert written["dataset"]["responses"] == 40 and written["dataset"]["consistent"] == 20
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        items = [{"response": r["response"], "knowledge": r["knowledge"]} for r in csv.DictReader(f)][:12]
    with q2_serve([*tiny_flags(tiny_models), "--operating-point", str(op)], tmp_path) as server:
        info = httpx.get(server.url + "/v1/info", timeout=30).json()
        reply = httpx.post(server.url + "/v1/score", json={"items": items}, timeout=120)
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert info["operating_point"]["sha256"] == digest and info["threshold"] == t
    assert info["operating_point"]["rule"] == "balanced_accuracy"
    assert out["signature"].endswith(f"|thr:{t:g}|op:ba@{digest[:12]}")
    assert out["signature"].startswith(written["scores"]["signature"].split("|thr:")[0])
    scored = [e for e in out["results"] if e["status"] == "scored"]
    assert len(scored) >= 10 and len({e["score"] for e in scored}) >= 2
    for e in scored:
        assert e["verdict"] == ("consistent" if e["score"] > t else "inconsistent"), (e, t)
    assert "deciding at the operating point balanced_accuracy on wow" in server.log.read_text()


def test_serve_refuses_a_bad_operating_point_in_one_sentence_before_any_model(tmp_path):
    bad = tmp_path / "op.json"
    bad.write_text('{"format": "q2-operating-point", "version": 1, "threshold": "high"}')
    # no model folder exists: the file is read first
    done = cli("serve", "--operating-point", str(bad), "--qg-model", str(tmp_path / "none"), "--port", "1")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "'threshold' must be a number in [0, 1], got 'high'" in lines[0], done.stderr
