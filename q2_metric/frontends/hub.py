"""Getting Q² into the Hugging Face tools: `evaluate.load("q2")`, model cards, saved results."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

MODULE_FILE = Path(__file__).resolve().parent.parent / "q2_metric.py"


def register_evaluate_module(dynamic_modules_path: str | None = None) -> Path:
    """Put the module where `evaluate.load("q2")` finds it offline (evaluate's module cache, as if
    it had been loaded from the Hub's `evaluate-metric/q2`). Returns the written file."""
    from evaluate.loading import init_dynamic_modules

    root = Path(dynamic_modules_path or init_dynamic_modules())
    source = MODULE_FILE.read_text(encoding="utf-8")
    folder = root / "metrics" / "evaluate-metric--q2"
    target = folder / hashlib.sha256(source.encode()).hexdigest()
    target.mkdir(parents=True, exist_ok=True)
    for pkg in (root / "metrics", folder, target):
        (pkg / "__init__.py").touch()
    (target / "q2.py").write_text(source, encoding="utf-8")
    return target / "q2.py"


def eval_results(results: dict[str, Any], *, dataset_name: str, dataset_type: str,
                 dataset_split: str | None = None, dataset_config: str | None = None,
                 task_type: str = "text-generation", task_name: str = "Dialogue response generation"):
    """`huggingface_hub.EvalResult`s for q2, q2_no_nli and coverage (the signature as config)."""
    from huggingface_hub import EvalResult

    names = {"q2": "Q²", "q2_no_nli": "Q² (token F1, no NLI)", "coverage": "Q² coverage"}
    return [
        EvalResult(task_type=task_type, task_name=task_name, dataset_type=dataset_type,
                   dataset_name=dataset_name, dataset_split=dataset_split, dataset_config=dataset_config,
                   metric_type=f"q2/{key}" if key != "q2" else "q2", metric_name=names[key],
                   metric_value=round(float(results[key]), 4), metric_config=results.get("signature"))
        for key in names if key in results and not math.isnan(float(results[key]))
    ]


def card_metadata(results: dict[str, Any], model_name: str, existing: dict | None = None, **dataset) -> dict:
    """Model-card metadata with Q² results merged into `model-index` (same metric+dataset replaced)."""
    from huggingface_hub.repocard_data import eval_results_to_model_index, model_index_to_eval_results

    meta = dict(existing or {})
    new = eval_results(results, **dataset)
    old = []
    if meta.get("model-index"):
        _, old = model_index_to_eval_results(meta["model-index"])
    keys = {(r.metric_type, r.dataset_type, r.dataset_split, r.dataset_config) for r in new}
    kept = [r for r in old if (r.metric_type, r.dataset_type, r.dataset_split, r.dataset_config) not in keys]
    meta["model-index"] = eval_results_to_model_index(model_name, kept + new)
    return meta


def write_model_card(card: str | Path, results: dict[str, Any], model_name: str, **dataset) -> dict:
    """Edit a README.md on disk (created if missing); return the metadata written."""
    from huggingface_hub import metadata_load, metadata_save

    path = Path(card)
    if not path.exists():
        path.write_text(f"# {model_name}\n", encoding="utf-8")
    meta = card_metadata(results, model_name, metadata_load(path), **dataset)
    metadata_save(path, meta)
    return meta


def push_model_card(repo_id: str, results: dict[str, Any], model_name: str, token: str | None = None,
                    **dataset) -> str:
    """Update the model card of `repo_id` on the Hub (needs a write token)."""
    from huggingface_hub import metadata_update

    meta = card_metadata(results, model_name, **dataset)
    return metadata_update(repo_id, {"model-index": meta["model-index"]}, overwrite=True, token=token)


def save_results(path: str | Path, results: dict[str, Any], **extra: Any) -> Path:
    """`evaluate.save` of the figures (signature included) plus any extra parameters."""
    import evaluate

    keep = {k: v for k, v in results.items() if k != "details"}
    return Path(evaluate.save(str(path), **keep, **extra))
