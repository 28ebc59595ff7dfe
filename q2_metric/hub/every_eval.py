"""Q²'s results as an Every Eval Ever record (the EvalEval Coalition's shared schema of evaluation
results, `every-eval-ever` 0.3's `eval.schema.json` and `instance_level_eval.schema.json`),
written beside the Hub's `.eval_results` by `q2 publish --every-eval-ever DIR`:

- `DIR/data/<benchmark>/<developer>/<model>/<uuid>.json`: the aggregate record of the run of a
  `q2 score` summary: the model whose responses were scored (`model_info`), Q² as the library
  (`eval_library`, with the full signature), and one result per variant (Q²-NLI, Q²-F1) on
  0-1, with the standard deviation over the responses; the operating point (or threshold) the
  run decided at, where it had one;
- `DIR/data/<benchmark>/<developer>/<model>/<uuid>_samples.jsonl`: the instance-level rows, one
  per scored response and variant: the knowledge as the input and its reference, the response as
  the output, the response's score, and whether it is consistent at the run's threshold (the
  default 0.5 where the run had none, said in the record). A row Q² could not score has no row.

The layout is the datastore's (`data/<collection>/<developer>/<model>/<uuid4>.json`, the paths
the package's validator checks); a fresh UUID4 per export, so that no export overwrites another.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from q2_metric.display import decide
from q2_metric.hub.publish import PublishError
from q2_metric.version import PAPER

SCHEMA_VERSION = "0.3.0"
DEFAULT_THRESHOLD = 0.5
VARIANTS = {  # column -> (result id, display name)
    "q2": ("q2-nli", "Q²-NLI"),
    "q2_no_nli": ("q2-f1", "Q²-F1"),
}
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class EveryEvalRecord:
    """The two files of one export: their paths under the export folder and their contents."""

    aggregate_path: str
    aggregate: dict[str, Any]
    samples_path: str
    samples: list[dict[str, Any]]

    def samples_text(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in self.samples)

    def aggregate_text(self) -> str:
        return json.dumps(self.aggregate, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _component(text: str, what: str) -> str:
    """A datastore path component: letters, digits, '.', '_' and '-' (slashes flattened to '_')."""
    flat = text.strip().replace("/", "_")
    if not _COMPONENT.match(flat) or flat.endswith(".") or flat.lower() == "data":
        raise PublishError(
            f"{what} '{text}' cannot name a datastore folder: use letters, digits, '.', '_' and '-'."
        )
    return flat


def _number(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def every_eval_record(
    summary: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    *,
    model_id: str,
    benchmark: str,
    dataset_id: str | None,
    date: str,
    retrieved: float,
    source_name: str | None = None,
    source_url: str | None = None,
    organization: str = "q2-metric",
    record_id: str | None = None,
) -> EveryEvalRecord:
    """The export of a `q2 score` run: its summary (`--summary`: the figures, the signature and
    any threshold or operating point) and its output rows (`response`, `knowledge`, `q2`,
    `q2_no_nli`, and `id` where the input had one). `model_id` names the model whose responses
    were scored (OWNER/NAME), `benchmark` the collection, `dataset_id` the benchmark's Hub dataset
    where it is on the Hub; `retrieved` is the Unix time of the export."""
    from q2_metric.version import __version__

    if "/" not in model_id or not all(part.strip() for part in model_id.split("/")):
        raise PublishError(
            f"--model-id '{model_id}' must be OWNER/NAME, the model whose responses were scored."
        )
    developer, _, name = model_id.partition("/")
    collection = _component(benchmark, "The benchmark")
    folder = f"data/{collection}/{_component(developer, '--model-id')}/{_component(name, '--model-id')}"
    ident = record_id or str(uuid.uuid4())
    signature = str(summary.get("signature") or "unknown")
    op = summary.get("operating_point") if isinstance(summary.get("operating_point"), dict) else None
    threshold = _number(summary.get("threshold"))
    decided = threshold if threshold is not None else DEFAULT_THRESHOLD
    decision_note = f"consistent iff Q² > {decided:g}" + (
        f" (operating point {op.get('rule')} on {op.get('dataset')}, op:{op.get('signature')})"
        if op
        else " (the run's --threshold)"
        if threshold is not None
        else " (no threshold was set: the default 0.5)"
    )
    evaluation_id = f"{collection}/{model_id}/{int(retrieved)}"
    source_data: dict[str, Any] = (
        {"dataset_name": benchmark, "source_type": "hf_dataset", "hf_repo": dataset_id}
        if dataset_id
        else {"dataset_name": benchmark, "source_type": "other"}
    )
    results, samples = [], []
    for column, (result_id, label) in VARIANTS.items():
        value = _number(summary.get(column))
        if value is None:
            continue
        scored: list[tuple[int, Mapping[str, Any], float]] = []
        for i, r in enumerate(rows, 1):
            s = _number(r.get(column))
            if s is not None:
                scored.append((i, r, s))
        details = {"signature": signature, "decision": decision_note}
        if op:
            details["operating_point"] = json.dumps(op, sort_keys=True)
        uncertainty: dict[str, Any] = {"num_samples": len(scored)}
        if len(scored) > 1:
            uncertainty["standard_deviation"] = statistics.stdev(s for *_, s in scored)
        results.append(
            {
                "evaluation_result_id": result_id,
                "evaluation_name": f"{benchmark} {label}",
                "source_data": source_data,
                "evaluation_timestamp": date,
                "metric_config": {
                    "evaluation_description": f"{label}: the mean Q² over the responses scored "
                    "(factual consistency of each response with its knowledge; Honovich et al., 2021)",
                    "metric_id": f"q2.{result_id.partition('-')[2]}",
                    "metric_name": label,
                    "metric_kind": "factual_consistency",
                    "metric_unit": "proportion",
                    "lower_is_better": False,
                    "score_type": "continuous",
                    "min_score": 0,
                    "max_score": 1,
                    "additional_details": details,
                },
                "score_details": {
                    "score": value,
                    "details": {
                        k: str(summary[k])
                        for k in (
                            "coverage",
                            "num_rows",
                            "num_bad_rows",
                            "num_consistent",
                            "num_inconsistent",
                        )
                        if summary.get(k) is not None
                    },
                    "uncertainty": uncertainty,
                },
            }
        )
        for i, row, score in scored:
            response, knowledge = str(row.get("response") or ""), str(row.get("knowledge") or "")
            sample_id = str(row.get("id") or f"row-{i}")
            samples.append(
                {
                    "schema_version": SCHEMA_VERSION,
                    "evaluation_id": evaluation_id,
                    "model_id": model_id,
                    "evaluation_name": f"{benchmark} {label}",
                    "evaluation_result_id": result_id,
                    "sample_id": sample_id,
                    "sample_hash": hashlib.sha256((knowledge + knowledge).encode()).hexdigest(),
                    "interaction_type": "single_turn",
                    "input": {"raw": knowledge, "reference": [knowledge]},
                    "output": {"raw": [response]},
                    "answer_attribution": [
                        {
                            "turn_idx": 0,
                            "source": "output.raw",
                            "extracted_value": response,
                            "extraction_method": "q2",
                            "is_terminal": True,
                        }
                    ],
                    "evaluation": {"score": score, "is_correct": decide(score, decided) == "consistent"},
                    "metadata": {"decision": decision_note, "reason": str(row.get("reason") or "")},
                }
            )
    if not results:
        raise PublishError("The results hold no Q² figure (q2 or q2_no_nli) to export.")
    samples_path = f"{folder}/{ident}_samples.jsonl"
    record = EveryEvalRecord(f"{folder}/{ident}.json", {}, samples_path, samples)
    aggregate = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "evaluation_timestamp": date,
        "retrieved_timestamp": str(int(retrieved)),
        "source_metadata": {
            "source_name": source_name or "Q² (Honovich et al., 2021)",
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "source_organization_url": source_url or PAPER,
            "evaluator_relationship": "third_party",
        },
        "eval_library": {
            "name": "q2-metric",
            "version": __version__,
            "additional_details": {"signature": signature},
        },
        "model_info": {
            "name": name,
            "id": model_id,
            "developer": developer,
            "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"},
        },
        "evaluation_results": results,
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": samples_path,
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(record.samples_text().encode()).hexdigest(),
            "total_rows": len(samples),
        },
    }
    return EveryEvalRecord(record.aggregate_path, aggregate, samples_path, samples)
