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
        == "1 of 2 questions was answered the same way from the knowledge; 1 was not answered by the knowledge."
    )
    assert entry["spans"] == [
        {
            "start": 0,
            "end": 4,
            "text": "Oslo",
            "candidate": "Oslo",
            "supported": False,
            "score": 0.0,
            "reason": "Its question was not answered by the knowledge.",
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
            "reason": "Its question was answered the same way from the knowledge.",
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


def test_the_ready_and_stop_lines():
    said: list[str] = []
    c = client()
    c.app.state.service.say = said.append  # as `q2 serve` prints them on stderr
    with c:
        ready(c)
    assert said[0].startswith("q2 serve: ready (models loaded and warmed; q2:") and len(said) == 2
    assert said[1] == "q2 serve: stopped"


def test_docs_are_served_offline_and_the_schema_has_the_response_models():
    with client() as c:
        ready(c)
        page = c.get("/docs")
        spec = c.get("/openapi.json").json()
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "cdn" not in page.text.lower() and "https://" not in page.text and "http://" not in page.text
    score = spec["paths"]["/v1/score"]["post"]
    assert score["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ScoreResponse"
    }
    assert {"ScoreResponse", "ItemOut", "SpanOut", "ErrorOut"} <= set(spec["components"]["schemas"])
    assert set(spec["components"]["schemas"]["ItemOut"]["properties"]["verdict"]["enum"]) == {
        "consistent",
        "inconsistent",
        "unverified",
    }
    assert (
        "text/plain; version=0.0.4; charset=utf-8"
        in spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    )
    body = score["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert body[0]["required"] == ["response", "knowledge"] and "items" in body[1]["properties"]


def test_info_shows_no_absolute_path(tmp_path):
    from fastapi.testclient import TestClient

    from q2_metric.config import Q2Config
    from q2_metric.serve.app import create_app
    from q2_metric.testing.scripted import scripted_scorer

    folder = tmp_path / "models" / "my-qg"
    app = create_app(Q2Config(qg_model=str(folder)), scorer=scripted_scorer())
    with TestClient(app) as c:
        ready(c)
        info = c.get("/v1/info").json()
    assert info["options"]["qg_model"] == "my-qg"
    text = repr(info)
    assert str(tmp_path) not in text and "'/" not in text


def test_the_access_log_is_asked_for():
    import logging

    from q2_metric.config import Q2Config
    from q2_metric.serve.app import create_app, uvicorn_server

    server = uvicorn_server(create_app(Q2Config()), "127.0.0.1", 0, log_level="warning", access_log=True)
    assert server.config.access_log is True
    assert logging.getLogger("uvicorn.access").level == logging.INFO
    quiet = uvicorn_server(create_app(Q2Config()), "127.0.0.1", 0, log_level="warning")
    assert quiet.config.access_log is False


# -- the operating point (q2 serve --operating-point FILE) -------------------------------------------
OP = {
    "format": "q2-operating-point",
    "version": 1,
    "threshold": 0.4,
    "rule": {"name": "recall", "target": 0.9},
    "dataset": {"name": "wow", "sha256": "a" * 64},
    "scores": {"sha256": "b" * 64, "signature": "q2:0.5.0|qg:x"},
    "figures": {"recall": {"value": 0.9, "low": 0.8, "high": 1.0}},
    "calibration": {"ece": 0.1, "table": []},
    "created": "2026-12-01T23:00:00+00:00",
}
# the scripted scorer: Paris answered from the knowledge (1), Rome not (0): Q² 0.5
HALF = {"response": "Paris and Rome are big.", "knowledge": "Paris is big."}


def test_the_operating_point_decides_is_signed_and_shown(tmp_path):
    import hashlib
    import json

    path = tmp_path / "op.json"
    path.write_text(json.dumps(OP))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with client(operating_point=path) as c:
        ready(c)
        info = c.get("/v1/info").json()
        at_op = c.post("/v1/score", json=HALF).json()
        own = c.post("/v1/score", json={**HALF, "threshold": 0.5}).json()
        ready_sig = c.get("/ready").json()["signature"]
    assert info["threshold"] == 0.4 and info["limits"]["threshold"] == 0.4
    assert info["operating_point"] == {
        "threshold": 0.4,
        "rule": "recall>=0.9",
        "dataset": "wow",
        "sha256": digest,
        "signature": f"r0.9@{digest[:12]}",
    }
    # 0.5 > 0.4: consistent at the operating point, inconsistent at the request's own 0.5
    assert at_op["results"][0]["score"] == 0.5 and at_op["results"][0]["verdict"] == "consistent"
    assert at_op["signature"].endswith(f"|thr:0.4|op:r0.9@{digest[:12]}") and ready_sig == at_op["signature"]
    assert own["results"][0]["verdict"] == "inconsistent"
    assert "|op:" not in own["signature"] and "|thr:" not in own["signature"]  # not decided at the point


def test_a_bad_operating_point_is_refused_before_the_app_is_made(tmp_path):
    from q2_metric.options.operating_point import OperatingPointError

    path = tmp_path / "op.json"
    path.write_text('{"format": "q2-operating-point", "version": 1, "threshold": 2}')
    with pytest.raises(OperatingPointError, match=r"'threshold' must be a number in \[0, 1\], got 2\.$"):
        client(operating_point=path)
