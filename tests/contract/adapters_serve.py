"""The contract matrix's adapter of `q2 serve`: a real uvicorn server (`q2 serve FLAGS`, a
subprocess on a free 127.0.0.1 port) and a real HTTP client (httpx); the items posted as one
request (`{"items": [...]}`), read back from its JSON (items named `item N`). Its refusals are
`q2 serve`'s own (in process: the options and the models are checked before the server starts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.frontends import Item, Report, Row, Words, flags, nowhere, run_q2


@dataclass
class Q2Serve(Words):
    name: str
    base: dict[str, Any]
    slow: bool = True
    bad_item: str = "reported"
    writes: bool = False
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "--max-question-length",
            "out of range": "--batch-size=0",
            "unknown name": "--use-nlii",
            "missing model": "--qg-model",
        }
    )
    foreign_words: tuple = ()

    def score(self, items: list[Item], tmp: Path) -> Report:
        import httpx
        from support.serve import q2_serve

        with q2_serve(flags(self.base), tmp) as server:
            body = {"items": [{"response": i.response, "knowledge": i.knowledge} for i in items]}
            reply = httpx.post(server.url + "/v1/score", json=body, timeout=300)
        assert reply.status_code == 200, reply.text
        out = reply.json()
        rows = [Row(f"item {e['id']}", e["status"], e["score"], e["error"]) for e in out["results"]]
        counts = {s: sum(r.status == s for r in rows) for s in ("scored", "empty", "bad")}
        spans = [None if e["status"] == "bad" else e["spans"] for e in out["results"]]
        verdicts = [e["verdict"] for e in out["results"]]
        return Report(rows, counts, out["signature"], spans, verdicts, [e["reason"] for e in out["results"]])

    def refusal(self, kind: str, tmp: Path) -> str:
        extra = {
            "wrong type": ["--max-question-length", "eight"],
            "out of range": ["--batch-size", "0"],
            "unknown name": ["--use-nlii"],
            "missing model": ["--qg-model", nowhere(tmp)],
        }[kind]
        code, _, err = run_q2(["serve", "--port", "1", *flags(self.base), *extra])
        assert code == 2, err
        return err.strip().splitlines()[-1]

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # answers over HTTP; writes no file
