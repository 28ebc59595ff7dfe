"""Every name the documentation and the docstrings give a reader resolves in the tree as it is now:
module paths (`q2_metric.io.paths.check_run`, `from q2_metric.x import y`), file paths
(`q2_metric/steps/candidates.py`, `tests/unit/io/test_paths.py::test_name`), `q2` verbs with their
flags, and `make` targets. Read from README.md, docs/*.md, benchmarks/RESULTS.md and every
docstring of `q2_metric/`, `parlai_ext/` and `benchmarks/` (CHANGELOG.md is history: it names what
was). The files and their syntax trees are read, and the `q2` command's parser built in-process: no
module named is imported, no subprocess.

Also: the pages speak to a user, not of the project's history (no "issue 28", "the issue"), a
signature shown carries the package's version, each `pip install 'q2-metric[EXTRA]'` names an extra
of setup.cfg and comes with its from-a-checkout form, and a unit test file is named after the module
it tests (`q2_metric/x/y.py` -> `tests/unit/x/test_y.py` or `test_y_TOPIC.py`) unless it is listed
below as testing several."""

from __future__ import annotations

import argparse
import ast
import configparser
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGES = ("q2_metric", "parlai_ext")
CODE_DIRS = (*PACKAGES, "benchmarks")


@dataclass(frozen=True)
class Text:
    where: str  # file:line
    text: str
    base: Path  # the folder a relative path in it may be relative to
    code: bool  # a code span or block (commands are looked for there only)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def page_texts(path: Path) -> Iterator[Text]:
    """A Markdown page: its prose, its code spans and its fenced blocks (commands only in code)."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT)
    prose = text
    for m in re.finditer(r"^```[^\n]*\n(.*?)^```", text, flags=re.M | re.S):
        yield Text(f"{rel}:{_line(text, m.start())}", m.group(1), path.parent, True)
        prose = prose.replace(m.group(0), "\n" * m.group(0).count("\n"), 1)
    for m in re.finditer(r"`([^`\n]+)`", prose):
        yield Text(f"{rel}:{_line(prose, m.start())}", m.group(1), path.parent, True)
    yield Text(str(rel), prose, path.parent, False)


def code_files() -> list[Path]:
    return sorted(p for d in CODE_DIRS for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts)


def docstring_texts(path: Path) -> Iterator[Text]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(ROOT)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                line = node.body[0].lineno
                for m in re.finditer(r"`([^`\n]+)`", doc):
                    yield Text(f"{rel}:{line}", m.group(1), path.parent, True)
                yield Text(f"{rel}:{line}", doc, path.parent, False)


@cache
def all_texts() -> tuple[Text, ...]:
    out = [t for p in PAGES for t in page_texts(p)]
    out += [t for p in code_files() for t in docstring_texts(p)]
    return tuple(out)


@cache
def texts_with_notebook() -> tuple[Text, ...]:
    """With benchmarks/RESULTS.md, whose names must resolve too (it is a record of runs: the checks
    on what a page says to a user leave it out)."""
    return all_texts() + tuple(page_texts(ROOT / "benchmarks" / "RESULTS.md"))


# -- module paths ---------------------------------------------------------------------------------


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in ("__all__", "_EXPORTS") for t in node.targets
            ):  # the names a package exports, also those imported on first use
                names |= {
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try | ast.With):
            todo += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            for h in getattr(node, "handlers", []):
                todo += h.body
    return names


@cache
def _module_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _module_file(dotted: str) -> Path | None:
    base = ROOT / dotted.replace(".", "/")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def resolve_dotted(dotted: str) -> str | None:
    """None when `dotted` names a module, a package, or a name defined in one (and, for a class, one
    of its members); else what is missing."""
    parts = dotted.split(".")
    k = len(parts)
    while k and _module_file(".".join(parts[:k])) is None:
        k -= 1
    if not k:
        return f"no module {parts[0]}"
    module = _module_file(".".join(parts[:k]))
    rest = parts[k:]
    if not rest:
        return None
    tree = _module_tree(module)
    if rest[0] not in _top_level_names(tree):
        return f"{'.'.join(parts[:k])} defines no {rest[0]}"
    if len(rest) > 1:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == rest[0]), None)
        if cls is not None:
            members = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            members |= {
                t.id
                for n in cls.body
                if isinstance(n, ast.Assign | ast.AnnAssign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)
            }
            if rest[1] not in members and not cls.bases:  # an inherited member is not looked for
                return f"{'.'.join(parts[: k + 1])} has no member {rest[1]}"
    return None


DOTTED = re.compile(r"(?<![\w./-])((?:q2_metric|parlai_ext)(?:\.[A-Za-z_]\w*)+)")
FROM_IMPORT = re.compile(
    r"\bfrom[ ]+((?:q2_metric|parlai_ext)[\w.]*)[ ]+import[ ]+(?:\(([\w\s,]+)\)|([\w ,]+))"
)


def dotted_names() -> list[tuple[str, str]]:
    found = []
    for t in texts_with_notebook():
        for m in DOTTED.finditer(t.text):
            if not m.group(1).endswith(".py"):  # `q2_metric.py`: a file
                found.append((t.where, m.group(1)))
        for m in FROM_IMPORT.finditer(t.text):
            for piece in (m.group(2) or m.group(3)).split(","):
                name = piece.split()[0] if piece.split() else ""  # `a as b`: a
                if re.fullmatch(r"[A-Za-z_]\w*", name):
                    found.append((t.where, f"{m.group(1)}.{name}"))
    return sorted(set(found))


def test_dotted_resolver_on_known_names():
    assert resolve_dotted("q2_metric.io.paths.check_run") is None
    assert resolve_dotted("q2_metric.io.read_rows") is None  # a package's name
    assert resolve_dotted("q2_metric.Q2Scorer") is None  # imported on first use
    assert resolve_dotted("q2_metric.scorer.Q2Scorer.score") is None
    assert resolve_dotted("q2_metric.nowhere") is not None
    assert resolve_dotted("q2_metric.io.paths.no_such_function") is not None
    assert resolve_dotted("q2_metric.scorer.Q2Scorer.no_such_method") is not None


def test_every_module_path_named_resolves():
    bad = [f"{where}: {name} ({why})" for where, name in dotted_names() if (why := resolve_dotted(name))]
    assert not bad, "\n".join(bad)


# -- file paths ------------------------------------------------------------------------------------

ANCHORED = re.compile(
    r"(?<![\w./$<-])((?:q2_metric|parlai_ext|tests|benchmarks|docs|hub_card)/[\w./-]*[\w/])(::\w+)?(?![\w<>*{]|\.\w)"
)
RELATIVE_PY = re.compile(r"(?<![\w./$<-])((?:\w+/)+\w+\.py)(::\w+)?(?![\w<>*{])")


def _resolves(path: str, base: Path) -> Path | None:
    """The file or folder `path` names: from the repository root, the package, or any folder above
    the text naming it (a docstring's `speed/flops.py` from `models/`)."""
    candidates = [ROOT / path, ROOT / "q2_metric" / path]
    here = base
    while here != ROOT and ROOT in here.parents:
        candidates.append(here / path)
        here = here.parent
    return next((c for c in candidates if c.exists()), None)


# Names shaped like our paths that are not: Inspect AI's registry names of the scorer and the task,
# the released code's files (github.com/orhonovich/q-squared), which the conformance run reads, and
# the files of the benchmarks whose rules meta.ragtruth follows.
NOT_OUR_PATHS = {
    "q2_metric/q2",
    "q2_metric/q2_wow",
    "pipeline/question_generation.py",
    "pipeline/question_answering.py",
    # RAGTruth's (github.com/ParticleMedia/RAGTruth) and LettuceDetect's (github.com/KRLabsOrg/LettuceDetect)
    "baseline/prepare_dataset.py",
    "scripts/evaluate.py",
    "lettucedetect/models/evaluator.py",
    # Guardrails AI's and NeMo Guardrails' own files, read for the streaming runner and IORails
    "validator_service/sequential_validator_service.py",
    "nemoguardrails/manifests/registry.py",
    "manifests/registry.py",
    "manifests/catalog.py",
    "guardrails/compiled_rail.py",
    "guardrails/iorails.py",
}


def file_paths() -> list[tuple[str, str, str, Path]]:
    found = set()
    for t in texts_with_notebook():
        for pattern in (ANCHORED, RELATIVE_PY):
            for m in pattern.finditer(t.text):
                if m.group(1) not in NOT_OUR_PATHS:
                    found.add((t.where, m.group(1), (m.group(2) or "")[2:], t.base))
    return sorted(found)


def test_every_file_path_named_exists():
    bad = []
    for where, path, test_name, base in file_paths():
        got = _resolves(path, base)
        if got is None:
            bad.append(f"{where}: {path}")
        elif test_name and not re.search(rf"^\s*(?:async )?def {test_name}\(", got.read_text(), flags=re.M):
            bad.append(f"{where}: {path}::{test_name} (no such test)")
    assert not bad, "\n".join(bad)


# -- commands --------------------------------------------------------------------------------------


@cache
def q2_parser() -> argparse.ArgumentParser:
    from q2_metric.cli import build_parser  # light: the verbs import what they need when they run

    return build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def check_q2_command(words: list[str]) -> str | None:
    """None when `q2 WORDS...` names a verb (and sub-verb) that exists and only flags it takes."""
    parser = q2_parser()
    flags = _flags(parser)
    rest = list(words)
    while rest and not rest[0].startswith("-"):
        subs = _subparsers(parser)
        if not subs:
            break
        verb = rest.pop(0)
        if verb not in subs:
            return f"no verb {verb!r}"
        parser = subs[verb]
        flags |= _flags(parser)
    for w in rest:
        flag = w.split("=", 1)[0]
        if re.fullmatch(r"--[a-z][\w-]*", flag) and flag not in flags:
            return f"no flag {flag}"
    return None


# `q2` where a command starts (a line, after `;`, `&&`, `|` or `$(`), not as an argument's value
Q2_CMD = re.compile(r"(?:^|[;&|]|\$\()[ \t]*(?:\S*/)?q2(?:-metric)? ((?:[^\n#|;&)`\\]|\\\n)*)", flags=re.M)
MAKE_CMD = re.compile(r"(?:^|[;&|]|\$\()[ \t]*make ([a-z][\w-]*)", flags=re.M)


def q2_commands() -> list[tuple[str, list[str]]]:
    found = []
    for t in texts_with_notebook():
        if not t.code:
            continue
        for m in Q2_CMD.finditer(t.text):
            words = m.group(1).replace("\\\n", " ").split()
            if words and re.fullmatch(r"[a-z][a-z-]*|--?[a-z][\w-]*", words[0]):
                found.append((t.where, words))
    return found


def test_q2_command_checker():
    assert check_q2_command(["score", "in.csv", "-o", "out.csv", "--summary", "s.json"]) is None
    assert check_q2_command(["data", "fetch"]) is None
    assert check_q2_command(["--version"]) is None
    assert check_q2_command(["scroe", "in.csv"]) is not None
    assert check_q2_command(["score", "in.csv", "--no-such-flag"]) is not None


def test_every_q2_command_named_exists():
    bad = [f"{where}: q2 {' '.join(w)} ({why})" for where, w in q2_commands() if (why := check_q2_command(w))]
    assert not bad, "\n".join(bad)


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w.-]+)\s*:(?!=)", text, flags=re.M))


def test_every_make_target_named_exists():
    targets = make_targets()
    assert {"run", "try", "test", "test-fast", "docs"} <= targets
    bad = [
        f"{t.where}: make {m.group(1)}"
        for t in texts_with_notebook()
        if t.code
        for m in MAKE_CMD.finditer(t.text)
        if m.group(1) not in targets
    ]
    assert not bad, "\n".join(bad)


# -- what the pages say ----------------------------------------------------------------------------

# an issue, the team, or what the code did before ("(was: ...)": CHANGELOG.md says that)
HISTORY = re.compile(r"\b(?:issues? #?\d+|the issue\b|the lead\b|helper session)|\(was[: ]", flags=re.I)


def test_no_page_speaks_of_issues():
    """The pages and docstrings describe the package as it is, to a user; the history is in
    CHANGELOG.md."""
    bad = [
        f"{t.where}: ...{t.text[max(0, m.start() - 40) : m.end() + 20]!r}..."
        for t in all_texts()
        if not t.code
        for m in HISTORY.finditer(t.text)
    ]
    assert not bad, "\n".join(bad)


def test_signatures_shown_carry_this_version():
    version = re.search(r'__version__ = "([^"]+)"', (ROOT / "q2_metric" / "version.py").read_text()).group(1)
    bad = {
        f"{t.where}: q2:{v}"
        for t in all_texts()
        for v in re.findall(r"\bq2:(\d+\.\d+\.\d+)\|", t.text)
        if v != version
    }
    assert not bad, "\n".join(sorted(bad))


def _extras() -> set[str]:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "setup.cfg", encoding="utf-8")
    return set(cfg["options.extras_require"])


PIP_EXTRA = re.compile(r"pip install (?:-e )?['\"](q2-metric|\.)\[([\w,-]+)\]['\"]")


def test_install_lines_name_real_extras_and_a_checkout_form():
    """`pip install 'q2-metric[lm-eval]'` (from an index) beside `pip install -e '.[lm-eval]'` (from a
    checkout), on the same page, for every extra named."""
    extras = _extras()
    assert {"lm-eval", "inspect", "ragas", "docs"} <= extras
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        named = {(kind, e) for kind, group in PIP_EXTRA.findall(text) for e in group.split(",")}
        assert {e for _, e in named} <= extras, (page.name, {e for _, e in named} - extras)
        index = {e for k, e in named if k == "q2-metric"}
        checkout = {e for k, e in named if k == "."}
        assert index <= checkout, f"{page.name}: no `pip install -e '.[EXTRA]'` for {index - checkout}"


# -- test files named after their modules ----------------------------------------------------------

# Unit test files that test several modules together (or a package's face), with what they test.
SEVERAL = {
    "test_layers.py": "the imports of every module",
    "test_docs_names.py": "the names in the docs and docstrings",
    "cli/test_main.py": "`q2` itself: cli/__init__.py's main",
    "io/test_guard.py": "io/paths.py's guard through every front-end",
    "io/test_read.py": "io/__init__.py's read_rows, through q2 score too",
    "io/test_read_nested.py": "io/__init__.py's read_table over every format",
    "test_repository_alone.py": "every file of the repository: none reads beside the checkout",
}


def _names_a_module(rel: Path) -> bool:
    """`x/test_y.py` or `x/test_y_topic.py` with `q2_metric/x/y.py` (or the package `y`)."""
    stem = rel.stem.removeprefix("test_")
    folder = ROOT / "q2_metric" / rel.parent
    parts = stem.split("_")
    return any(
        (folder / f"{'_'.join(parts[:k])}.py").is_file() or (folder / "_".join(parts[:k])).is_dir()
        for k in range(len(parts), 0, -1)
    )


def test_unit_test_files_are_named_after_their_module():
    unit = ROOT / "tests" / "unit"
    files = [p.relative_to(unit) for p in unit.rglob("test_*.py")]
    assert files
    bad = [str(f) for f in files if f.as_posix() not in SEVERAL and not _names_a_module(f)]
    assert not bad, f"name these after the module they test, or list them in SEVERAL: {bad}"
    gone = [f for f in SEVERAL if not (unit / f).is_file()]
    assert not gone, gone


@pytest.mark.parametrize("name", ["steps/test_candidates.py", "test_scorer_threads.py", "io/test_paths.py"])
def test_module_name_rule_on_known_files(name):
    assert _names_a_module(Path(name))
    assert not _names_a_module(Path("steps/test_no_such_module.py"))


# -- docs/layout.md's map against the tree ------------------------------------------------------------


def _layout_sections() -> dict[str, str]:
    """The map block of docs/layout.md: "" -> the text of the package's top-level lines, and each
    `name/` -> the text of its lines (a line starting `  name/` opens it; deeper lines continue it)."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    sections: dict[str, str] = {"": ""}
    current = ""
    for line in block.splitlines()[1:]:
        opened = re.match(r"  (\w+)/", line)
        if opened:
            current = opened.group(1)
            sections[current] = ""
        elif re.match(r"  \S", line) or re.match(r"\S", line):
            current = ""
        sections[current] += line + "\n"
    return sections


def test_the_layout_map_names_every_package_and_module():
    sections = _layout_sections()
    package = ROOT / "q2_metric"
    missing = []
    for path in sorted(package.glob("*.py")):
        if path.name not in sections[""]:
            missing.append(f"q2_metric/{path.name}")
    for folder in sorted(p for p in package.iterdir() if (p / "__init__.py").is_file()):
        if folder.name not in sections:
            missing.append(f"q2_metric/{folder.name}/")
            continue
        words = set(re.findall(r"\w+", sections[folder.name]))
        for path in sorted(folder.glob("*.py")):
            if path.stem not in ("__init__", "__main__") and path.stem not in words:
                missing.append(f"q2_metric/{folder.name}/{path.name}")
    assert not missing, f"docs/layout.md's map does not name: {missing}"
    gone = [
        name for name in sections if name and not (package / name).is_dir() and not (ROOT / name).is_dir()
    ]
    assert not gone, f"docs/layout.md's map names folders that are not in the tree: {gone}"
