"""The digest of the default results on English text: the bundled WoW sample and a BEGIN sample,
scored by the tiny models the tests build (`tests/conftest.py`'s `tiny_config`), every response's
full result and the system figures, as canonical JSON (the signature left out: it names versions)."""

from __future__ import annotations

import csv
import hashlib
import json
from typing import Any

from support.data import DATA, sample_rows

BEGIN_SAMPLE = DATA / "begin" / "wow" / "begin_dev_wow.tsv"
BEGIN_ROWS = 40  # the first rows of BEGIN's WoW dev file


def begin_rows(n: int = BEGIN_ROWS) -> list[dict[str, str]]:
    with open(BEGIN_SAMPLE, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[:n]


def english_sets() -> dict[str, tuple[list[str], list[str]]]:
    """name -> (responses, knowledge): the bundled sample and the BEGIN sample."""
    wow, begin = sample_rows(), begin_rows()
    return {
        "wow_sample": ([r["response"] for r in wow], [r["knowledge"] for r in wow]),
        "begin_sample": ([r["response"] for r in begin], [r["knowledge"] for r in begin]),
    }


def result_digest(result: Any) -> str:
    """sha256 of the result's system figures and every response's full result, canonical JSON."""
    payload = {"system": result.system.to_dict(), "responses": [r.to_dict() for r in result.responses]}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()
