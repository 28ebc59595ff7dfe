"""The service's metrics (`q2_metric.serve.metrics`): every answer to /v1/score counted under the
status code the client got, a 500 made outside the handler included; /metrics as Prometheus text."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families
from support.serve import GOOD, app_client, ready


def counted(c) -> dict[str, float]:
    reply = c.get("/metrics")
    assert reply.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {
        s.labels["code"]: s.value
        for f in text_string_to_metric_families(reply.text)
        for s in f.samples
        if s.name == "q2_serve_requests_total"
    }


class Failing:
    """A scripted scorer whose engine calls fail (after the warm-up)."""

    def __init__(self):
        from q2_metric.testing.scripted import scripted_scorer

        self.inner, self.calls = scripted_scorer(), 0
        self.config = self.inner.config

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def score_checked(self, *args, **kwargs):
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("engine failed")
        return self.inner.score_checked(*args, **kwargs)


def test_every_answer_is_counted_under_its_real_code(monkeypatch):
    with app_client(Failing(), api_key="k") as c:
        ready(c)
        key = {"Authorization": "Bearer k"}
        codes = [
            c.post("/v1/score", json=GOOD).status_code,  # 401
            c.post("/v1/score", content=b"[" * 100_000, headers=key).status_code,  # 422
            c.post(
                "/v1/score", content=b'{"id": "\\ud800", "response": "r", "knowledge": "k"}', headers=key
            ).status_code,
            c.post("/v1/score", json=GOOD, headers=key).status_code,  # 500: the engine failed
        ]
        import q2_metric.serve.app as app_module

        def broken(err):
            raise RuntimeError("the answer could not be made")

        monkeypatch.setattr(app_module, "_refused", broken)  # an error that escapes the handler
        escaped = c.post("/v1/score", json=GOOD)
        codes.append(escaped.status_code)
        got = counted(c)
    assert codes == [401, 422, 422, 500, 500]
    assert got == {"401": 1.0, "422": 2.0, "500": 2.0}
