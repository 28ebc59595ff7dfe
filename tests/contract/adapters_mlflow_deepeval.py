"""MLflow's and DeepEval's front-ends in the matrix (`slow`: a whole evaluation each): the `Q2Faithfulness` scorer in
`mlflow.genai.evaluate` (a local file tracking store in the test's folder, telemetry off), and the
`Q2FaithfulnessMetric` in DeepEval's `evaluate` (telemetry off, its async mode: concurrent
`a_measure` calls). What the user sees is read back: MLflow's per-row feedback (value, error,
metadata) in the result's table, DeepEval's per-test-case metric data (score, error,
evaluation_model, verbose_logs)."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.adapters_harness import _bad_options, _quiet, _reset
from contract.frontends import Item, Report, Row, Words

OFFLINE = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DO_NOT_TRACK": "true",
    "MLFLOW_GENAI_EVAL_SCORER_RATE_LIMIT": "0",
    "MLFLOW_ALLOW_FILE_STORE": "true",  # a file store: no database to create (docs/mlflow.md: sqlite)
}


@contextlib.contextmanager
def offline_env(tmp: Path):
    """The frameworks' telemetry off, MLflow's store and DeepEval's files in `tmp`."""
    saved = {k: os.environ.get(k) for k in (*OFFLINE, "DEEPEVAL_RESULTS_FOLDER")}
    cwd = os.getcwd()
    os.environ.update(OFFLINE)
    os.environ["DEEPEVAL_RESULTS_FOLDER"] = str(tmp / "deepeval-results")
    os.chdir(tmp)  # DeepEval keeps its .deepeval folder in the working directory
    try:
        yield
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _keywords(options: dict[str, Any]) -> dict[str, Any]:
    from q2_metric.options import ADAPTER_KEYWORDS as KEYWORDS

    return {
        **{k: v for k, v in options.items() if k in KEYWORDS},
        "options": {k: v for k, v in options.items() if k not in KEYWORDS},
    }


_WORDS = {
    "wrong type": "use_nli='false'",
    "out of range": "fallback_scores=(0, 2, 1)",
    "unknown name": "'use_nlii'",
    "missing model": "qg_model",
}


# -- MLflow ----------------------------------------------------------------------------------------


def mlflow_rows(items: list[Item]) -> list[dict[str, Any]]:
    """MLflow's evaluation rows: the item's response as `outputs`, its knowledge in `inputs`."""
    return [
        {"inputs": {"turn": f"item {n}", "knowledge": i.knowledge}, "outputs": i.response}
        for n, i in enumerate(items)
    ]


def mlflow_feedback(result: Any, name: str = "q2") -> list[Any]:
    """Each row's feedback of the scorer `name`, in row order (MLflow's result table keeps it)."""
    out = []
    for assessments in result.result_df["assessments"]:
        found = [a for a in assessments if _get(a, "assessment_name", "name") == name]
        assert len(found) == 1, assessments
        out.append(found[0])
    return out


def _get(obj: Any, *names: str) -> Any:
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def feedback_parts(fb: Any) -> tuple[Any, str | None, dict[str, str]]:
    """(value, error message, metadata) of a feedback, an entity or its dict form."""
    feedback = _get(fb, "feedback")
    value = _get(feedback, "value") if feedback is not None else _get(fb, "value")
    error = _get(feedback, "error") if feedback is not None else _get(fb, "error")
    message = _get(error, "error_message") if error is not None else None
    return value, message, dict(_get(fb, "metadata") or {})


@dataclass
class Mlflow(Words):
    """`mlflow.genai.evaluate(data=rows, scorers=[Q2Faithfulness(...)])`: rows in MLflow's format
    (the response as `outputs`, the knowledge as `inputs["knowledge"]`)."""

    name: str
    base: dict[str, Any]
    slow: bool = True  # a whole MLflow evaluation each (traces into a store: seconds)
    bad_item: str = "reported"  # a non-text `outputs`: that row's feedback error, naming its inputs
    words: dict = field(default_factory=lambda: dict(_WORDS))
    foreign_words: tuple = ("--qg-model", "qg_model (")
    writes: bool = False  # returns feedback; MLflow's tracking store is MLflow's own

    def score(self, items: list[Item], tmp: Path) -> Report:
        import mlflow

        from q2_metric.harness.mlflow_scorer import Q2Faithfulness

        _reset()
        try:
            with offline_env(tmp), _quiet():
                mlflow.set_tracking_uri((tmp / "mlruns").as_uri())
                scorer = Q2Faithfulness(max_wait=0.5, progress=False, **_keywords(self.base))
                result = mlflow.genai.evaluate(data=mlflow_rows(items), scorers=[scorer])
        finally:
            _reset()
        rows, spans, signature, verdicts, reasons = [], [], "", [], []
        for n, fb in enumerate(mlflow_feedback(result)):
            value, error, meta = feedback_parts(fb)
            key = f"the row with inputs {{'turn': 'item {n}'}}"  # the inputs but the knowledge
            if error is not None:
                rows.append(Row(key, "bad", None, error))
                spans.append(None)
                verdicts.append(None)
                reasons.append(error)
                continue
            rows.append(Row(key, meta["q2_status"], None if value is None else float(value)))
            spans.append(json.loads(meta["q2_spans"]))
            signature = meta["q2_signature"]
            verdicts.append(meta["q2_verdict"])
            reasons.append(meta["q2_reason"])
        counts = {s: sum(r.status == s for r in rows) for s in ("scored", "empty", "bad")}
        assert counts == scorer.counts, (counts, scorer.counts)
        return Report(rows, counts, signature, spans, verdicts, reasons)

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error
        from q2_metric.harness.mlflow_scorer import Q2Faithfulness

        _reset()
        try:
            Q2Faithfulness(progress=False, **_keywords(_bad_options(kind, self.base, tmp)))
        except Q2Error as err:
            return str(err)
        finally:
            _reset()
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None


# -- DeepEval --------------------------------------------------------------------------------------


@dataclass
class DeepEval(Words):
    """`deepeval.evaluate(test_cases, [Q2FaithfulnessMetric(...)])`: each item a test case, its
    knowledge the one retrieval context."""

    name: str
    base: dict[str, Any]
    slow: bool = True  # a whole DeepEval evaluation each (seconds)
    bad_item: str = "n/a"
    bad_item_reason: str = (
        "DeepEval validates its test cases (pydantic): a non-text output never reaches the metric; "
        "a test case without an output is reported under its own name "
        "(tests/unit/harness/test_deepeval_metric.py)"
    )
    words: dict = field(default_factory=lambda: dict(_WORDS))
    foreign_words: tuple = ("--qg-model", "qg_model (")
    writes: bool = False  # returns DeepEval's results; its files are DeepEval's own

    def score(self, items: list[Item], tmp: Path) -> Report:
        with offline_env(tmp):
            from deepeval import evaluate
            from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
            from deepeval.test_case import LLMTestCase

            from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

            _reset()
            cases = [
                LLMTestCase(input=f"item {n}", actual_output=i.response, retrieval_context=[i.knowledge])
                for n, i in enumerate(items)
            ]
            try:
                metric = Q2FaithfulnessMetric(max_wait=0.5, progress=False, **_keywords(self.base))
                with _quiet():
                    result = evaluate(
                        cases,
                        [metric],
                        async_config=AsyncConfig(max_concurrent=len(cases)),
                        display_config=DisplayConfig(show_indicator=False, print_results=False),
                    )
            finally:
                _reset()
        return deepeval_report(result, len(items))

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error
        from q2_metric.harness.deepeval_metric import Q2FaithfulnessMetric

        _reset()
        try:
            Q2FaithfulnessMetric(progress=False, **_keywords(_bad_options(kind, self.base, tmp)))
        except Q2Error as err:
            return str(err)
        finally:
            _reset()
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None


def deepeval_report(result: Any, n: int) -> Report:
    """Per test case (in input order: DeepEval's `index`), the Q² metric's data as DeepEval keeps it."""
    tests = sorted(result.test_results, key=lambda r: r.index)
    assert [r.index for r in tests] == list(range(n)), [r.index for r in tests]
    rows, spans, signature = [], [], ""
    for r in tests:
        (data,) = r.metrics_data
        logs = json.loads(data.verbose_logs)
        key = f"the test case with input {r.input!r}"
        if logs["q2_status"] == "bad":
            rows.append(Row(key, "bad", None, data.error))
            spans.append(None)
            continue
        rows.append(Row(key, logs["q2_status"], data.score))
        spans.append(logs["q2_spans"])
        signature = data.evaluation_model
    counts = {s: sum(r.status == s for r in rows) for s in ("scored", "empty", "bad")}
    logs = [json.loads(r.metrics_data[0].verbose_logs) for r in tests]
    verdicts, reasons = [x["q2_verdict"] for x in logs], [x["q2_reason"] for x in logs]
    # DeepEval shows the reason of a scored test case, the error of an unscored one: the same sentence
    shown = [r.metrics_data[0].reason or r.metrics_data[0].error for r in tests]
    assert shown == reasons, (shown, reasons)
    return Report(rows, counts, signature, spans, verdicts, reasons)


def ml_adapters(base: dict[str, Any]) -> list:
    return [Mlflow("mlflow q2", base), DeepEval("deepeval q2", base)]
