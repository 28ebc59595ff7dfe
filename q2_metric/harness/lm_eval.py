"""lm-evaluation-harness tasks: the model writes a knowledge-grounded reply, Q² scores it.

The task YAML files are in `lm_eval_tasks/` (`lm_eval --include_path "$(python -m q2_metric.harness lm-eval-path)"`,
or `TaskManager(include_path=q2_metric.harness.lm_eval_include_path())`); their `utils.py`
imports what it needs from here, so that the state (the runtime's one `Engine` per process and configuration) lives in this module.

- `q2_wow`: the 544 annotated Wizard of Wikipedia contexts the package ships (topic, the user's
  message, the knowledge sentence); the model writes the wizard's reply.
- `q2_dialogue`: any user file in the formats `q2 score` reads (CSV, JSONL, Parquet, a datasets
  folder) with a knowledge column and a dialogue-history column (turns oldest first, joined by
  ` ||| `): `--metadata '{"path": "dialogues.csv"}'`. A row that cannot be read is reported (one
  line on stderr naming its row) and counted as `bad`.

Q² options go in `--metadata` under `q2_options` (`{"q2_options": {"tiny": true, "batch_size":
16}}`); they are checked, and the Q² models found, when the task's documents are built - before
the model generates anything. A bad option, a missing model or an unreadable file is one sentence
that names the option as lm-eval takes it (`q2_options["qg_model"]` in `--metadata`).

`process_results` only records each reply; the aggregation of the first figure scores all of the
run's replies in one engine call (or calls of at most `max_batch` replies, when the options set
it), writing a line per Q² stage on stderr, and the other figures reuse that result. The figures:
`q2`, `q2_no_nli`, `coverage`, the counts `scored`, `empty` (an empty reply or knowledge:
unscored) and `bad`, and the `signature` in its short form (`Signature.short`, whose `sig:` hash
names the full one: the full signature, 400 characters, made lm-eval's table as wide; it is printed
on stderr and held by every sample record). With `--log_samples`, each sample's `q2` entry holds
the reply's Q², Q² without NLI, its status, the one-sentence reason (the `reason` column of `q2
score`) and the full signature.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from q2_metric.display import tiny_note_once
from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.frontend import Outcome, decision_of
from q2_metric.harness import one_line_errors, under_command
from q2_metric.runtime.cache import engine_for

KNOWLEDGE_COL = "knowledge"
HISTORY_COL = "history"
FIGURES = ("q2", "q2_no_nli", "coverage", "scored", "empty", "bad", "signature")
METADATA = "--metadata"
TINY_HINT = '`--metadata \'{"q2_options": {"tiny": true}}\'`'


def spell(name: str) -> str:
    """A Q² option as lm-eval takes it: a key of `q2_options` in `--metadata`."""
    return f'q2_options["{name}"]'


# -- errors in lm-eval's words -------------------------------------------------------------------


if under_command("lm_eval"):
    one_line_errors()


# -- lm-eval's git lookup, quiet -----------------------------------------------------------------


def quiet_git_commit_hash() -> str | None:
    """lm-eval's `get_git_commit_hash`, with git's stderr kept off the terminal: lm-eval logs the
    commit of the folder it runs in (`git describe --always`), and run from a folder that is no
    git repository (a user's work folder, the docs' and tests' empty folders) git printed "fatal:
    not a git repository" at every run with these tasks. The same value: the commit, else lm-eval's
    own fallback (`get_commit_from_path` on the working folder)."""
    import os
    import subprocess

    from lm_eval.loggers.utils import get_commit_from_path

    try:
        done = subprocess.run(["git", "describe", "--always"], capture_output=True, check=True)
        return done.stdout.strip().decode()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return get_commit_from_path(os.getcwd())


def _quiet_lm_evals_git() -> None:
    """lm-eval's evaluator asks `quiet_git_commit_hash` once these tasks are loaded."""
    try:
        from lm_eval import evaluator
    except ImportError:  # another lm-eval layout: its own call, as it is
        return
    if getattr(evaluator, "get_git_commit_hash", None) is not None:
        evaluator.get_git_commit_hash = quiet_git_commit_hash


_quiet_lm_evals_git()


_FLAGS = (  # the reader's advice in `q2 score` flags -> the same in q2_dialogue's --metadata keys
    ("--response-col and --knowledge-col", '"history_col" and "knowledge_col" in --metadata'),
    ("--response-col", '"history_col" in --metadata'),
    ("--history-col", '"history_col" in --metadata'),
    ("--knowledge-col", '"knowledge_col" in --metadata'),
    ("--encoding", '"encoding" in --metadata'),
)


def _file_error(err: Q2InputError, path: str) -> Q2InputError:
    text = str(err)
    if "--allow-empty" in text:
        return Q2InputError(
            f"The file '{path}' given to q2_dialogue has no data rows; give a file with at least one."
        )
    for flag, words in _FLAGS:
        text = text.replace(flag, words)
    return Q2InputError(text)


# -- datasets ------------------------------------------------------------------------------------


def _options(q2_options: Any) -> dict[str, Any]:
    if q2_options is None:
        return {}
    if isinstance(q2_options, str):
        try:
            q2_options = json.loads(q2_options)
        except ValueError:
            q2_options = None
    if not isinstance(q2_options, dict):
        raise Q2OptionError(
            f"Invalid q2_options in {METADATA}: use a JSON object of Q² options, e.g. "
            f'{METADATA} \'{{"q2_options": {{"tiny": true}}}}\'.'
        )
    return q2_options


def _checked(q2_options: Any) -> str:
    """The options checked and the models found now, before the model generates anything."""
    options = _options(q2_options)
    decision_of(options, spell)  # the operating point read (a bad file: one sentence) first
    engine_for(options, spell=spell, check=True, tiny_hint=TINY_HINT)
    return json.dumps(options, sort_keys=True)


def _dataset(rows: list[dict[str, Any]]) -> dict[str, Any]:
    import datasets

    return {"test": datasets.Dataset.from_list(rows)}


def wow_dataset(q2_options: Any = None, limit_contexts: int | None = None, **_: Any) -> dict[str, Any]:
    """`q2_wow`'s documents: the annotated WoW contexts (topic, message, knowledge, gold)."""
    from q2_metric.harness import wow_contexts

    options = _checked(q2_options)
    rows = wow_contexts(limit_contexts)
    return _dataset(
        [
            {
                "topic": r["topic"],
                "message": r["message"],
                "knowledge": r["knowledge"],
                "gold": r["gold"],
                "q2_key": f"doc {i}",
                "q2_options": options,
                "q2_unread": "[]",
            }
            for i, r in enumerate(rows)
        ]
    )


def dialogue_dataset(
    path: str | None = None,
    knowledge_col: str = KNOWLEDGE_COL,
    history_col: str = HISTORY_COL,
    q2_options: Any = None,
    encoding: str = "utf-8",
    **_: Any,
) -> dict[str, Any]:
    """`q2_dialogue`'s documents: a user file's knowledge and dialogue history. A row that cannot
    be read is reported on stderr with its row, and counted as `bad` in the results."""
    from q2_metric.io import read_rows
    from q2_metric.io.histories import read_histories

    if not path:
        raise Q2InputError(
            'q2_dialogue needs the file to read: --metadata \'{"path": "dialogues.csv"}\' '
            "(a knowledge column and a history column, turns joined by ' ||| ')."
        )
    options = _checked(q2_options)
    try:
        rows = read_rows(path, response_col=history_col, knowledge_col=knowledge_col, encoding=encoding)
        turns = read_histories(path, rows, history_col)
    except Q2InputError as err:
        raise _file_error(err, str(path)) from None
    unread = [f"row {r.number} ({r.error})" for r in rows if r.error is not None]
    for line in unread:
        print(f"q2_dialogue: {line} not read; counted as bad.", file=sys.stderr)
    return _dataset(
        [
            {
                "history": turns[r.number],
                "knowledge": r.fields[knowledge_col],
                "q2_key": f"row {r.number}",
                "q2_options": options,
                "q2_unread": json.dumps(unread),
            }
            for r in rows
            if r.error is None
        ]
    )


# -- prompts -------------------------------------------------------------------------------------


def wow_doc_to_text(doc: dict[str, Any]) -> str:
    return f"Topic: {doc['topic']}\nKnowledge: {doc['knowledge']}\nApprentice: {doc['message']}\nWizard:"


def dialogue_doc_to_text(doc: dict[str, Any]) -> str:
    turns = list(doc["history"])
    # the last turn is the user's; speakers alternate back from it
    named = [
        ("User" if (len(turns) - 1 - i) % 2 == 0 else "Assistant") + ": " + t for i, t in enumerate(turns)
    ]
    return "\n".join([f"Knowledge: {doc['knowledge']}", *named, "Assistant:"])


# -- scoring -------------------------------------------------------------------------------------


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Record the reply; scoring happens once, over the whole run, at aggregation, which writes the
    reply's Q², status and reason into this same record (so into `--log_samples`' file)."""
    reply = results[0]
    item = {
        "key": doc.get("q2_key") or "doc",
        "reply": reply.strip() if isinstance(reply, str) else reply,
        "knowledge": doc["knowledge"],
        "options": doc.get("q2_options") or "{}",
        "unread": doc.get("q2_unread") or "[]",
    }
    return dict.fromkeys(FIGURES, item)


_REPORTED: list[int] = []  # the outcome whose per-reply results and summary were written last


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _collected(items: list[dict[str, Any]]) -> tuple[Outcome, int]:
    """The run's outcome and its unread rows; the first time, each record gets its result and
    stderr gets the counts and the full signature."""
    from q2_metric.progress import line_progress

    options = {i["options"] for i in items}
    if len(options) != 1:
        raise Q2OptionError(f"One task run has {len(options)} sets of q2_options; use one per task.")
    given = json.loads(options.pop())
    decision = decision_of(given, spell)
    engine, max_batch = engine_for(given, spell=spell)
    unread = len({u for i in items for u in json.loads(i["unread"])})
    outcome = engine.collect(
        [decision.item(i["key"], i["reply"], i["knowledge"]) for i in items],
        max_batch or max(len(items), 1),
        progress=line_progress("Q²"),
    )
    outcome.signature = decision.sign(
        outcome.signature
    )  # an operating point's thr and op fields (idempotent)
    for record, result in zip(items, outcome.items):
        score = result.score
        record.update(
            q2=_number(result.q2),
            q2_no_nli=_number(score.q2_no_nli) if score is not None else None,
            status=result.status,
            reason=result.reason,
            signature=str(outcome.signature),  # the full one (the results hold its short form)
        )
    if [id(outcome)] != _REPORTED:
        _REPORTED[:] = [id(outcome)]
        counts = outcome.counts
        print(
            f"Q²: {counts['scored']} scored, {counts['empty']} empty (unscored), {counts['bad'] + unread} bad",
            file=sys.stderr,
        )
        print(f"Q² signature: {outcome.signature}", file=sys.stderr)
        # said once: here, unless the models' check already logged it (lm-eval shows that line)
        note = tiny_note_once(engine.config)
        if note:
            print(f"Q²: {note}", file=sys.stderr)
    return outcome, unread


def _figure(value: float) -> float | str:
    return "n/a" if value is None or math.isnan(value) else float(value)


def agg_q2(items: list) -> float | str:
    return _figure(_collected(items)[0].system.q2)


def agg_q2_no_nli(items: list) -> float | str:
    return _figure(_collected(items)[0].system.q2_no_nli)


def agg_coverage(items: list) -> float | str:
    return _figure(_collected(items)[0].system.coverage)


def agg_scored(items: list) -> int:
    return _collected(items)[0].counts["scored"]


def agg_empty(items: list) -> int:
    """Replies (or knowledge) without a visible character: unscored, left out of the figures."""
    return _collected(items)[0].counts["empty"]


def agg_bad(items: list) -> int:
    """Replies that are no text, and (q2_dialogue) the file's rows that could not be read."""
    outcome, unread = _collected(items)
    return outcome.counts["bad"] + unread


def agg_signature(items: list) -> str:
    """The signature's short form (`q2 score --short`'s), which keeps lm-eval's table narrow; its
    `sig:` hash names the full signature, which every sample record holds and stderr shows."""
    return _collected(items)[0].signature.short()


def _short(value: str) -> str:
    """A signature's short form; any other text as it is."""
    from q2_metric.signature import Signature

    return Signature.parse(value).short() if value.startswith("q2:") else value


def _direction_only(name: str) -> Any:
    """A metric of lm-eval's `evaluate` route that computes nothing (an empty dict per reply) and
    only declares, under `name`, the direction of the `evaluate` module's key `name` (lm-eval gives
    every key of `compute`'s result the first metric's, `q2`'s higher-is-better, unless declared)."""

    def declared(references: Any = None, predictions: Any = None, **kwargs: Any) -> dict[str, Any]:
        return {}

    declared.__name__ = declared.__qualname__ = name
    return declared


# the `evaluate` module's keys that are no higher-is-better figure (`q2_wow_evaluate.yaml`)
no_answer_share = _direction_only("no_answer_share")
num_skipped = _direction_only("num_skipped")
num_responses = _direction_only("num_responses")
num_valid_questions = _direction_only("num_valid_questions")
signature = _direction_only("signature")


# -- lm-eval's own route to `evaluate` metrics (`hf_evaluate: true`) -------------------------------


def evaluate_figure(values: list) -> Any:
    """Aggregation of the figures the `evaluate` module returns for each reply (lm-eval calls
    `compute` once per reply and keeps each key): numbers -> their mean over the scored replies
    (q2, q2_no_nli, coverage), counts -> their sum, per-reply score lists -> the mean of their
    scores, the signature -> its short form (the full one is in each sample's record)."""
    if values and all(isinstance(v, str) for v in values):
        return " / ".join(dict.fromkeys(_short(v) for v in values))
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return sum(values)
    flat = [x for v in values for x in (v if isinstance(v, list) else [v])]
    kept = [
        float(x) for x in flat if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
    ]
    return sum(kept) / len(kept) if kept else "n/a"


__all__ = [
    "FIGURES",
    "agg_bad",
    "agg_coverage",
    "agg_empty",
    "agg_q2",
    "agg_q2_no_nli",
    "agg_scored",
    "agg_signature",
    "dialogue_dataset",
    "dialogue_doc_to_text",
    "evaluate_figure",
    "no_answer_share",
    "num_responses",
    "num_skipped",
    "num_valid_questions",
    "process_results",
    "signature",
    "spell",
    "wow_dataset",
    "wow_doc_to_text",
]
