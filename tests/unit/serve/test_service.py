"""The path of a request below its route (`q2_metric.serve.service`), in process over a scripted
scorer: each item checked once by the contract's one item check (a spy on it), the queue bound
(413 for a request the queue can never hold, 429 with Retry-After only where a retry can succeed)."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")
from support.serve import GOOD, app_client, ready

from q2_metric import frontend


def test_each_item_is_checked_once_on_the_served_path(monkeypatch):
    checks: dict[str, int] = {}
    real = frontend.item_error

    def spy(key, fields, history=None):
        checks[key] = checks.get(key, 0) + 1
        return real(key, fields, history)

    with app_client() as c:
        ready(c)
        monkeypatch.setattr(frontend, "item_error", spy)
        items = [
            GOOD,
            {**GOOD, "response": 7},
            {**GOOD, "id": "x", "response": "Bob Ross painted."},
            {"response": "r"},
        ]
        out = c.post("/v1/score", json={"items": items}).json()
        one = c.post("/v1/score", json={**GOOD, "id": "solo"}).json()
    assert [e["status"] for e in out["results"]] == ["scored", "bad", "scored", "bad"]
    assert one["results"][0]["status"] == "scored"
    assert checks == {"item 0": 1, "item 1": 1, "item 2 (id 'x')": 1, "item 3": 1, "item 0 (id 'solo')": 1}


def test_more_items_than_the_queue_can_ever_hold_is_413_at_once_without_retry_after():
    with app_client(max_queue=4) as c:
        ready(c)
        too_many = c.post("/v1/score", json={"items": [GOOD] * 5})
        fits = c.post("/v1/score", json={"items": [GOOD] * 4})
        bad_ones_do_not_queue = c.post("/v1/score", json={"items": [GOOD] * 4 + [{"response": 7}] * 3})
    assert too_many.status_code == 413 and "Retry-After" not in too_many.headers
    assert too_many.json()["error"] == (
        "5 items to score in one request: the queue holds at most 4, so it can never be taken; "
        "send at most 4 items per request."
    )
    assert fits.status_code == 200 and bad_ones_do_not_queue.status_code == 200


def test_a_full_queue_is_429_with_retry_after(monkeypatch):
    with app_client(max_queue=4) as c:
        ready(c)
        c.app.state.service.queued = 3  # three items of other requests waiting
        busy = c.post("/v1/score", json={"items": [GOOD] * 2})
        c.app.state.service.queued = 0
    assert busy.status_code == 429 and busy.headers["Retry-After"] == "1"
    assert busy.json()["error"] == "The queue is full (3 items waiting); try again later."


def test_503_says_retry_only_while_the_models_load():
    with app_client() as c:
        ready(c)
        service = c.app.state.service
        service.ready = False
        loading = c.post("/v1/score", json=GOOD)
        service.ready, service.draining = True, True
        stopping = c.post("/v1/score", json=GOOD)
        stopping_ready = c.get("/ready")
        service.draining = False
    assert loading.status_code == 503 and loading.headers["Retry-After"] == "1"
    assert stopping.status_code == 503 and "Retry-After" not in stopping.headers
    assert stopping_ready.status_code == 503 and "Retry-After" not in stopping_ready.headers
