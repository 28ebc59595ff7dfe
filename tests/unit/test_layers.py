"""The package's layers: data flows downward, and nothing imports in a circle.

Three layers: the front-ends (`cli/`, `meta/`, `hub/`, `corpus/`, `harness/`, `guardrails/`,
`serve/`, the `evaluate` module `q2_metric.q2_metric`, and the test aids `testing/`) -> the contract
(`q2_metric.frontend`) and the runtime (`q2_metric.runtime`: batching, the engine thread) -> the
engine (the other top-level modules, `steps/`, `models/`, `io/`). No layer imports one above it; no
front-end imports another front-end (the CLI, which runs them all, may); the rules in `steps/`
import no model backend, reader or scorer; nothing of `q2_metric` imports `parlai_ext`; and no
module but a package `__init__` passes on names it imported.

The import graph is read from the source files with `ast` (nothing of the package is imported):
every `import` and `from ... import` of a `q2_metric` module, at module level or inside a function
(a deferred import still ties the two modules together), relative ones resolved; `from package
import name` counts as importing `package.name` when that is a module, else `package`.
Imports under `if TYPE_CHECKING:` count too: they never run, but a module that names another's
types in its annotations depends on it as much as one that calls it (the type checker and a reader
load both), so a circle closed through annotations is a circle (`display` named `results`' types
while `results` imported `display` for `figure`: a circle that leaving those imports out hid).
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.data import ROOT

PACKAGE = ROOT / "q2_metric"
FRONT_ENDS = ("cli", "meta", "hub", "corpus", "harness", "guardrails", "serve", "q2_metric", "testing")
MIDDLE = ("frontend", "registry", "runtime")  # the contract (with its registry of front-ends) and the runtime
RANK = {"core": 0, "middle": 1, "front": 2}


def module_names(root: Path = PACKAGE) -> dict[str, Path]:
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The `q2_metric` modules that module `name` (file `path`) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a module a.b.c, or a name
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_no_import_cycle_in_the_package():
    assert cycles(import_graph()) == []


def test_the_walker_finds_a_circle_and_reads_the_real_edges(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nimport pkg.a\nif TYPE_CHECKING:\n    import pkg.d\n"
    )
    (pkg / "d.py").write_text("import pkg.c\n")
    modules = module_names(pkg)
    graph = {n: imports_of(n, p, modules) for n, p in modules.items()}
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.c"}
    assert graph["pkg.c"] == {"pkg.a", "pkg.d"}  # an import for annotations only is an edge too
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.d", "pkg.sub.b"]]
    # the circle this issue removed: reference_tokenization <-> t5_cross_bias
    real = import_graph()
    assert "q2_metric.models.loading" in real["q2_metric.models.paper.t5_cross_bias"]
    assert "q2_metric.models.paper.t5_cross_bias" not in real["q2_metric.models.loading"]
    # and display <-> results, closed through display's annotations: results prints with the leaf
    assert "q2_metric.results" in real["q2_metric.display"]
    assert real["q2_metric.figures"] == set() and "q2_metric.display" not in real["q2_metric.results"]


def layer(module: str, package: str = "q2_metric") -> str:
    """`front` for a front-end or test aid, `middle` for the contract and the runtime, `init` for
    the package itself, else `core` (the engine)."""
    if module == package:
        return "init"
    first = module.split(".")[1]
    return "front" if first in FRONT_ENDS else "middle" if first in MIDDLE else "core"


def front_end(module: str) -> str:
    """The front-end a module belongs to (its folder under the package, or the module itself)."""
    return module.split(".")[1]


def upward_imports(graph: dict[str, set[str]], package: str = "q2_metric") -> list[tuple[str, str]]:
    """(module, module of a higher layer it imports), for every such edge."""
    return sorted(
        (m, d)
        for m, deps in graph.items()
        if layer(m, package) in RANK
        for d in deps
        if layer(d, package) in RANK and RANK[layer(d, package)] > RANK[layer(m, package)]
    )


def sideways_imports(graph: dict[str, set[str]], package: str = "q2_metric") -> list[tuple[str, str]]:
    """(front-end module, module of another front-end it imports), the CLI's left out: it runs them all."""
    return sorted(
        (m, d)
        for m, deps in graph.items()
        if layer(m, package) == "front" and front_end(m) != "cli"
        for d in deps
        if layer(d, package) == "front" and front_end(d) != front_end(m)
    )


def test_no_layer_imports_one_above_it():
    assert upward_imports(import_graph()) == []


def test_no_front_end_imports_another():
    assert sideways_imports(import_graph()) == []


def test_the_runtime_and_the_contract_are_the_middle_layer():
    graph = import_graph()
    assert layer("q2_metric.runtime.micro") == layer("q2_metric.frontend") == "middle"
    assert "q2_metric.runtime.micro" in graph["q2_metric.serve.service"]  # serve stands on the runtime
    assert "q2_metric.frontend" in graph["q2_metric.runtime.engine"]  # the runtime on the contract
    assert layer("q2_metric.scorer") == "core"


def test_the_layer_check_finds_an_upward_and_a_sideways_import(tmp_path):
    pkg = tmp_path / "pkg"
    for folder in ("cli", "steps", "harness", "serve", "runtime"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "main.py").write_text("from pkg.steps import rule\nfrom pkg.serve import app\n")
    (pkg / "steps" / "rule.py").write_text("def f():\n    from pkg.cli import main\n")
    (pkg / "runtime" / "micro.py").write_text("from pkg.steps import rule\nfrom pkg.harness import ad\n")
    (pkg / "harness" / "ad.py").write_text("from pkg.runtime import micro\n")
    (pkg / "serve" / "app.py").write_text("from pkg.runtime import micro\nfrom pkg.harness import ad\n")
    modules = module_names(pkg)
    graph = {n: imports_of(n, p, modules) for n, p in modules.items()}
    assert upward_imports(graph, "pkg") == [
        ("pkg.runtime.micro", "pkg.harness.ad"),
        ("pkg.steps.rule", "pkg.cli.main"),
    ]
    # the CLI imports whom it likes; serve importing harness is a front-end importing another
    assert sideways_imports(graph, "pkg") == [("pkg.serve.app", "pkg.harness.ad")]


def test_rules_import_no_backend_reader_or_scorer():
    banned = ("q2_metric.models", "q2_metric.io", "q2_metric.scorer")
    found = {
        m: sorted(d for d in deps if d.startswith(banned))
        for m, deps in import_graph().items()
        if m.startswith("q2_metric.steps")
    }
    assert {m: d for m, d in found.items() if d} == {}


def test_the_package_never_imports_parlai_ext():
    users = [
        str(p)
        for p in PACKAGE.rglob("*.py")
        if any(
            isinstance(n, (ast.Import, ast.ImportFrom)) and "parlai_ext" in ast.unparse(n)
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        )
    ]
    assert users == []


def passed_on(path: Path) -> list[str]:
    """Names a module imports from this project and never uses itself (it only passes them on)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    text = " ".join(
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )
    out = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("q2_metric", "parlai_ext")):
            out += [
                a.asname or a.name
                for a in node.names
                if (a.asname or a.name) not in used and (a.asname or a.name) not in text.split()
            ]
    return out


def test_no_module_but_a_package_init_passes_names_on():
    # (a file outside any Python package is data read by path: lm-eval's task folder, whose `utils.py`
    # must name the task functions that its YAML files call)
    files = [
        p
        for p in list(PACKAGE.rglob("*.py")) + list((PACKAGE.parent / "parlai_ext").glob("*.py"))
        if p.name != "__init__.py" and (p.parent / "__init__.py").is_file()
    ]
    assert {str(p): names for p in files if (names := passed_on(p))} == {}


def test_the_re_export_check_sees_one(tmp_path):
    shim = tmp_path / "shim.py"
    shim.write_text(
        "from q2_metric.config import Q2Config  # noqa: F401\nfrom q2_metric.errors import Q2Error\n"
        "def f() -> None:\n    raise Q2Error('x')\n"
    )
    assert passed_on(shim) == ["Q2Config"]
