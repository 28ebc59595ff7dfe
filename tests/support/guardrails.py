"""Shared by the guardrail frameworks' tests: Guardrails AI kept off the network, and `q2 score
--tiny --threshold T --spans` (the command line) as the yardstick of every pass, block and span."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from support.harness import BIN


def sample_pairs(n: int) -> list[tuple[str, str]]:
    """The first `n` (response, knowledge) pairs of the bundled WoW sample."""
    import csv

    from support.harness import ROOT

    with open(ROOT / "q2_metric" / "data" / "wow_sample.csv", newline="", encoding="utf-8") as f:
        return [(r["response"], r["knowledge"]) for r in list(csv.DictReader(f))[:n]]


def quiet_guardrails() -> None:
    """Before Guardrails AI is imported: NLTK's punkt seen as present, which `import guardrails`
    downloads otherwise when nltk is installed (an empty folder: nothing here tokenizes sentences)."""
    try:
        import nltk
    except ImportError:
        nltk = None
    if nltk is not None:
        try:
            nltk.data.find("tokenizers/punkt")
        except LookupError:
            folder = Path(tempfile.mkdtemp(prefix="nltk-")) / "tokenizers" / "punkt"
            folder.mkdir(parents=True)
            nltk.data.path.insert(0, str(folder.parents[1]))


def offline_guard(validator: object) -> object:
    """`Guard().use(validator)` that sends no usage metrics (Guardrails AI's default sends them:
    `Guard.configure(allow_metrics_collection=False)`; each new Guard reads ~/.guardrailsrc again)."""
    from guardrails import Guard

    guard = Guard().use(validator)
    guard.configure(allow_metrics_collection=False)
    return guard


def q2_score_outcomes(
    pairs: list[tuple[str, str]], environ: dict[str, str], tmp: Path, threshold: float
) -> list[dict]:
    """`q2 score --tiny --threshold T --spans` on the pairs: each row's `decision` ("consistent",
    "inconsistent", or None when not scored) and its unsupported spans (start, end, text)."""
    src, out, spans = tmp / "in.jsonl", tmp / "out.jsonl", tmp / "spans.jsonl"
    src.write_text("".join(json.dumps({"response": r, "knowledge": k}) + "\n" for r, k in pairs))
    res = subprocess.run(
        [str(BIN / "q2"), "score", str(src), "-o", str(out), "--tiny", "--quiet", "--no-cache"]
        + ["--threshold", str(threshold), "--spans", str(spans)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    details = [json.loads(line) for line in spans.read_text().splitlines()]
    assert len(rows) == len(details) == len(pairs)
    return [
        {
            "decision": row.get("decision") or None,
            "unsupported": [(s["start"], s["end"], s["text"]) for s in d["spans"] if s["supported"] is False],
        }
        for row, d in zip(rows, details)
    ]
