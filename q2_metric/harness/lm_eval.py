"""lm-evaluation-harness tasks: the model writes a knowledge-grounded reply, Q² scores it.

The task YAML files are in `lm_eval_tasks/` (`lm_eval --include_path "$(q2-metric lm-eval-path)"`,
or `TaskManager(include_path=q2_metric.harness.lm_eval_include_path())`); their `utils.py`
imports what it needs from here, so that the state (one engine per process) lives in this module.

- `q2_wow`: the 544 annotated Wizard of Wikipedia contexts the package ships (topic, the user's
  message, the knowledge sentence); the model writes the wizard's reply.
- `q2_dialogue`: any user file in the formats `q2 score` reads (CSV, JSONL, Parquet, a datasets
  folder) with a knowledge column and a dialogue-history column (turns oldest first, joined by
  ` ||| `): `--metadata '{"path": "dialogues.csv"}'`.

`process_results` only records each (reply, knowledge) pair; the aggregation of the first figure
scores all of the run's pairs in one engine call (or calls of at most `max_batch` replies, when the
options set it), and the other figures reuse that result (`Q2Engine.collect`). Q² options go in `--metadata` under `q2_options`
(`{"q2_options": {"tiny": true, "batch_size": 16}}`), checked by the project's options path.
"""

from __future__ import annotations

import json
import math
from typing import Any

from q2_metric.harness.batcher import HARNESS_OPTIONS, engine_for, harness_config

KNOWLEDGE_COL = "knowledge"
HISTORY_COL = "history"


# -- datasets ------------------------------------------------------------------------------------

def _options_json(q2_options: Any) -> str:
    if q2_options is None:
        q2_options = {}
    if isinstance(q2_options, str):
        q2_options = json.loads(q2_options)
    if not isinstance(q2_options, dict):
        raise ValueError(f"Invalid q2_options={q2_options!r}: use a JSON object of Q² options.")
    harness_config(q2_options)  # checked now, before the model generates anything
    return json.dumps(q2_options, sort_keys=True)


def _dataset(rows: list[dict[str, Any]]) -> dict[str, Any]:
    import datasets

    return {"test": datasets.Dataset.from_list(rows)}


def wow_dataset(q2_options: Any = None, limit_contexts: int | None = None, **_: Any) -> dict[str, Any]:
    """`q2_wow`'s documents: the annotated WoW contexts (topic, message, knowledge, gold)."""
    from q2_metric.harness import wow_contexts

    options = _options_json(q2_options)
    rows = wow_contexts(limit_contexts)
    return _dataset([{"topic": r["topic"], "message": r["message"], "knowledge": r["knowledge"],
                      "gold": r["gold"], "q2_options": options} for r in rows])


def dialogue_dataset(path: str | None = None, knowledge_col: str = KNOWLEDGE_COL, history_col: str = HISTORY_COL,
                     q2_options: Any = None, **_: Any) -> dict[str, Any]:
    """`q2_dialogue`'s documents: a user file's knowledge and dialogue history (rows that cannot be
    read are left out, as `q2 score` leaves them unscored)."""
    from q2_metric.io import read_rows
    from q2_metric.steps.coref import split_history

    if not path:
        raise ValueError("q2_dialogue needs the file to read: --metadata '{\"path\": \"dialogues.csv\"}' "
                         "(a knowledge column and a history column, turns joined by ' ||| ').")
    options = _options_json(q2_options)
    rows = read_rows(path, response_col=history_col, knowledge_col=knowledge_col)
    return _dataset([{"history": split_history(r.fields[history_col]), "knowledge": r.fields[knowledge_col],
                      "q2_options": options} for r in rows if r.error is None])


# -- prompts -------------------------------------------------------------------------------------

def wow_doc_to_text(doc: dict[str, Any]) -> str:
    return (f"Topic: {doc['topic']}\nKnowledge: {doc['knowledge']}\nApprentice: {doc['message']}\n"
            "Wizard:")


def dialogue_doc_to_text(doc: dict[str, Any]) -> str:
    turns = list(doc["history"])
    # the last turn is the user's; speakers alternate back from it
    named = [("User" if (len(turns) - 1 - i) % 2 == 0 else "Assistant") + ": " + t for i, t in enumerate(turns)]
    return "\n".join([f"Knowledge: {doc['knowledge']}", *named, "Assistant:"])


# -- scoring -------------------------------------------------------------------------------------

FIGURES = ("q2", "q2_no_nli", "coverage", "signature")


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Record the pair; scoring happens once, over the whole run, at aggregation."""
    item = (results[0].strip(), doc["knowledge"], doc.get("q2_options") or "{}")
    return {name: item for name in FIGURES}


def _collected(items: list[tuple[str, str, str]]):
    options = {o for _, _, o in items}
    if len(options) != 1:
        raise ValueError(f"One task run has {len(options)} sets of Q² options; use one per task.")
    engine, max_batch = engine_for(json.loads(options.pop()))
    return engine.collect([(r, k) for r, k, _ in items], max_batch or max(len(items), 1))


def _figure(value: float) -> float | str:
    return "n/a" if value is None or math.isnan(value) else float(value)


def agg_q2(items: list) -> float | str:
    return _figure(_collected(items).system.q2)


def agg_q2_no_nli(items: list) -> float | str:
    return _figure(_collected(items).system.q2_no_nli)


def agg_coverage(items: list) -> float | str:
    return _figure(_collected(items).system.coverage)


def agg_signature(items: list) -> str:
    """The short signature in the table (`q2:...|models:...|sig:<hash of the full one>`); the full
    one goes to the log."""
    import logging

    collected = _collected(items)
    if collected.signature is None:
        return " / ".join(collected.signatures)
    logging.getLogger("q2_metric").info("Q² signature: %s", collected.signature)
    return collected.signature.short()


# -- lm-eval's own route to `evaluate` metrics (`hf_evaluate: true`) -------------------------------

def evaluate_figure(values: list) -> Any:
    """Aggregation of the figures the `evaluate` module returns for each reply (lm-eval calls
    `compute` once per reply and keeps each key): numbers -> their mean over the scored replies
    (q2, q2_no_nli, coverage), counts -> their sum, per-reply score lists -> the mean of their
    scores, the signature -> itself."""
    if values and all(isinstance(v, str) for v in values):
        return " / ".join(dict.fromkeys(values))
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return sum(values)
    flat = [x for v in values for x in (v if isinstance(v, list) else [v])]
    kept = [float(x) for x in flat if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)]
    return sum(kept) / len(kept) if kept else "n/a"


__all__ = ["FIGURES", "HARNESS_OPTIONS", "agg_coverage", "agg_q2", "agg_q2_no_nli", "agg_signature",
           "dialogue_dataset", "dialogue_doc_to_text", "evaluate_figure", "process_results", "wow_dataset",
           "wow_doc_to_text"]
