"""Every import of an internal module the harness adapters use, in one place.

The package's internal layout moves (options, tiny models, table readers, bundled data); the
adapters in `q2_metric.harness` import these names from here only, so that a move is one edit.
Public names (`Q2Scorer`, `Q2Config`, `Signature`, ...) are imported from `q2_metric` directly.
"""

from __future__ import annotations

from pathlib import Path

import q2_metric
from q2_metric.coref import split_history  # a history cell -> its turns (" ||| " between turns)
from q2_metric.frontends.explain import reason_line  # a reply's score in one sentence (`q2 score`'s reason)
from q2_metric.frontends.io import read_rows  # the project's one table reader (CSV, JSONL, Parquet, datasets)
from q2_metric.frontends.options import build_config  # the one options path
from q2_metric.system_score import system_score  # the system figures of many replies
from q2_metric.tiny import meaningless_note, uses_tiny  # the tiny random models' note and test

# The annotated Wizard of Wikipedia contexts the package ships (MIT, data/LICENSE.txt).
DATA_DIR = Path(q2_metric.__file__).resolve().parent / "data"
WOW_CONTEXTS = DATA_DIR / "wow_contexts.csv"

__all__ = ["DATA_DIR", "WOW_CONTEXTS", "build_config", "meaningless_note", "read_rows", "reason_line",
           "split_history", "system_score", "uses_tiny"]
