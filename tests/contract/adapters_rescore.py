"""The contract matrix's adapter of `q2 rescore` (issue 43): items written as an lm-eval
`--log_samples` file (one sample per item: `doc_id`, `doc.knowledge`, `filtered_resps`), scored by
`q2 rescore LOG -o OUT --summary S` in process, read back from its outputs (samples named `doc N`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.frontends import Item, Report, Row, Words, _nan_to_none, flags, nowhere, run_q2


def write_samples(path: Path, items: list[Item]) -> Path:
    """The items as lm-eval's samples file: the reply in `filtered_resps` (and `resps`), the
    knowledge in `doc.knowledge`; a non-text value is written as it is (the sample is then bad)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps(
                {
                    "doc_id": n,
                    "doc": {"knowledge": i.knowledge},
                    "target": "",
                    "resps": [[i.response]],
                    "filtered_resps": [i.response],
                    "filter": "none",
                }
            )
            + "\n"
            for n, i in enumerate(items)
        ),
        encoding="utf-8",
    )
    return path


@dataclass
class Q2Rescore(Words):
    name: str
    base: dict[str, Any]
    slow: bool = False
    bad_item: str = "reported"
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "--max-question-length",
            "out of range": "--batch-size=0",
            "unknown name": "--use-nlii",
            "missing model": "--qg-model",
        }
    )
    foreign_words: tuple = ()
    op_reason: str | None = (
        "q2 rescore takes no --operating-point yet: it writes scores and spans, no decision"
    )

    def _argv(self, log: Path, out: Path, summary: Path, options: list[str]) -> list[str]:
        return ["rescore", str(log), "-o", str(out), "--summary", str(summary), "--quiet", *options]

    def score(self, items: list[Item], tmp: Path) -> Report:
        log = write_samples(tmp / "logs" / "samples_task.jsonl", items)
        out, summary = tmp / "out.jsonl", tmp / "summary.json"
        code, _, err = run_q2(self._argv(log, out, summary, flags(self.base)))
        assert code in (0, 3), err[-3000:]
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        rows = [
            Row(rec["key"], rec["status"], _nan_to_none(rec.get("q2")), rec.get("error")) for rec in records
        ]
        s = json.loads(summary.read_text(encoding="utf-8"))
        return Report(
            rows,
            {"scored": s["num_scored"], "empty": s["num_empty"], "bad": s["num_bad"]},
            s["signature"],
            [None if rec["status"] == "bad" else rec["spans"] for rec in records],
            reasons=[rec.get("reason") or rec.get("error") for rec in records],
        )

    def option_flags(self, kind: str, tmp: Path) -> list[str]:
        return (
            flags(self.base)
            + {
                "wrong type": ["--max-question-length", "eight"],
                "out of range": ["--batch-size", "0"],
                "unknown name": ["--use-nlii"],
                "missing model": ["--qg-model", nowhere(tmp)],
            }[kind]
        )

    def refusal(self, kind: str, tmp: Path) -> str:
        log = write_samples(
            tmp / "logs" / "samples_task.jsonl", [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")]
        )
        out = tmp / "refused.jsonl"
        code, _, err = run_q2(self._argv(log, out, tmp / "refused.json", self.option_flags(kind, tmp)))
        assert code == 2 and not out.exists(), err
        return err.strip().splitlines()[-1]

    def write_inside_read(self, tmp: Path) -> str | None:
        log = write_samples(
            tmp / "logs" / "samples_task.jsonl", [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")]
        )
        target = Path(self.base["qg_model"]) / "scores.jsonl"
        code, _, err = run_q2(self._argv(log, target, tmp / "s.json", flags(self.base)))
        assert code == 2 and not target.exists(), err
        return err.strip()
