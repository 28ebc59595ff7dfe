"""Front-ends are adapters over the contract (`q2_metric.frontend`) and the public results: none
imports `q2_metric.steps` or `q2_metric.models` but the few listed here, each with its reason
(issue 40: 16 front-end files did before). The import graph is test_layers.py's (read with `ast`)."""

from __future__ import annotations

from unit.test_layers import PACKAGE, import_graph, imports_of, module_names

FRONT_END_PACKAGES = (
    "q2_metric.cli",
    "q2_metric.corpus",
    "q2_metric.meta",
    "q2_metric.hub",
    "q2_metric.harness",
)
ALLOWED = {
    (
        "q2_metric.cli.convert_nli",
        "q2_metric.models.allennlp_convert",
    ): "the verb is the converter of the released NLI archive (a model tool, not scoring)",
    ("q2_metric.meta.baselines", "q2_metric.models.checks"): "the baselines' own NLI model (meta-evaluation)",
    ("q2_metric.meta.baselines", "q2_metric.models.hf_nli"): "the baselines' own NLI model (meta-evaluation)",
    (
        "q2_metric.meta.baselines",
        "q2_metric.steps.response_scores",
    ): "the end-to-end NLI baseline is the fallback rule itself",
}


def reach_below() -> set[tuple[str, str]]:
    """(front-end module, steps/models module it imports)."""
    graph = import_graph()
    modules = module_names()
    for path in (PACKAGE.parent / "parlai_ext").glob("*.py"):  # ParlAI's front-end, beside the package
        graph[f"parlai_ext.{path.stem}"] = imports_of(f"parlai_ext.{path.stem}", path, modules)
    fronts = [
        m for m in graph if m.startswith(FRONT_END_PACKAGES + ("parlai_ext",)) or m == "q2_metric.q2_metric"
    ]
    return {(m, d) for m in fronts for d in graph[m] if d.startswith(("q2_metric.steps", "q2_metric.models"))}


def test_front_ends_reach_below_the_engine_only_where_listed():
    assert reach_below() - set(ALLOWED) == set()


def test_every_listed_reach_is_still_there():
    """A reach that went away leaves the list (the --tiny help's question cap now comes from
    `q2_metric.option_help`, so `cli.common` no longer imports `models.tiny`)."""
    assert set(ALLOWED) - reach_below() == set()


def test_the_check_sees_a_reach(monkeypatch):
    import unit.test_layers as layers

    real = layers.import_graph()
    monkeypatch.setattr(
        "contract.test_reach.import_graph",
        lambda: {**real, "q2_metric.cli.score": real["q2_metric.cli.score"] | {"q2_metric.steps.decision"}},
    )
    assert ("q2_metric.cli.score", "q2_metric.steps.decision") in reach_below()
