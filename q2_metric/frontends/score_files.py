"""`q2 score`: score a file in chunks, with an on-disk cache that makes runs resumable."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q2_metric.frontends.io import Row, read_rows, write_table
from q2_metric.question_filter import VALID
from q2_metric.scorer import Q2Scorer
from q2_metric.signature import config_fingerprint
from q2_metric.system_score import SystemScore, system_score

STEP_COLUMNS = ["row", "line", "candidate", "question", "rank", "status", "response_answer",
                "knowledge_answer", "f1", "nli_label", "score", "score_no_nli"]


def pair_key(response: str, knowledge: str) -> str:
    return hashlib.sha256(json.dumps([response, knowledge]).encode()).hexdigest()


class ScoreCache:
    """Append-only JSONL of response results, one folder per config fingerprint."""

    def __init__(self, root: str | Path, fingerprint: str) -> None:
        self.path = Path(root) / fingerprint / "responses.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.entries: dict[str, dict] = {}
        if self.path.exists():
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                        self.entries[entry["key"]] = entry["result"]
                    except (ValueError, KeyError):
                        continue  # a line cut by an interruption: that row is scored again

    def add(self, items: list[tuple[str, dict]]) -> None:
        import os

        with open(self.path, "a", encoding="utf-8") as f:
            for key, result in items:
                f.write(json.dumps({"key": key, "result": result}) + "\n")
                self.entries[key] = result
            f.flush()
            os.fsync(f.fileno())


@dataclass
class ScoreReport:
    system: SystemScore
    num_rows: int
    num_bad: int
    num_cached: int
    num_scored_now: int
    bad_rows: list[str]
    signature: str


def score_file(scorer: Q2Scorer, input_path: str | Path, output_path: str | Path, *,
               response_col: str = "response", knowledge_col: str = "knowledge", prefix: str = "",
               steps_path: str | Path | None = None, cache_dir: str | Path | None = ".q2_cache",
               chunk_size: int = 64, progress: bool = False) -> ScoreReport:
    """Score every good row of `input_path`; write scores (and steps) atomically at the end."""
    rows = read_rows(input_path, response_col, knowledge_col)
    good = [r for r in rows if r.error is None]
    fingerprint = config_fingerprint(scorer.config, scorer.component_names())
    cache = ScoreCache(cache_dir, fingerprint) if cache_dir else None
    results: dict[str, dict] = dict(cache.entries) if cache else {}

    keys = {r.number: pair_key(r.fields[response_col], r.fields[knowledge_col]) for r in good}
    todo = list(dict.fromkeys(k for k in keys.values() if k not in results))
    texts = {keys[r.number]: (r.fields[response_col], r.fields[knowledge_col]) for r in good}
    cached = sum(1 for r in good if keys[r.number] in results)

    chunks = [todo[i:i + chunk_size] for i in range(0, len(todo), chunk_size)]
    bar = None
    if progress and chunks:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(todo), unit="resp", desc="Q²")
    for chunk in chunks:
        scored = scorer.score([texts[k][0] for k in chunk], [texts[k][1] for k in chunk])
        items = [(k, res.to_dict()) for k, res in zip(chunk, scored.responses)]
        if cache:
            cache.add(items)
        results.update(items)
        if bar:
            bar.update(len(chunk))
    if bar:
        bar.close()

    system = write_results(rows, keys, results, output_path, prefix=prefix, steps_path=steps_path)
    return ScoreReport(system=system, num_rows=len(rows), num_bad=len(rows) - len(good),
                       num_cached=cached, num_scored_now=len(todo),
                       bad_rows=[r.error for r in rows if r.error], signature=str(scorer.signature()))


def write_results(rows: list[Row], keys: dict[int, str], results: dict[str, dict], output_path: str | Path, *,
                  prefix: str = "", steps_path: str | Path | None = None) -> SystemScore:
    """Write every row with its scores (`keys`: row number -> pair key, `results`: pair key ->
    response dict), and the steps file; return the system score over the good rows."""
    out_records, step_records = [], []
    per_row = []
    for row in rows:
        record = dict(row.fields)
        if row.error:
            record.update({f"{prefix}q2": None, f"{prefix}q2_no_nli": None, f"{prefix}error": row.error})
        else:
            res = results[keys[row.number]]
            per_row.append(res)
            valid = [q for q in res["questions"] if q["status"] == VALID]
            record.update({f"{prefix}q2": _num(res["q2"]), f"{prefix}q2_no_nli": _num(res["q2_no_nli"]),
                           f"{prefix}fallback": res["fallback"], f"{prefix}num_questions": len(valid),
                           f"{prefix}reason": res["reason"] or "", f"{prefix}error": ""})
            for q in res["questions"]:
                step_records.append({"row": row.number, "line": row.line, **{c: q.get(c) for c in STEP_COLUMNS[2:]}})
        out_records.append(record)

    columns = list(dict.fromkeys(c for rec in out_records for c in rec))
    write_table(output_path, out_records, columns)
    if steps_path:
        write_table(steps_path, step_records, STEP_COLUMNS)

    all_valid = [q for res in per_row for q in res["questions"] if q["status"] == VALID]
    system = system_score([_nan(r["q2"]) for r in per_row], [_nan(r["q2_no_nli"]) for r in per_row],
                          [any(q["status"] == VALID for q in r["questions"]) for r in per_row],
                          len(all_valid), sum(not q["knowledge_has_answer"] for q in all_valid))
    return system


def _num(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _nan(value: Any) -> float:
    return float("nan") if value is None else float(value)


def summary_dict(report: ScoreReport) -> dict[str, Any]:
    return {**report.system.to_dict(), "signature": report.signature, "num_rows": report.num_rows,
            "num_bad_rows": report.num_bad}

