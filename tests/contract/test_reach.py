"""Front-ends are adapters over the contract (`q2_metric.frontend`) and the public results: none
imports `q2_metric.steps` or `q2_metric.models` but the few listed here, each with its reason
(issue 40: 16 front-end files did before). The import graph is test_layers.py's (read with `ast`)."""

from __future__ import annotations

import pytest
from unit.test_layers import PACKAGE, import_graph, imports_of, module_names

FRONT_END_PACKAGES = (
    "q2_metric.cli",
    "q2_metric.corpus",
    "q2_metric.meta",
    "q2_metric.hub",
    "q2_metric.harness",
    "q2_metric.guardrails",
    "q2_metric.serve",
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
    `q2_metric.options.help`, so `cli.common` no longer imports `models.tiny`)."""
    assert set(ALLOWED) - reach_below() == set()


def test_the_check_sees_a_reach(monkeypatch):
    import unit.test_layers as layers

    real = layers.import_graph()
    monkeypatch.setattr(
        "contract.test_reach.import_graph",
        lambda: {
            **real,
            "q2_metric.cli.score": real["q2_metric.cli.score"] | {"q2_metric.steps.system_score"},
        },
    )
    assert ("q2_metric.cli.score", "q2_metric.steps.system_score") in reach_below()


# The contract's doors (issue 49): a front-end builds its options only through
# `frontend.configure` and checks its paths only through `frontend.guard`, never by calling
# `options.build_config` or `io.paths.check_run` itself (8 and 15 such calls before).
DOORS = {"build_config": "frontend.configure", "check_run": "frontend.guard"}


def front_end_files() -> list:
    files = [PACKAGE / "q2_metric.py"]
    for package in FRONT_END_PACKAGES:
        files += sorted((PACKAGE.parent / package.replace(".", "/")).rglob("*.py"))
    return files + sorted((PACKAGE.parent / "parlai_ext").glob("*.py"))


def direct_calls(files) -> list[str]:
    """`path: name` for each import or use of a door's inner function in `files`."""
    import ast

    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.Name):
                names = [node.id]
            found += [f"{path.relative_to(PACKAGE.parent)}: {n}" for n in names if n in DOORS]
    return sorted(set(found))


def test_front_ends_go_through_the_contracts_doors():
    assert len(front_end_files()) > 40  # the walk found them
    assert direct_calls(front_end_files()) == []


def test_the_door_check_sees_a_direct_call(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("from q2_metric.io.paths import check_run\ncheck_run({}, {})\n", encoding="utf-8")
    sneaky2 = tmp_path / "sneaky2.py"
    sneaky2.write_text("from q2_metric import options\noptions.build_config()\n", encoding="utf-8")
    import contract.test_reach as reach

    real = reach.PACKAGE
    try:
        reach.PACKAGE = tmp_path / "q2_metric"  # relative_to: the files' parent
        found = direct_calls([sneaky, sneaky2])
    finally:
        reach.PACKAGE = real
    assert found == ["sneaky.py: check_run", "sneaky2.py: build_config"]


# Scoring's door (issue 49): a front-end scores through `frontend.score_items` (items in, an
# `Outcome` out: validation, statuses and counts in one place), never by calling `Q2Scorer.score`
# itself (11 such calls in 7 front-end modules before). A call `<receiver>.score(...)` is allowed
# where the receiver is the runtime's micro-batcher (its `score` goes through `score_checked`) and where
# listed here with its reason.
SCORE_ALLOWED = {
    ("q2_metric/meta/baselines.py", "bert_score"): "BERTScore's own function (a baseline), not a Q² scorer",
    (
        "q2_metric/serve/service.py",
        "micro",
    ): "the runtime's micro-batcher (MicroBatcher): its score goes through score_checked",
}


def _shown(path) -> str:
    try:
        return str(path.relative_to(PACKAGE.parent))
    except ValueError:  # a file outside the checkout (the check's own test)
        return path.name


def score_calls(files) -> list[str]:
    """`path: receiver` for each call `receiver.score(...)` in `files` that is neither the harness
    batcher's nor listed in `SCORE_ALLOWED`."""
    import ast

    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = ast.unparse(node.func.value)
            # the engine's door for checked inputs is the contract's own (`frontend.score_checked`)
            if node.func.attr != "score" and not (
                node.func.attr == "score_checked" and receiver != "frontend"
            ):
                continue
            shown = _shown(path)
            batcher = shown.startswith("q2_metric/harness/") and receiver.rpartition(".")[2].endswith(
                "batcher"
            )
            if not batcher and (shown, receiver) not in SCORE_ALLOWED:
                found.append(f"{shown}: {receiver}")
    return sorted(set(found))


def test_front_ends_score_only_through_score_items():
    assert score_calls(front_end_files()) == []


def test_every_listed_score_call_is_still_there():
    files = front_end_files()
    real = SCORE_ALLOWED.copy()
    SCORE_ALLOWED.clear()
    try:
        found = score_calls(files)
    finally:
        SCORE_ALLOWED.update(real)
    assert {tuple(f.split(": ")) for f in found} == set(real)


def test_the_score_check_sees_a_direct_call(tmp_path, monkeypatch):
    import contract.test_reach as reach

    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text(
        "def run(scorer, self, config, batcher):\n"
        "    scorer.score(['a'], ['b'])\n"
        "    self.scorer(config).score(['a'], ['b'])\n"
        "    batcher.score(1)\n"  # not in the harness: a batcher elsewhere is no exception
        "    engine.score_checked(['a'], ['b'])\n"  # the engine's door for checked inputs
        "    frontend.score_checked(scorer, [])\n"  # the contract's: allowed
        "    scorer.score_items([])\n",  # another name: not a call of `score`
        encoding="utf-8",
    )
    real = reach.front_end_files()
    monkeypatch.setattr("contract.test_reach.front_end_files", lambda: [*real, sneaky])
    assert reach.score_calls(reach.front_end_files()) == [
        "sneaky.py: batcher",
        "sneaky.py: engine",
        "sneaky.py: scorer",
        "sneaky.py: self.scorer(config)",
    ]
    with pytest.raises(AssertionError):
        reach.test_front_ends_score_only_through_score_items()
