"""The Q² service's client (`q2_metric.guardrails.client`) against a real socket: the real `q2 serve`
app (tests/support/serve.py, uvicorn in a thread) over scripted components, no model. It sends
the items in one request and gives back one result per item in order, a bad item's error among
them; whatever keeps the service from answering is one `Q2ServiceError` sentence, never a verdict."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.serve import closed_port_url, q2_service, refusing_service

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


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"results": []}', b'{"results": [{"id": "0", "verdict": "fine"}]}'],
    ids=["not JSON", "no result", "no verdict"],
)
def test_a_reply_off_the_contract_is_refused(body):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(Q2ServiceError, match="Q² service"):
            Q2Service(f"http://127.0.0.1:{server.server_address[1]}").ask(
                [{"response": SAME, "knowledge": SAME}]
            )
    finally:
        server.shutdown()
        server.server_close()


def test_is_consistent_needs_the_word_and_a_score():
    assert is_consistent({"status": "scored", "verdict": "consistent"})
    assert not is_consistent({"status": "bad", "verdict": "consistent"})
    assert not is_consistent({"status": "scored", "verdict": "Consistent"})
    assert not is_consistent(json.loads("{}"))
