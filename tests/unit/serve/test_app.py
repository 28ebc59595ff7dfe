"""The app of `q2 serve` in process (FastAPI's test client) over a scripted scorer: the contract's
statuses, fail closed, the decision rule, the refusals. The real server (uvicorn, a real client) is
tests/integration/test_serve.py. Expected values follow from the requests as written and from
`display.decide` (inconsistent iff Q² <= threshold) on the scores the response gives."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("prometheus_client")
from fastapi.testclient import TestClient

from q2_metric.config import Q2Config
from q2_metric.errors import Q2OptionError
from q2_metric.serve.app import Limits, create_app, parse_request
from q2_metric.testing.scripted import scripted_scorer

GOOD = {"response": "Bob Ross hosted the show.", "knowledge": "Bob Ross hosted the show."}


def client(**limits) -> TestClient:
    return TestClient(create_app(Q2Config(), Limits(**limits), scorer=scripted_scorer()))


def ready(c: TestClient) -> None:
    deadline = time.time() + 60
    while c.get("/ready").status_code != 200:
        assert time.time() < deadline
        time.sleep(0.02)


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


def test_an_item_entry_is_its_record_under_the_services_keys():
    # "Oslo saw Bob Ross." against a knowledge without Oslo: the scripted QA answers Bob Ross (1) and
    # not Oslo (0): Q² 1/2, inconsistent at 0.5; the spans in the response's order, each with its phrase
    with client() as c:
        ready(c)
        item = {"response": "Oslo saw Bob Ross.", "knowledge": "Bob Ross hosted the show.", "id": 9}
        out = c.post("/v1/score", json={"items": [item, {**GOOD, "spans": False}, {"response": 1}]}).json()
    entry, quiet, bad = out["results"]
    assert list(entry) == ["id", "status", "score", "q2_no_nli", "verdict", "reason", "spans", "error"]
    assert (entry["id"], entry["status"], entry["score"], entry["verdict"]) == (
        "9",
        "scored",
        0.5,
        "inconsistent",
    )
    assert (
        entry["reason"]
        == "1 of 2 questions answered the same way from the knowledge; 1 not answered by the knowledge."
    )
    assert entry["spans"] == [
        {
            "start": 0,
            "end": 4,
            "text": "Oslo",
            "candidate": "Oslo",
            "supported": False,
            "score": 0.0,
            "reason": "not answered by the knowledge",
            "question": "what about Oslo?",
            "answers": ["Oslo", ""],
        },
        {
            "start": 9,
            "end": 17,
            "text": "Bob Ross",
            "candidate": "Bob Ross",
            "supported": True,
            "score": 1.0,
            "reason": "answered the same way from the knowledge",
            "question": "what about Bob Ross?",
            "answers": ["Bob Ross", "Bob Ross"],
        },
    ]
    assert quiet["spans"] == [] and quiet["verdict"] == "consistent"
    assert (bad["status"], bad["verdict"], bad["spans"]) == ("bad", "unverified", [])
    assert bad["reason"] == bad["error"] == "item 2: field 'response' must be a string, got int."


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


def test_parse_request_limits_and_threshold():
    limits = Limits(max_items=3)
    asked = parse_request({"items": [GOOD, {**GOOD, "threshold": 2}]}, limits)
    assert asked[0].error is None and "threshold" in asked[1].error and asked[1].error.startswith("item 1")
    with pytest.raises(Q2OptionError):
        Limits(max_queue=0)
