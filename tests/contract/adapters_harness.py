"""The harness front-ends in the matrix: lm-eval's `q2_wow`, `q2_dialogue` and `q2_wow_evaluate`,
Inspect AI's `q2` scorer and `q2_wow` task, and the ragas metric.

Each drives the real harness the way a user does, in process, with the items' responses as the
model's replies: lm-eval through `simple_evaluate` with a replay model (its documents: the items'
knowledge; `q2_wow`'s shipped contexts replaced by the items', its YAML, `process_results` and
aggregation unchanged), Inspect through `inspect_ai.eval` with `mockllm` replies, ragas through
`evaluate`. What the user sees is read back: lm-eval's per-sample records (its `--log_samples`
entries) and results, Inspect's scores and metrics, ragas' result, counts and signature.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.frontends import Item, PythonAPI, Report, Row, Words
from q2_metric.signature import Signature

HARNESS_FRONT_ENDS = (
    "lm-eval q2_dialogue",
    "lm-eval q2_wow",
    "lm-eval q2_wow_evaluate",
    "inspect q2",
    "inspect q2_wow",
    "ragas q2",
    "mlflow q2",
    "deepeval q2",
)

NOT_ADAPTED: dict[str, str] = {}  # front-end -> why it has no adapter of its own (none now)


def _words(spell) -> dict[str, str]:
    return {
        "wrong type": spell("use_nli"),
        "out of range": spell("fallback_scores"),
        "unknown name": spell("use_nlii"),
        "missing model": spell("qg_model"),
    }


def _bad_options(kind: str, base: dict[str, Any], tmp: Path) -> dict[str, Any]:
    return PythonAPI("harness", base).options_for(kind, tmp)


def _json_safe(options: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in options.items()}


def _none(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _reset() -> None:
    from q2_metric.runtime import cache

    cache.reset()


@contextlib.contextmanager
def _quiet():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        yield err


# -- lm-eval ----------------------------------------------------------------------------------------


def _replay_lm(replies: dict[str, Any]):
    """An lm-eval model whose reply to a prompt is the item's response found in it."""
    from lm_eval.api.model import LM

    class Replay(LM):
        def generate_until(self, requests, disable_tqdm: bool = False):
            return [next(r for marker, r in replies.items() if marker in req.args[0]) for req in requests]

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    return Replay()


@dataclass
class LmEval(Words):
    """`q2_dialogue` (the items as a JSONL file: knowledge, history) or `q2_wow` (the items'
    knowledge as the contexts), run by `lm_eval.simple_evaluate` with `--log_samples`."""

    name: str
    base: dict[str, Any]
    task: str
    slow: bool = True  # a whole lm-eval run each (seconds): with the integration tests
    bad_item: str = "reported"  # a reply that is no text: its doc/row; q2_dialogue's unreadable rows too
    words: dict = field(default_factory=lambda: _words(lambda n: f'q2_options["{n}"]'))
    foreign_words: tuple = ("--qg-model", "qg_model (")
    writes: bool = False  # the Q² tasks write nothing; lm-eval's --output_path is lm-eval's own
    spans_reason: str | None = (
        "lm-eval's per-sample records and results hold the figures, counts and signature; "
        "they show no spans (q2 rescore reads its samples file and gives them)"
    )

    def _run(self, items: list[Item], options: dict[str, Any], tmp: Path) -> tuple[dict, str]:
        import lm_eval
        from lm_eval.tasks import TaskManager

        import q2_metric.harness as harness

        markers = {f"(#{n})": item.response for n, item in enumerate(items)}
        metadata: dict[str, Any] = {"q2_options": _json_safe(options)}
        saved = harness.wow_contexts
        if self.task == "q2_dialogue":
            path = tmp / "dialogues.jsonl"
            path.write_text(
                "".join(
                    json.dumps({"knowledge": i.knowledge, "history": f"Tell me more. (#{n})"}) + "\n"
                    for n, i in enumerate(items)
                ),
                encoding="utf-8",
            )
            metadata["path"] = str(path)
        else:
            contexts = [
                {"topic": "t", "message": f"Tell me more. (#{n})", "knowledge": i.knowledge, "gold": ""}
                for n, i in enumerate(items)
            ]
            harness.wow_contexts = lambda limit=None: contexts if limit is None else contexts[: int(limit)]
        _reset()
        logging.getLogger("lm-eval").setLevel(logging.ERROR)
        try:
            with _quiet() as err:
                out = lm_eval.simple_evaluate(
                    model=_replay_lm(markers),
                    tasks=[self.task],
                    log_samples=True,
                    task_manager=TaskManager(include_path=harness.lm_eval_include_path(), metadata=metadata),
                )
        finally:
            harness.wow_contexts = saved
            _reset()
        return out, err.getvalue()

    def score(self, items: list[Item], tmp: Path) -> Report:
        out, err = self._run(items, self.base, tmp)
        results = out["results"][self.task]
        rows = [
            Row(
                s["q2"]["key"],
                s["q2"]["status"],
                _none(s["q2"]["q2"]),
                s["q2"]["reason"] if s["q2"]["status"] == "bad" else None,
            )
            for s in out["samples"][self.task]
        ]
        for (
            line
        ) in err.splitlines():  # q2_dialogue's unreadable rows: "q2_dialogue: row N (...) not read; ..."
            if line.startswith("q2_dialogue: row "):
                key = line.split(" (", 1)[0].removeprefix("q2_dialogue: ")
                rows.append(Row(key, "bad", None, line.removeprefix("q2_dialogue: ")))
        rows.sort(key=lambda r: int(r.key.split()[-1]))  # "doc N" (q2_wow) or "row N" (q2_dialogue)
        reason_of = {s["q2"]["key"]: s["q2"]["reason"] for s in out["samples"][self.task]}
        counts = {k: int(results[f"{k},none"]) for k in ("scored", "empty", "bad")}
        # the full signature is in every sample record; the results (lm-eval's table) hold its short form
        (signature,) = {s["q2"]["signature"] for s in out["samples"][self.task]}
        assert results["signature,none"] == Signature.parse(signature).short()
        return Report(rows, counts, signature, reasons=[reason_of.get(r.key, r.error) for r in rows])

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error

        try:
            self._run(
                [Item("Bob Ross hosted it.", "Bob Ross hosted the show.")],
                _bad_options(kind, self.base, tmp),
                tmp,
            )
        except Q2Error as err:
            return str(err)
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # the Q² tasks write nothing; lm-eval's --output_path is lm-eval's own


@dataclass
class LmEvalEvaluate(LmEval):
    """`q2_wow_evaluate`: lm-eval's own route to the `evaluate` module (`hf_evaluate: true`: lm-eval
    calls `evaluate.load("q2")`'s `compute` once per reply), after `register_evaluate_module` (what
    `q2 register` does, into the modules folder evaluate uses). The Q² options go in the task
    YAML's metric entry, as docs/lm-eval.md tells users (lm-eval passes the entry's other keys to
    `compute`), and in `--metadata q2_options` as for `q2_wow` (its documents check them, with the
    models, before any generation): the shipped task folder is copied and its metric entry given
    the options. Each
    sample's record (`--log_samples`) holds that reply's compute result."""

    task: str = "q2_wow_evaluate"
    records_reason: str | None = (
        "each reply's record is `evaluate compute`'s result (its cell compares the reasons); "
        "lm-eval keeps the scores"
    )
    bad_item: str = "n/a"
    bad_item_reason: str = (
        "lm-eval calls `compute` once per reply, a one-item list: a non-text reply or knowledge is "
        "that call's refusal, naming the item (`evaluate compute`'s cell), and lm-eval stops the run; "
        "lm-eval's models reply text"
    )

    def _tasks(self, options: dict[str, Any], tmp: Path) -> Path:
        import shutil

        import q2_metric.harness as harness

        folder = tmp / "tasks"
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(harness.lm_eval_include_path(), folder)
        yaml = folder / "q2_wow_evaluate.yaml"
        text = yaml.read_text(encoding="utf-8")
        entry = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in _json_safe(options).items())
        assert "    hf_evaluate: true\n" in text
        yaml.write_text(
            text.replace("    hf_evaluate: true\n", "    hf_evaluate: true\n" + entry), encoding="utf-8"
        )
        return folder

    def _run(self, items: list[Item], options: dict[str, Any], tmp: Path) -> tuple[dict, str]:
        import evaluate
        import lm_eval
        from lm_eval.tasks import TaskManager

        import q2_metric.harness as harness
        from q2_metric.evaluate_registry import register_evaluate_module

        register_evaluate_module(str(Path(evaluate.config.HF_MODULES_CACHE) / "evaluate_modules"))
        markers = {f"(#{n})": item.response for n, item in enumerate(items)}
        contexts = [
            {"topic": "t", "message": f"Tell me more. (#{n})", "knowledge": i.knowledge, "gold": ""}
            for n, i in enumerate(items)
        ]
        saved = harness.wow_contexts
        harness.wow_contexts = lambda limit=None: contexts if limit is None else contexts[: int(limit)]
        logging.getLogger("lm-eval").setLevel(logging.ERROR)
        try:
            with _quiet() as err:
                out = lm_eval.simple_evaluate(
                    model=_replay_lm(markers),
                    tasks=[self.task],
                    log_samples=True,
                    task_manager=TaskManager(
                        include_path=str(self._tasks(options, tmp)),
                        metadata={"q2_options": _json_safe(options)},
                    ),
                )
        finally:
            harness.wow_contexts = saved
        return out, err.getvalue()

    def score(self, items: list[Item], tmp: Path) -> Report:
        out, _ = self._run(items, self.base, tmp)
        results = out["results"][self.task]
        rows = []
        for s in sorted(out["samples"][self.task], key=lambda s: s["doc_id"]):
            (q,) = s["scores"]
            rows.append(Row(f"doc {s['doc_id']}", "scored" if s["num_scored"] else "empty", _none(q)))
        counts = {
            "scored": int(results["num_scored,none"]),
            "empty": int(results["num_skipped,none"]),
            "bad": 0,
        }
        (signature,) = {s["signature"] for s in out["samples"][self.task]}  # each reply's `compute`
        assert results["signature,none"] == Signature.parse(signature).short()
        return Report(rows, counts, signature)


# -- Inspect AI -------------------------------------------------------------------------------------


@dataclass
class Inspect(Words):
    """The `q2()` scorer in `inspect_ai.eval` (or the `q2_wow` task, its contexts replaced by the
    items'): `mockllm` replies the items' responses; each sample's knowledge is the item's, in its
    metadata."""

    name: str
    base: dict[str, Any]
    task: bool = False
    slow: bool = True  # a whole Inspect eval each (seconds): with the integration tests
    bad_item: str = "n/a"
    bad_item_reason: str = (
        "Inspect's model replies are text (ModelOutput): a non-text response cannot reach the "
        "scorer; a sample whose knowledge is no text is reported under its own id "
        "(tests/unit/harness/test_inspect_task.py)"
    )
    words: dict = field(default_factory=dict)
    foreign_words: tuple = ("--qg-model", "qg_model (")
    writes: bool = False  # the scorer writes nothing; Inspect's logs are Inspect's own

    def __post_init__(self) -> None:
        flag = "-T" if self.task else "-S"
        self.words = _words(lambda n: f"{flag} {n}")

    def _scorer(self, options: dict[str, Any]):
        from q2_metric.harness.inspect_task import q2, q2_wow

        _reset()
        return q2_wow(max_wait=0.5, **options) if self.task else q2(max_wait=0.5, **options)

    def score(self, items: list[Item], tmp: Path) -> Report:
        import inspect_ai
        from inspect_ai import Task
        from inspect_ai.dataset import MemoryDataset, Sample
        from inspect_ai.model import ModelOutput, ModelUsage, get_model
        from inspect_ai.solver import generate

        outputs = []
        for item in items:
            output = ModelOutput.from_content(model="mockllm/model", content=item.response)
            output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tiktoken
            outputs.append(output)
        samples = [
            Sample(id=n, input=f"turn {n}", metadata={"knowledge": item.knowledge})
            for n, item in enumerate(items)
        ]
        if self.task:
            import q2_metric.harness.inspect_task as module

            saved, module.wow_samples = module.wow_samples, lambda limit=None: samples
            try:
                task = self._scorer(self.base)
            finally:
                module.wow_samples = saved
        else:
            task = Task(dataset=MemoryDataset(samples), solver=generate(), scorer=self._scorer(self.base))
        try:
            (log,) = inspect_ai.eval(
                task,
                model=get_model("mockllm/model", custom_outputs=outputs),
                display="none",
                log_dir=str(tmp / "inspect-logs"),
                max_samples=len(items),
            )
        finally:
            _reset()
        assert log.status == "success", log.error
        rows, signature = [], ""
        for s in sorted(log.samples, key=lambda s: s.id):
            score = s.scores["q2"]
            status = score.metadata["q2_status"]
            rows.append(
                Row(
                    f"sample {s.id!r}",
                    status,
                    _none(score.value),
                    score.explanation if status == "bad" else None,
                )
            )
            signature = score.metadata["q2_signature"]
        metadata = log.results.scores[0].metadata
        assert metadata["q2_signature"] == signature
        scores = [s.scores["q2"] for s in sorted(log.samples, key=lambda s: s.id)]
        spans = [s.metadata["q2_spans"] if s.metadata["q2_status"] != "bad" else None for s in scores]
        verdicts = [s.metadata["q2_verdict"] for s in scores]
        reasons = [s.explanation for s in scores]
        assert reasons == [s.metadata["q2_reason"] for s in scores]
        return Report(rows, metadata["q2_counts"], signature, spans, verdicts, reasons)

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error

        try:
            self._scorer(_bad_options(kind, self.base, tmp))
        except Q2Error as err:
            return str(err)
        finally:
            _reset()
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # the scorer writes nothing; Inspect's logs are Inspect's own


# -- ragas ------------------------------------------------------------------------------------------


@dataclass
class Ragas(Words):
    """`q2_metric.harness.ragas_metric.evaluate` on an `EvaluationDataset` of the items (knowledge: the
    one retrieved context)."""

    name: str
    base: dict[str, Any]
    slow: bool = False
    bad_item: str = "n/a"
    bad_item_reason: str = (
        "ragas validates its samples itself (pydantic): a non-text item never reaches the metric"
    )
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "use_nli='false'",
            "out of range": "fallback_scores=(0, 2, 1)",
            "unknown name": "'use_nlii'",
            "missing model": "qg_model",
        }
    )
    foreign_words: tuple = ("--qg-model", "qg_model (")
    writes: bool = False  # returns ragas' result; writes no file

    def score(self, items: list[Item], tmp: Path) -> Report:
        from ragas import EvaluationDataset

        from q2_metric.harness.ragas_metric import Q2Faithfulness, evaluate

        _reset()
        try:
            metric = Q2Faithfulness(max_wait=0.5, progress=False, **self._keywords(self.base))
            data = EvaluationDataset.from_list(
                [
                    {"user_input": f"item {n}", "response": i.response, "retrieved_contexts": [i.knowledge]}
                    for n, i in enumerate(items)
                ]
            )
            with _quiet():
                result = evaluate(data, metric, show_progress=False)
        finally:
            _reset()
        values = result.to_pandas()["q2"].tolist()
        # ragas keeps no status: an unscored sample is NaN (the counts say how many were empty)
        rows = [
            Row(f"item {n}", "empty" if math.isnan(v) else "scored", _none(v)) for n, v in enumerate(values)
        ]
        return Report(
            rows,
            result.counts,
            str(result.signature),
            [None if d is None or d["q2_status"] == "bad" else d["q2_spans"] for d in result.details],
            [None if d is None else d["q2_verdict"] for d in result.details],
            [None if d is None else d["q2_reason"] for d in result.details],
        )

    @staticmethod
    def _keywords(options: dict[str, Any]) -> dict[str, Any]:
        from q2_metric.options import ADAPTER_KEYWORDS as KEYWORDS

        return {
            **{k: v for k, v in options.items() if k in KEYWORDS},
            "options": {k: v for k, v in options.items() if k not in KEYWORDS},
        }

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error
        from q2_metric.harness.ragas_metric import Q2Faithfulness

        _reset()
        try:
            Q2Faithfulness(progress=False, **self._keywords(_bad_options(kind, self.base, tmp)))
        except Q2Error as err:
            return str(err)
        finally:
            _reset()
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # returns ragas' result; writes no file


def harness_adapters(base: dict[str, Any]) -> list:
    """The harness front-ends' adapters (`NOT_ADAPTED` names the one without an adapter, and why)."""
    from contract.adapters_lighteval import lighteval_adapters  # (it imports this module's helpers)
    from contract.adapters_mlflow_deepeval import ml_adapters

    return [
        LmEval("lm-eval q2_dialogue", base, "q2_dialogue"),
        LmEval("lm-eval q2_wow", base, "q2_wow"),
        LmEvalEvaluate("lm-eval q2_wow_evaluate", base),
        Inspect("inspect q2", base),
        Inspect("inspect q2_wow", base, task=True),
        Ragas("ragas q2", base),
        *lighteval_adapters(base),
        *ml_adapters(base),  # MLflow and DeepEval: contract/adapters_mlflow_deepeval.py
    ]
