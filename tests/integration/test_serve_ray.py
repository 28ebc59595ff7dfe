"""`q2 serve`'s app on Ray Serve (`q2_metric.serve.ray_serve.q2_deployment`) on a local Ray: the same
HTTP contract through Ray's proxy (on a free 127.0.0.1 port), its replica's micro-batcher filling
batches from concurrent requests (`max_ongoing_requests`). Expected values: statuses from the
items as written; the scores are the local app's (`q2 serve`'s, checked against `q2 score` in
test_serve.py) on the same items."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time

import httpx
import pytest
from support.serve import free_port

pytestmark = pytest.mark.slow
serve = pytest.importorskip("ray.serve")
ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_url(tiny_models):
    from q2_metric.serve.ray_serve import q2_deployment

    ray_tmp = tempfile.mkdtemp(prefix="q2rs", dir="/tmp")  # private: no other Ray on the machine sees it
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_ADDRESS")}
    os.environ["RAY_TMPDIR"] = ray_tmp
    os.environ.pop("RAY_ADDRESS", None)
    port = free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        options = {
            "qg_model": tiny_models["qg"],
            "qa_model": tiny_models["qa"],
            "nli_model": tiny_models["nli"],
            "device": "cpu",
            "max_question_length": 16,
        }
        serve.run(
            q2_deployment(options, num_replicas=1, max_ongoing_requests=64), route_prefix="/", name="q2"
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 300
        while httpx.get(url + "/ready", timeout=30).status_code != 200:
            assert time.time() < deadline
            time.sleep(0.5)
        yield url
    finally:
        serve.shutdown()
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_ray_serve_scores_like_the_local_app(ray_url, rows, tiny_models):
    from fastapi.testclient import TestClient

    from q2_metric import frontend
    from q2_metric.serve.app import create_app

    items = [{"response": r["response"], "knowledge": r["knowledge"]} for r in rows[:6]]
    body = {"items": [items[0], {"response": 7, "knowledge": "k"}, *items[1:]]}
    reply = httpx.post(ray_url + "/v1/score", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    out = reply.json()["results"]
    assert [e["status"] for e in out] == ["scored", "bad", *["scored"] * 5]
    assert out[1]["error"].startswith("item 1: field 'response'") and out[1]["verdict"] == "unverified"

    config = frontend.configure(
        {
            "qg_model": tiny_models["qg"],
            "qa_model": tiny_models["qa"],
            "nli_model": tiny_models["nli"],
            "device": "cpu",
            "max_question_length": 16,
        }
    )
    with TestClient(create_app(config)) as local:
        deadline = time.time() + 300
        while local.get("/ready").status_code != 200:
            assert time.time() < deadline
            time.sleep(0.2)
        expected = local.post("/v1/score", json=body).json()["results"]
    assert [e["score"] for e in out] == [e["score"] for e in expected]
    assert len({e["score"] for e in out if e["score"] is not None}) >= 2  # rows differ


def test_concurrent_requests_fill_a_batch(ray_url, rows):
    items = [{"response": r["response"], "knowledge": r["knowledge"]} for r in rows[:24]]

    async def burst():
        async with httpx.AsyncClient(timeout=300) as client:
            return await asyncio.gather(*(client.post(ray_url + "/v1/score", json=i) for i in items))

    replies = asyncio.run(burst())
    assert all(r.status_code == 200 for r in replies)
    metrics = httpx.get(ray_url + "/metrics", timeout=30).text
    sizes = [line for line in metrics.splitlines() if line.startswith("q2_serve_batch_size_bucket")]
    one = next(float(line.rsplit(" ", 1)[1]) for line in sizes if 'le="1.0"' in line)
    total = next(float(line.rsplit(" ", 1)[1]) for line in sizes if 'le="+Inf"' in line)
    assert total < 1 + len(items), "every request was scored alone: the batches never filled"
    assert one < total
    info = httpx.get(ray_url + "/v1/info", timeout=30).json()
    assert info["batch_invariant"] is True
