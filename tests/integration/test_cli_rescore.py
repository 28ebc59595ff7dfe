"""`q2 rescore` end to end on the tiny models: a samples file written by a real lm-eval run (a tiny
random GPT-2 writes the replies, `--log_samples`) and an Inspect log written by Inspect's own
`write_eval_log`; per-sample scores and spans equal `q2 score` (the command line) on the same
(reply, knowledge) pairs, and the logs' bytes are unchanged (SHA-256)."""

from __future__ import annotations

import glob
import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from support.harness import BIN, ROOT, close, env

TASKS = ROOT / "q2_metric" / "harness" / "lm_eval_tasks"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _q2(args: list[str], environ: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    res = subprocess.run(
        [str(BIN / "q2"), *args], env=environ, cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return res


def _cli_spans(pairs, tmp: Path, environ) -> list[dict]:
    """`q2 score --tiny --spans` on the pairs: one spans line per pair (q2 and spans)."""
    src = tmp / "pairs.jsonl"
    src.write_text(
        "".join(json.dumps({"response": r, "knowledge": k}) + "\n" for r, k in pairs), encoding="utf-8"
    )
    _q2(
        [
            "score",
            str(src),
            "-o",
            str(tmp / "pairs_out.jsonl"),
            "--spans",
            str(tmp / "pairs_spans.jsonl"),
            "--tiny",
            "--quiet",
            "--no-cache",
            "--allow-empty",
        ],
        environ,
        tmp,
    )
    return [json.loads(x) for x in (tmp / "pairs_spans.jsonl").read_text(encoding="utf-8").splitlines()]


def _compare(out: list[dict], want: list[dict]) -> None:
    assert len(out) == len(want)
    for got, exp in zip(out, want):
        assert close(got["q2"], exp["q2"]), (got["q2"], exp["q2"])
        assert got["spans"] == exp["spans"]


@pytest.mark.slow
def test_rescore_a_real_lm_eval_samples_file(harness_tiny, tmp_path):
    pytest.importorskip("lm_eval")
    pytest.importorskip("accelerate")
    environ = env(harness_tiny["q2"], tmp_path)
    out = tmp_path / "out"
    res = subprocess.run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={harness_tiny['lm']}",
            "--device",
            "cpu",
            "--tasks",
            "q2_wow",
            "--include_path",
            str(TASKS),
            "--limit",
            "4",
            "--batch_size",
            "4",
            "--gen_kwargs",
            "max_gen_toks=16",
            "--output_path",
            str(out),
            "--log_samples",
        ],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    (log,) = [Path(p) for p in glob.glob(str(out / "**" / "samples_q2_wow_*.jsonl"), recursive=True)]
    samples = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.strip()]
    before = _sha(log)
    rescored = tmp_path / "rescored.jsonl"
    _q2(
        [
            "rescore",
            str(log),
            "-o",
            str(rescored),
            "--summary",
            str(tmp_path / "summary.json"),
            "--tiny",
            "--quiet",
        ],
        environ,
        tmp_path,
    )
    assert _sha(log) == before
    got = [json.loads(x) for x in rescored.read_text(encoding="utf-8").splitlines()]
    assert [g["doc_id"] for g in got] == [s["doc_id"] for s in samples]
    _compare(
        got, _cli_spans([(s["filtered_resps"][0], s["doc"]["knowledge"]) for s in samples], tmp_path, environ)
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (
        summary["num_samples"] == 4
        and summary["log_sha256"] == before
        and "tiny-random" in summary["signature"]
    )


@pytest.mark.slow
def test_rescore_an_inspect_log_beside_it(harness_tiny, tmp_path):
    pytest.importorskip("inspect_ai")
    import datetime

    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import ModelOutput

    environ = env(harness_tiny["q2"], tmp_path)
    pairs = [
        ("Bob Ross hosted The Joy of Painting on PBS.", "Bob Ross hosted The Joy of Painting on PBS."),
        ("It aired in Canada and Latin America.", "The show aired in the US, Canada and Europe."),
        ("", "Paris is the capital of France."),
        ("Paris is the capital of Spain.", "Paris is the capital of France."),
    ]
    spec = EvalSpec(
        created=datetime.datetime(2026, 1, 1).isoformat(),
        task="t",
        dataset=EvalDataset(),
        model="hf/local",
        config=EvalConfig(),
    )
    log = tmp_path / "logs" / "run.eval"
    log.parent.mkdir()
    write_eval_log(
        EvalLog(
            eval=spec,
            status="success",
            samples=[
                EvalSample(
                    id=i + 1,
                    epoch=1,
                    input="q",
                    target="",
                    metadata={"knowledge": k},
                    output=ModelOutput.from_content("hf/local", r),
                )
                for i, (r, k) in enumerate(pairs)
            ],
        ),
        str(log),
    )
    before = _sha(log)
    res = _q2(["rescore", str(log), "--tiny", "--quiet"], environ, tmp_path)
    assert "Rescored 3/4 samples of the inspect log (1 empty, 0 bad" in res.stdout
    assert _sha(log) == before
    got = [json.loads(x) for x in (log.parent / "run.eval.q2.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [g["status"] for g in got] == ["scored", "scored", "empty", "scored"]
    _compare(got, _cli_spans(pairs, tmp_path, environ))
