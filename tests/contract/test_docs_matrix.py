"""docs/guarantees.md's front-end matrix is the matrix the tests run: one row per front-end of the
registry that scores, one column per guarantee, each cell naming the test that checks it (or why the
guarantee does not apply), checked against the parametrization of `test_matrix.py`."""

from __future__ import annotations

import re

from support.data import ROOT

from contract import test_matrix
from contract.frontends import NOT_SCORING, registry

DOC = ROOT / "docs" / "guarantees.md"
HEADING = "## The front-end matrix"
TESTS = {
    "bad option": "test_bad_option",
    "missing model": "test_missing_model",
    "bad item": "test_bad_item",
    "empty": "test_empty",
    "q2 score rows": "test_q2_score_rows",
    "signature": "test_signature",
    "outputs": "test_outputs",
    "spans": "test_spans",
    "records": "test_records",
    "operating point": "test_operating_point",
}


def expected_cell(name: str, guarantee: str) -> str:
    adapter = test_matrix.ALL[name]
    if guarantee == "bad item" and adapter.bad_item == "n/a":
        return "n/a: " + adapter.bad_item_reason
    if guarantee == "spans" and getattr(adapter, "spans_reason", None):
        return "n/a: " + adapter.spans_reason
    if guarantee == "records" and getattr(adapter, "records_reason", None):
        return "n/a: " + adapter.records_reason
    if guarantee == "operating point" and getattr(adapter, "op_reason", None):
        return "n/a: " + adapter.op_reason
    if guarantee == "outputs" and getattr(adapter, "writes", True) is False:
        return "n/a: writes no file"
    test = f"`{TESTS[guarantee]}[{name}]`"
    if guarantee == "bad item" and adapter.bad_item == "refused":
        return test + " (the call is refused, naming the item)"
    return test


def expected_rows() -> list[list[str]]:
    scoring = [n for n in registry() if n not in NOT_SCORING]
    return [[name, *(expected_cell(name, g) for g in test_matrix.GUARANTEES)] for name in scoring]


def doc_rows() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["front-end", *test_matrix.GUARANTEES]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def parametrized_ids(function) -> set[str]:
    """The names a test of test_matrix.py is run for (its `name` parametrization)."""
    names = set()
    for mark in getattr(function, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == "name":
            names |= {p.values[0] for p in mark.args[1]}
    return names


def test_the_doc_table_is_the_matrix():
    assert doc_rows() == expected_rows()


def test_every_test_a_cell_names_exists():
    for row in doc_rows():
        for guarantee, cell in zip(test_matrix.GUARANTEES, row[1:]):
            found = re.match(r"`(test_\w+)\[(.+?)\]`", cell)
            if found is None:
                assert cell.startswith("n/a: "), cell
                continue
            test, name = found.groups()
            assert test == TESTS[guarantee] and name == row[0]
            assert name in parametrized_ids(getattr(test_matrix, test)), cell


def markdown_table() -> str:
    """The table as docs/guarantees.md shows it (print it to update the page)."""
    head = ["front-end", *test_matrix.GUARANTEES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in expected_rows()])
