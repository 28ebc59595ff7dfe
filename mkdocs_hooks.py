"""MkDocs hook: the site's front page is README.md, its `docs/...` links made relative to docs/."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent / "README.md"
PYTHON_PAGE = README.parent / "docs" / "python.md"  # holds the option table


def readme_as_index(text: str) -> str:
    """README.md's text with `](docs/page.md)` links as the site sees them (`](page.md)`)."""
    return re.sub(r"\]\(docs/", "](", text)


def on_page_read_source(page, config):
    if page.file.src_uri == "index.md":
        return readme_as_index(README.read_text(encoding="utf-8"))
    return None


def options_table() -> str:
    """The option table of docs/python.md, made from the one declaration of every option
    (`q2_metric.options.help`) with the flags of today's `q2` and ParlAI parsers."""
    from parlai_ext.options import parlai_flags_by_option
    from q2_metric.cli.common import q2_flags
    from q2_metric.options.help import markdown_table

    return markdown_table(q2_flags(), parlai_flags_by_option())


def write_options_table(page: Path = PYTHON_PAGE) -> bool:
    """Rewrite the option table of `page`; True when it changed."""
    from q2_metric.options.help import replace_table

    text = page.read_text(encoding="utf-8")
    new = replace_table(text, options_table())
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # python mkdocs_hooks.py options-table
    import sys

    if sys.argv[1:] != ["options-table"]:
        sys.exit("usage: python mkdocs_hooks.py options-table")
    print("rewrote docs/python.md's option table" if write_options_table() else "the option table is current")
