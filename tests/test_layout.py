"""Small front-end modules (issue 30): no file of the front-ends passes `MAX_LINES` lines.

The command line is one module per verb (`q2_metric/cli/`), the readers and writers one
per format (`io_*.py`), the ParlAI adapter split into options, the teacher-side hook and the report;
this test keeps them that way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "q2_metric" / "frontends", ROOT / "parlai_ext")
MAX_LINES = 350


def front_end_files() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in folder.rglob("*.py"))


def too_long(paths: list[Path], limit: int = MAX_LINES) -> list[str]:
    """`path: N lines` for each file above `limit` lines."""
    out = []
    for path in paths:
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > limit:
            out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {count} lines")
    return out


def test_the_front_end_folders_are_found():
    files = front_end_files()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    # the split modules are there (a moved folder would otherwise pass this test with no file at all)
    for expected in ("q2_metric/frontends/cli/__init__.py", "q2_metric/io/__init__.py",
                     "parlai_ext/q2_eval.py", "parlai_ext/hook.py"):
        assert expected in names


@pytest.mark.parametrize("lines, flagged", [(MAX_LINES, False), (MAX_LINES + 1, True)])
def test_the_line_count_check_itself(tmp_path, lines, flagged):
    path = tmp_path / "m.py"
    path.write_text("x = 1\n" * lines, encoding="utf-8")
    assert bool(too_long([path])) is flagged


def test_no_front_end_file_passes_350_lines():
    assert too_long(front_end_files()) == [], (
        f"split these modules (at most {MAX_LINES} lines each, issue 30): {too_long(front_end_files())}")
