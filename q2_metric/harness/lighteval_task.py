"""LightEval: Q² as batched `SampleLevelMetric`s, and the `q2_wow` custom task on the bundled WoW sample.

    lighteval accelerate "model_name=DIR,batch_size=8" q2_wow \\
        --custom-tasks q2_metric.harness.lighteval_task --save-details --output-dir OUT

`q2_metrics(**options)` gives one `SampleLevelMetric` per figure (`q2`, `q2_no_nli`, `coverage`,
and the counts `scored`, `empty`, `bad`), each with `batched_compute=True`: LightEval hands a
metric all of a task's samples at once, and the figures of one run share one engine call
(`Engine.collect` of `q2_metric.runtime`; calls of at most `max_batch` samples when that option is set). Q²
options are Python keywords (`q2_metrics(qg_model=DIR, tiny=True, max_batch=64)`, or all in
`options={...}`); they are checked, and the Q² models found, when the metrics are built - for a
tasks file, when LightEval loads it, before the model generates anything. A bad value or a
missing model is one `Q2Error` sentence naming the keyword (under the `lighteval` command, that
one line instead of a traceback).

The knowledge of a sample is `doc.specific["knowledge"]` (another key: `knowledge_key=`), else
its gold references joined by a space; the reply is the text LightEval keeps for metrics
(`model_response.final_text[0]`). Each sample is checked alone: a reply or knowledge that is no
text is `bad` (its own sentence, the others scored), an empty one `empty` (unscored, NaN). Each
sample's metrics hold its figures (NaN unless scored); `doc.specific` gets its record
(`frontend.Record.to_dict(prefix="q2_")`): `q2_status`, `q2_score`, `q2_no_nli`, `q2_verdict`
(at the threshold 0.5), the one-sentence `q2_reason` (the `reason` column of `q2 score`),
`q2_spans`, `q2_error` and the full `q2_signature`, so that `--save-details` keeps them beside
the generation. The results hold the
figures over the scored samples (each with its standard error over them) and the summed counts;
stderr gets the counts and the full signature (LightEval's results take numbers only).

`q2_wow` (this module's `TASKS_TABLE`, built when LightEval first asks for it): the model writes
the wizard's reply to each of the 40 dialogues of `q2_metric/data/wow_sample.csv`, Q² scores it
against the row's knowledge sentence. Its options: `tiny` from the `Q2_TINY` environment
variable, the rest the defaults; for others, a tasks file of your own: `TASKS_TABLE =
[wow_task(qg_model=DIR, max_batch=64)]`.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from lighteval.metrics.metrics_sample import SampleLevelComputation
from lighteval.metrics.utils.metric_utils import SampleLevelMetric
from lighteval.tasks.lighteval_task import LightevalTask, LightevalTaskConfig
from lighteval.tasks.requests import Doc, SamplingMethod

from q2_metric.display import tiny_note_once
from q2_metric.frontend import Decision, Outcome, decision_of
from q2_metric.harness import one_line_errors, under_command
from q2_metric.options import merge_options
from q2_metric.runtime.cache import engine_for
from q2_metric.validation import PASSAGE_SEPARATOR

FIGURES = ("q2", "q2_no_nli", "coverage", "scored", "empty", "bad")
COUNTS = ("scored", "empty", "bad")
KNOWLEDGE_KEY = "knowledge"
TINY_HINT = "`tiny=True`"
WOW_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "wow_sample.csv"
# what `hf_repo` names for the tasks of this module: their rows come from the package's reader
DATASET = "q2_metric/wow_sample"
PROMPT = "Topic: {topic}\nKnowledge: {knowledge}\nApprentice: {message}\nWizard:"


# -- errors in LightEval's words --------------------------------------------------------------------


if under_command("lighteval"):
    one_line_errors()


# -- scoring -------------------------------------------------------------------------------------


def _reply(response: Any) -> Any:
    """The text LightEval keeps for metrics (reasoning tags removed when it is set to)."""
    texts = getattr(response, "final_text", None)
    return texts[0] if isinstance(texts, list) and texts else ""


def _knowledge(doc: Doc, key: str) -> Any:
    specific = doc.specific or {}
    if key in specific:
        return specific[key]  # as it is: "" is empty knowledge, a non-string is bad
    return PASSAGE_SEPARATOR.join(doc.get_golds())


def _key(doc: Doc) -> str:
    specific = doc.specific or {}
    return str(specific.get("q2_key") or f"sample {doc.id!r}")


def _note(docs: list[Doc], outcome: Outcome, decision: Decision) -> None:
    """Each doc's record (`frontend.Record`: status, score, verdict at the decision's threshold,
    reason, spans, error and the full signature) into its `specific` (so into the details LightEval
    saves)."""
    for doc, item in zip(docs, outcome.items):
        doc.specific = {**(doc.specific or {}), **decision.record(item, outcome.signature).to_dict("q2_")}


_REPORTED: list[int] = []  # the outcome whose summary was written last


def _number(value: float) -> float:
    return float("nan") if value is None else float(value)


def _values(figure: str, outcome: Outcome) -> list[float]:
    out: list[float] = []
    for result in outcome.items:
        score = result.score
        if figure in COUNTS:
            out.append(1.0 if result.status == figure else 0.0)
        elif result.status != "scored" or score is None:
            out.append(float("nan"))
        elif figure == "q2":
            out.append(_number(score.q2))
        elif figure == "q2_no_nli":
            out.append(_number(score.q2_no_nli))
        else:  # coverage: whether the reply has a valid question
            out.append(1.0 if score.valid_questions else 0.0)
    return out


class Q2Computation(SampleLevelComputation):
    """One Q² figure per sample, over a batch of samples (`compute(responses=..., docs=...)`).
    Holds only its options (LightEval deep-copies task configs): the engine is the process's
    `Engine` for them (`q2_metric.runtime`), so every figure of a batch reuses one engine call."""

    def __init__(self, figure: str, options: dict[str, Any], knowledge_key: str = KNOWLEDGE_KEY) -> None:
        self.figure = figure
        self.options = options
        self.knowledge_key = knowledge_key
        self.signature: str | None = None  # the FULL signature of the last batch scored

    def outcome(self, responses: list[Any], docs: list[Doc]) -> Outcome:
        """The batch's `Outcome` (one engine call, or calls of at most `max_batch` samples)."""
        from q2_metric.progress import line_progress

        decision = decision_of(self.options)
        engine, max_batch = engine_for(self.options)
        items = [
            decision.item(_key(d), _reply(r), _knowledge(d, self.knowledge_key))
            for d, r in zip(docs, responses)
        ]
        outcome = engine.collect(items, max_batch or max(len(items), 1), progress=line_progress("Q²"))
        if [id(outcome)] != _REPORTED:
            _REPORTED[:] = [id(outcome)]
            _note(docs, outcome, decision)
            counts = outcome.counts
            print(
                f"Q²: {counts['scored']} scored, {counts['empty']} empty (unscored), {counts['bad']} bad",
                file=sys.stderr,
            )
            print(f"Q² signature: {decision.sign(outcome.signature)}", file=sys.stderr)
            note = tiny_note_once(engine.config)  # unless the check logged it
            if note:
                print(f"Q²: {note}", file=sys.stderr)
        return outcome

    def compute(  # type: ignore[override]  # LightEval's batched call passes lists
        self, responses: list[Any] | None = None, docs: list[Doc] | None = None, **kwargs: Any
    ) -> list[float]:
        if responses is None or docs is None:  # a single sample (the metric used without batching)
            responses, docs = [kwargs["model_response"]], [kwargs["doc"]]
        outcome = self.outcome(list(responses), list(docs))
        self.signature = str(decision_of(self.options).sign(outcome.signature))
        return _values(self.figure, outcome)


def _finite(values: list[float]) -> list[float]:
    return [float(v) for v in values if v is not None and not math.isnan(float(v))]


def _mean_of_scored(name: str) -> Any:
    """The figure over the scored samples and its standard error (a dict: LightEval takes it as
    it is, and adds no standard error of its own over the unscored NaNs)."""

    def aggregate(values: list[float]) -> dict[str, float]:
        import numpy as np

        kept = _finite(values)
        mean = float(np.mean(kept)) if kept else float("nan")  # as the engine's system figures
        stderr = float(np.std(kept, ddof=1) / math.sqrt(len(kept))) if len(kept) > 1 else float("nan")
        return {name: mean, f"{name}_stderr": stderr}

    aggregate.__name__ = f"{name}_of_scored"
    return aggregate


def _count(name: str) -> Any:
    def aggregate(values: list[float]) -> dict[str, int]:
        return {name: int(sum(values))}

    aggregate.__name__ = f"{name}_count"
    return aggregate


def q2_metrics(
    *,
    knowledge_key: str = KNOWLEDGE_KEY,
    variant: str | None = None,
    tiny: bool | None = None,
    batch_size: int | None = None,
    max_batch: int | None = None,
    options: dict[str, Any] | None = None,
    **q2_options: Any,
) -> list[SampleLevelMetric]:
    """The Q² figures as batched `SampleLevelMetric`s for a task's `metrics`. `variant`, `tiny`
    (default: the `Q2_TINY` environment variable), `batch_size`, `max_batch` (samples per engine
    call; default: a task's whole run in one call), `operating_point` (a file `q2 calibrate` wrote:
    the records' verdicts at its threshold, the signature naming it), any `Q2Config` option by name
    or all in `options`: checked, and the Q² models found, now."""
    given = {**q2_options, "variant": variant, "tiny": tiny, "batch_size": batch_size, "max_batch": max_batch}
    merged = merge_options(given, options)
    decision_of(merged)  # the operating point read (a bad file: one sentence) before any model work
    engine_for(merged, check=True, tiny_hint=TINY_HINT)
    return [
        SampleLevelMetric(
            metric_name=figure,
            higher_is_better=figure not in ("empty", "bad"),
            category=SamplingMethod.GENERATIVE,
            sample_level_fn=Q2Computation(figure, merged, knowledge_key),
            corpus_level_fn=_count(figure) if figure in COUNTS else _mean_of_scored(figure),
            batched_compute=True,
        )
        for figure in FIGURES
    ]


# -- the q2_wow task -------------------------------------------------------------------------------


def wow_rows(path: str | Path = WOW_SAMPLE) -> list[dict[str, Any]]:
    """The WoW sample's rows (topic, message, knowledge), read by the one table reader, each with
    its key (`row N`, as `q2 score` names the row)."""
    from q2_metric.io import read_rows

    return [
        {
            "topic": r.fields["topic"],
            "message": r.fields["message"],
            "knowledge": r.fields["knowledge"],
            "q2_key": f"row {r.number}",
        }
        for r in read_rows(path, response_col="message", knowledge_col="knowledge")
        if r.error is None
    ]


def wow_prompt(line: dict[str, Any], task_name: str = "") -> Doc:
    """A row as LightEval's `Doc`: the prompt asks for the wizard's reply; the knowledge is the
    reference and, for Q², `specific["knowledge"]`."""
    return Doc(
        task_name=task_name,
        query=PROMPT.format(**line),
        choices=[line["knowledge"]],
        gold_index=0,
        specific={"knowledge": line["knowledge"], "q2_key": line["q2_key"]},
    )


def _load(task: LightevalTask) -> Any:
    import datasets

    return datasets.DatasetDict({"test": datasets.Dataset.from_list(wow_rows())})


_LOADER = "_q2_loader"


def _route_dataset() -> None:
    """LightEval 0.13 reads a task's rows only through `datasets.load_dataset(hf_repo)`; the rows of
    this module's tasks (`hf_repo=DATASET`) come from the package's reader instead."""
    worker = LightevalTask.download_dataset_worker
    if getattr(worker, _LOADER, False):
        return

    def download_dataset_worker(task: LightevalTask) -> Any:
        if task.dataset_path == DATASET:
            return _load(task)
        return worker(task)

    setattr(download_dataset_worker, _LOADER, True)
    LightevalTask.download_dataset_worker = staticmethod(download_dataset_worker)  # type: ignore[method-assign]


_route_dataset()


def wow_task(name: str = "q2_wow", generation_size: int = 64, **options: Any) -> LightevalTaskConfig:
    """The `q2_wow` task (another `name` for a second configuration): the model writes the wizard's
    reply (at most `generation_size` tokens, up to a newline), Q² scores it; Q² options as in
    `q2_metrics`."""
    return LightevalTaskConfig(
        name=name,
        prompt_function=wow_prompt,
        hf_repo=DATASET,
        hf_subset="default",
        metrics=tuple(q2_metrics(**options)),
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        few_shots_split=None,
        few_shots_select=None,
        generation_size=generation_size,
        stop_sequence=["\n"],
        version=0,
    )


def __getattr__(name: str) -> Any:
    # built on first use: importing this module for `wow_task` checks no models
    if name == "TASKS_TABLE":
        table = [wow_task()]
        globals()["TASKS_TABLE"] = table
        return table
    raise AttributeError(name)


__all__ = ["FIGURES", "Q2Computation", "q2_metrics", "wow_prompt", "wow_rows", "wow_task"]
