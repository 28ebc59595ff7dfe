"""Every front-end of Q², declared once: where it lives, what installs it, where it is documented.

A front-end is a way in for a user (a `q2` verb, a Python call, a harness's metric, a guardrail
plug-in, the service). Its `entries` are the names the contract matrix asks every guarantee of
(`tests/contract/`): one per way it is driven (lm-eval's tasks, Inspect's scorer and task). A
front-end that scores nothing itself says why (`not_scoring`); the matrix skips it with that reason.
The tests check this table against the package (the `q2` verbs, the console scripts and entry
points, lm-eval's task files, the modules) and against the docs (`docs/frontends.md`,
`docs/layout.md`), so it cannot drift from the tree.

>>> by_name("ragas").extra, by_name("ragas").page
('ragas', 'ragas.md')
>>> "lm-eval q2_wow" in entries()
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["command", "python", "parlai", "harness", "guardrail", "service", "hub", "corpus"]
KINDS: tuple[Kind, ...] = ("command", "python", "parlai", "harness", "guardrail", "service", "hub", "corpus")

# How a front-end takes Q²'s options: as `q2` flags (`--qg-model`), as Python keywords (every
# option), as the adapters' keywords (`options.ADAPTER_KEYWORDS`) plus `options={...}`, as ParlAI's
# `--q2-` flags, as the service's flags (a request carries no model option), or none.
Options = Literal["flags", "keywords", "adapter keywords", "parlai flags", "service flags", "none"]


@dataclass(frozen=True)
class FrontEnd:
    """One front-end: `name` as the docs call it, `module` where it lives, `kind`, the setup.cfg
    `extra` that installs its framework (None: the core), its docs `page`, how it takes Q²'s
    options, the contract matrix's `entries`, and, for one that scores nothing itself, why."""

    name: str
    module: str
    kind: Kind
    extra: str | None
    page: str
    options: Options
    entries: tuple[str, ...]
    not_scoring: str = ""


FRONT_ENDS: tuple[FrontEnd, ...] = (
    FrontEnd("q2 score", "q2_metric.cli.score", "command", None, "cli.md", "flags", ("q2 score",)),
    FrontEnd("q2 rescore", "q2_metric.cli.rescore", "command", None, "spans.md", "flags", ("q2 rescore",)),
    FrontEnd("q2 agree", "q2_metric.cli.agree", "command", None, "cli.md", "flags", ("q2 agree",)),
    FrontEnd(
        "q2 demo",
        "q2_metric.cli.demo",
        "command",
        None,
        "cli.md",
        "flags",
        ("q2 demo",),
        "scores the bundled sample only (no user input, no options but --tiny); its engine call is q2 score's",
    ),
    FrontEnd(
        "q2 meta-eval",
        "q2_metric.cli.meta_eval",
        "command",
        "meta",
        "meta-eval.md",
        "flags",
        ("q2 meta-eval",),
        "meta-evaluation of given scores; its Q² column is 'benchmark q2 column' (q2 score's scorer)",
    ),
    FrontEnd(
        "q2 calibrate",
        "q2_metric.cli.calibrate",
        "command",
        "meta",
        "cli.md",
        "none",
        ("q2 calibrate",),
        "chooses a threshold on given scores and labels; scores nothing",
    ),
    FrontEnd(
        "benchmark q2 column",
        "q2_metric.meta.benchmark",
        "command",
        "meta",
        "benchmark.md",
        "flags",
        ("benchmark q2 column",),
    ),
    FrontEnd(
        "q2 data",
        "q2_metric.cli.data",
        "command",
        None,
        "meta-eval.md",
        "none",
        ("q2 data",),
        "writes the labelled sets' templates; scores nothing",
    ),
    FrontEnd(
        "q2 convert-nli",
        "q2_metric.cli.convert_nli",
        "command",
        None,
        "models.md",
        "none",
        ("q2 convert-nli",),
        "converts the released NLI archive; scores nothing",
    ),
    FrontEnd(
        "q2 register",
        "q2_metric.cli.register",
        "command",
        None,
        "python.md",
        "none",
        ("q2 register",),
        "makes evaluate.load('q2') find the module; scores nothing",
    ),
    FrontEnd(
        "q2 publish",
        "q2_metric.cli.publish",
        "command",
        None,
        "hub.md",
        "none",
        ("q2 publish",),
        "writes given results into the Hub's Eval Results files; scores nothing",
    ),
    FrontEnd(
        "q2 space",
        "q2_metric.cli.space",
        "command",
        "space",
        "hub.md",
        "none",
        ("q2 space",),
        "assembles the Space folder; the Space's scoring is 'space function'",
    ),
    FrontEnd("Space", "q2_metric.hub.space", "hub", "space", "hub.md", "keywords", ("space function",)),
    FrontEnd("Ray", "q2_metric.corpus.ray", "corpus", "ray", "ray.md", "flags", ("q2 score --ray",)),
    FrontEnd(
        "Python", "q2_metric", "python", None, "python.md", "keywords", ("python score", "python Q2Scorer")
    ),
    FrontEnd(
        "evaluate",
        "q2_metric.q2_metric",
        "python",
        None,
        "python.md",
        "keywords",
        ("evaluate compute", "evaluate add_batch"),
    ),
    FrontEnd(
        "ParlAI",
        "parlai_ext",
        "parlai",
        None,
        "parlai.md",
        "parlai flags",
        ("parlai --metrics q2", "parlai Q2Teacher"),
    ),
    FrontEnd(
        "lm-eval",
        "q2_metric.harness.lm_eval",
        "harness",
        "lm-eval",
        "lm-eval.md",
        "keywords",
        ("lm-eval q2_dialogue", "lm-eval q2_wow", "lm-eval q2_wow_evaluate"),
    ),
    FrontEnd(
        "Inspect AI",
        "q2_metric.harness.inspect_task",
        "harness",
        "inspect",
        "inspect.md",
        "adapter keywords",
        ("inspect q2", "inspect q2_wow"),
    ),
    FrontEnd(
        "ragas",
        "q2_metric.harness.ragas_metric",
        "harness",
        "ragas",
        "ragas.md",
        "adapter keywords",
        ("ragas q2",),
    ),
    FrontEnd(
        "LightEval",
        "q2_metric.harness.lighteval_task",
        "harness",
        "lighteval",
        "lighteval.md",
        "adapter keywords",
        ("lighteval q2_wow",),
    ),
    FrontEnd(
        "MLflow",
        "q2_metric.harness.mlflow_scorer",
        "harness",
        "mlflow",
        "mlflow.md",
        "adapter keywords",
        ("mlflow q2",),
    ),
    FrontEnd(
        "DeepEval",
        "q2_metric.harness.deepeval_metric",
        "harness",
        "deepeval",
        "deepeval.md",
        "adapter keywords",
        ("deepeval q2",),
    ),
    FrontEnd(
        "q2 serve", "q2_metric.serve.app", "service", "serve", "serve.md", "service flags", ("q2 serve",)
    ),
    FrontEnd(
        "Ray Serve",
        "q2_metric.serve.ray_serve",
        "service",
        "serve",
        "serve.md",
        "adapter keywords",
        ("ray serve",),
        "the same app as q2 serve inside a Ray Serve deployment (its own test: test_serve_ray)",
    ),
    FrontEnd(
        "Guardrails AI",
        "q2_metric.guardrails.guardrails_ai",
        "guardrail",
        "guardrails",
        "guardrails.md",
        "adapter keywords",
        ("guardrails guardrails_ai",),
    ),
    FrontEnd(
        "NeMo Guardrails",
        "q2_metric.guardrails.nemo",
        "guardrail",
        "nemo",
        "guardrails.md",
        "none",
        ("guardrails nemo",),
        "relays the Q² service's verdict to NeMo Guardrails (its flow blocks the answer); scores nothing itself",
    ),
)


def by_name(name: str) -> FrontEnd:
    """The front-end called `name` (KeyError otherwise)."""
    for front in FRONT_ENDS:
        if front.name == name:
            return front
    raise KeyError(name)


def entries() -> dict[str, FrontEnd]:
    """Every name the contract matrix asks, with its front-end."""
    return {entry: front for front in FRONT_ENDS for entry in front.entries}
