"""MkDocs hook: the site's front page is README.md, its `docs/...` links made relative to docs/."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent / "README.md"


def readme_as_index(text: str) -> str:
    """README.md's text with `](docs/page.md)` links as the site sees them (`](page.md)`)."""
    return re.sub(r"\]\(docs/", "](", text)


def on_page_read_source(page, config):
    if page.file.src_uri == "index.md":
        return readme_as_index(README.read_text(encoding="utf-8"))
    return None
