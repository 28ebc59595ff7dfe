"""The repository alone: no file names a folder beside the checkout (`../shared`) or a machine's
absolute path, so a user's clone reads its tests', examples' and benchmarks' data from data/ (or
the package's q2_metric/data). The one exception is the conformance run, which runs the released
code (a clone of github.com/orhonovich/q-squared, never copied here) and skips in one line without it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support.data import ANNOTATED, DATA, ROOT

# a folder beside the checkout, a path built above it, or this workplace's absolute paths
OUTSIDE = re.compile(
    r"\.\./shared|shared/(data|reference)\b|\"shared\"\s*/\s*\"(data|reference)\"|/work/|ROOT\.parent\s*/"
)
# where the released code is read from (benchmarks/conformance.py) and the page that says so;
# CHANGELOG.md tells the history, this file names the patterns
ALLOWED = {
    "benchmarks/conformance.py",
    "docs/conformance.md",
    "CHANGELOG.md",
    "tests/unit/test_repository_alone.py",
}
SKIP_DIRS = {
    ".git",
    ".venv",
    "node_modules",
    "site",
    ".conformance",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
}


def repository_files() -> list[str]:
    """The committed and to-be-committed files (git), or every file of the tree without git."""
    if (ROOT / ".git").exists():
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        return [name for name in listed if (ROOT / name).is_file()]
    return [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*")
        if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts)
    ]


def test_no_file_reads_beside_the_checkout():
    found = []
    for name in repository_files():
        if name in ALLOWED:
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary files (models, images) name no path
            continue
        found += [
            f"{name}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if OUTSIDE.search(line)
        ]
    assert not found, "\n".join(found)


def test_the_conformance_run_is_the_one_exception_and_skips_in_one_line(tmp_path):
    text = (ROOT / "benchmarks" / "conformance.py").read_text(encoding="utf-8")
    assert [
        line for line in text.splitlines() if OUTSIDE.search(line) and "=" in line and "help" not in line
    ] == ['RELEASED = ROOT.parent / "shared" / "reference" / "q-squared"']
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "conformance.py"), "--released", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0 and res.stdout.count("\n") == 1 and "conformance skipped" in res.stdout, res
    assert not (tmp_path / "none").exists()


def test_the_data_the_tests_read_is_in_the_repository_with_its_licence():
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for folder, licence in (("q2_wow", "LICENSE.txt"), ("begin/v1", "LICENSE"), ("begin/wow", "LICENSE")):
        assert (DATA / folder / licence).is_file() and f"`{folder}/" in readme
    assert "CC BY 4.0" in readme and "MIT" in readme and "FaithDial" in readme
    assert sorted(p.name for p in ANNOTATED.glob("*.csv")) == [
        "cross_annotation.csv",
        "dodeca_consistent.csv",
        "dodeca_inconsistent.csv",
        "memnet_consistent.csv",
        "memnet_inconsistent.csv",
    ]
    # data/ is the checkout's; the installed package carries only its own sample (q2_metric/data)
    assert (
        Path(ROOT / "q2_metric" / "data" / "wow_sample.csv").is_file()
        and not (ROOT / "data" / "__init__.py").exists()
    )
