"""LightEval's front-end in the matrix: the `q2_wow` custom task (its rows replaced by the items'),
run by LightEval's own `Pipeline` in process with a model that replies the items' responses; what
the user sees is read back: each sample's metrics and `doc.specific` (the details LightEval
saves), and the results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.adapters_harness import _bad_options, _quiet, _reset
from contract.frontends import Item, Report, Row, Words

NAME = "lighteval q2_wow"


def _replay_model(replies: dict[str, Any], cache: Path):
    """A LightEval model whose reply to a prompt is the item's response whose marker it holds."""
    from lighteval.models.abstract_model import LightevalModel
    from lighteval.models.dummy.dummy_model import DummyModelConfig
    from lighteval.models.model_output import ModelResponse
    from lighteval.utils.cache_management import SampleCache

    class Replay(LightevalModel):
        def __init__(self) -> None:
            self.config = DummyModelConfig(model_name="replay", cache_dir=str(cache))
            self._cache = SampleCache(self.config)  # the pipeline registers its tasks there; unused

        tokenizer = None
        add_special_tokens = False
        max_length = 2048

        def greedy_until(self, docs):
            return [
                ModelResponse(text=[next(r for marker, r in replies.items() if marker in d.query)])
                for d in docs
            ]

        def loglikelihood(self, docs):
            raise NotImplementedError

        def loglikelihood_rolling(self, docs):
            raise NotImplementedError

    return Replay()


def _none(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


@dataclass
class LightEval(Words):
    """`wow_task(**options)` run by `lighteval.pipeline.Pipeline` (its samples: the items' knowledge
    and a marker the replay model answers with the item's response)."""

    name: str
    base: dict[str, Any]
    slow: bool = True  # a whole LightEval pipeline each (it lists all of its tasks: seconds)
    bad_item: str = "n/a"
    bad_item_reason: str = (
        "LightEval's model replies are text (ModelResponse.text): a non-text reply cannot reach the "
        "metric; a sample whose knowledge is no text is reported under its own key "
        "(tests/unit/harness/test_lighteval_task.py)"
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
    writes: bool = False  # the metric writes nothing; LightEval's --output-dir is LightEval's own

    def _run(self, items: list[Item], options: dict[str, Any], tmp: Path) -> tuple[dict, list]:
        import types

        from lighteval.logging.evaluation_tracker import EvaluationTracker
        from lighteval.pipeline import ParallelismManager, Pipeline, PipelineParameters

        import q2_metric.harness.lighteval_task as module
        from q2_metric.harness.lighteval_offline import leave_out_unfetched_tasks

        leave_out_unfetched_tasks()  # offline: LightEval's tinyBenchmarks tasks would download a file
        rows = [
            {
                "topic": "t",
                "message": f"Tell me more. (#{n})",
                "knowledge": i.knowledge,
                "q2_key": f"row {n + 1}",
            }
            for n, i in enumerate(items)
        ]
        tasks = types.ModuleType("q2_contract_tasks")
        saved = module.wow_rows
        module.wow_rows = lambda path=None: rows
        _reset()
        try:
            tasks.TASKS_TABLE = [module.wow_task(name="q2_wow_contract", **options)]
            with _quiet():
                pipeline = Pipeline(
                    tasks="q2_wow_contract|0",
                    pipeline_parameters=PipelineParameters(
                        launcher_type=ParallelismManager.NONE, custom_tasks_directory=tasks
                    ),
                    evaluation_tracker=EvaluationTracker(output_dir=str(tmp / "lighteval-out")),
                    model=_replay_model(
                        {f"(#{n})": i.response for n, i in enumerate(items)}, tmp / "lighteval-cache"
                    ),
                )
                pipeline.evaluate()
            (results,) = [v for k, v in pipeline.get_results()["results"].items() if k != "all"]
            details = pipeline.get_details()["q2_wow_contract|0"]
        finally:
            module.wow_rows = saved
            _reset()
        return results, details

    def score(self, items: list[Item], tmp: Path) -> Report:
        results, details = self._run(items, self.base, tmp)
        details = sorted(details, key=lambda d: int(d.doc.specific["q2_key"].split()[-1]))
        rows = [
            Row(
                d.doc.specific["q2_key"],
                d.doc.specific["q2_status"],
                _none(d.metric["q2"]),
                d.doc.specific["q2_reason"] if d.doc.specific["q2_status"] == "bad" else None,
            )
            for d in details
        ]
        (signature,) = {d.doc.specific["q2_signature"] for d in details}
        counts = {k: int(results[k]) for k in ("scored", "empty", "bad")}
        spans = [d.doc.specific["q2_spans"] for d in details]
        verdicts = [d.doc.specific["q2_verdict"] for d in details]
        return Report(
            rows, counts, signature, spans, verdicts, [d.doc.specific["q2_reason"] for d in details]
        )

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error
        from q2_metric.harness.lighteval_task import wow_task

        _reset()
        try:
            wow_task(**_bad_options(kind, self.base, tmp))
        except Q2Error as err:
            return str(err)
        finally:
            _reset()
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None  # the metric writes nothing; LightEval's --output-dir is LightEval's own


def lighteval_adapters(base: dict[str, Any]) -> list:
    return [LightEval(NAME, base)]
