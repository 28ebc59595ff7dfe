"""Shared by the harness tests: their environment (offline, the tiny Q² models) and `q2 score --tiny`
(the command line) as the yardstick."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def env(tiny: dict[str, str], tmp: Path) -> dict[str, str]:
    """Offline, the tiny Q² models, a private cache."""
    folder = str(Path(tiny["qg"]).parent)
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "Q2_TINY": "1",
        "Q2_TINY_MODELS": folder,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(tmp / "hf"),
        "HF_MODULES_CACHE": str(tmp / "modules"),
        "INSPECT_LOG_DIR": str(tmp / "inspect-logs"),
        "RAGAS_DO_NOT_TRACK": "true",
        "DO_NOT_TRACK": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
    }


IN_PROCESS = (
    "Q2_TINY",
    "Q2_TINY_MODELS",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "INSPECT_LOG_DIR",
    "RAGAS_DO_NOT_TRACK",
    "DO_NOT_TRACK",
    "TOKENIZERS_PARALLELISM",
)


def set_in_process(monkeypatch, environ: dict[str, str]) -> None:
    """The variables a test in this process needs (not HF_HOME and the like, which libraries read
    once at import: a later test would inherit this test's folders)."""
    for key in IN_PROCESS:
        monkeypatch.setenv(key, environ[key])


def cli_score(pairs: list[tuple[str, str]], tmp: Path, environ: dict[str, str]) -> tuple[list[dict], dict]:
    """`q2 score --tiny` (the command line) on the pairs: its output rows and its summary."""
    src, out, summary = tmp / "cli_in.jsonl", tmp / "cli_out.jsonl", tmp / "cli_summary.json"
    with open(src, "w", encoding="utf-8") as f:
        for r, k in pairs:
            f.write(json.dumps({"response": r, "knowledge": k}) + "\n")
    res = subprocess.run(
        [
            str(BIN / "q2"),
            "score",
            str(src),
            "-o",
            str(out),
            "--tiny",
            "--quiet",
            "--no-cache",
            "--summary",
            str(summary),
        ],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(got) == len(pairs)
    return got, json.loads(summary.read_text(encoding="utf-8"))


def cli_scores(pairs: list[tuple[str, str]], tmp: Path, environ: dict[str, str]) -> list[float | None]:
    """`q2 score --tiny` on the pairs: one score per pair (None: not scored)."""
    rows, _ = cli_score(pairs, tmp, environ)
    return [None if r.get("q2") in (None, "") else float(r["q2"]) for r in rows]


def close(a: float | None, b: float | None, tol: float = 1e-6) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol


def count_engine(monkeypatch) -> tuple[list[list[str]], list[int]]:
    """From now on, record every engine call (the stages it ran) and every scorer built (a model
    load); the harnesses' engines are dropped first, so the next run builds its own."""
    import q2_metric
    from q2_metric.runtime import cache

    cache.reset()
    calls: list[list[str]] = []
    loads: list[int] = []
    # the engine's one door: `score` checks its lists and calls it; the contract calls it directly
    real_score, real_init = q2_metric.Q2Scorer.score_checked, q2_metric.Q2Scorer.__init__

    def counting_score(self, responses, knowledge, *args, **kw):
        result = real_score(self, responses, knowledge, *args, **kw)
        calls.append([p.stage for p in result.profile])
        return result

    def counting_init(self, *args, **kw):
        loads.append(1)
        real_init(self, *args, **kw)

    monkeypatch.setattr(q2_metric.Q2Scorer, "score_checked", counting_score)
    monkeypatch.setattr(q2_metric.Q2Scorer, "__init__", counting_init)
    return calls, loads
