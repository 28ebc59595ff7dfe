"""The app of `q2 serve` in process (FastAPI's test client) over a scripted scorer: the contract's
statuses, fail closed, the decision rule, the refusals. The real server (uvicorn, a real client) is
tests/integration/test_serve.py. Expected values follow from the requests as written and from
`display.decide` (inconsistent iff Q² <= threshold) on the scores the response gives."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")
from support.serve import GOOD, app_client, ready

client = app_client


def test_statuses_fail_closed_and_the_decision_rule():
    with client() as c:
        ready(c)
        body = {
            "items": [GOOD, {**GOOD, "response": 7}, {**GOOD, "response": "  "}, [1], {**GOOD, "id": "x"}]
        }
        out = c.post("/v1/score", json=body).json()
    got = [(e["id"], e["status"], e["verdict"]) for e in out["results"]]
    assert [g[:2] for g in got] == [
        ("0", "scored"),
        ("1", "bad"),
        ("2", "empty"),
        ("3", "bad"),
        ("x", "scored"),
    ]
    for e in out["results"]:
        if e["status"] != "scored":
            assert e["verdict"] == "unverified" and e["score"] is None
        else:
            assert e["verdict"] == ("consistent" if e["score"] > 0.5 else "inconsistent")
    assert out["results"][1]["error"] == "item 1: field 'response' must be a string, got int."
    assert out["results"][3]["error"].startswith("item 3: must be a JSON object")
    assert out["signature"].startswith("q2:")


def test_a_score_equal_to_the_threshold_is_inconsistent():
    with client() as c:
        ready(c)
        score = c.post("/v1/score", json=GOOD).json()["results"][0]["score"]
        at = c.post("/v1/score", json={**GOOD, "threshold": score}).json()["results"][0]
        below = c.post("/v1/score", json={**GOOD, "threshold": max(0.0, score - 0.01)}).json()["results"][0]
    assert at["verdict"] == "inconsistent"
    assert below["verdict"] == ("consistent" if score > 0 else "inconsistent")


def test_refusals():
    with client(max_items=2, max_body_bytes=500, api_key="k") as c:
        ready(c)
        assert c.post("/v1/score", json=GOOD).status_code == 401
        key = {"Authorization": "Bearer k"}
        assert c.post("/v1/score", json=GOOD, headers=key).status_code == 200
        assert c.post("/v1/score", json={"items": [GOOD] * 3}, headers=key).status_code == 413
        assert c.post("/v1/score", json={**GOOD, "response": "x" * 600}, headers=key).status_code == 413
        assert c.post("/v1/score", content=b"[", headers=key).status_code == 422
        assert c.post("/v1/score", json=[GOOD], headers=key).status_code == 422
        assert c.post("/v1/score", json={**GOOD, "spans": "yes"}, headers=key).status_code == 422
        assert c.get("/health").status_code == 200
