"""The contract matrix (issue 40): every scoring front-end x every guarantee, on the tiny models.

Front-ends come from one list read from the package's registry (`frontends.registry()`); each is
served by an adapter or named as not scoring (`frontends.NOT_SCORING`), else
`test_every_front_end_has_an_adapter` fails. Guarantees (the columns of docs/guarantees.md's
matrix): a bad option value (wrong type, out of range, unknown name) is one sentence before any
model loads; a missing model is one sentence, in the front-end's words, before any work; a bad item
among good ones is reported with its own identity while the others are scored (a list API refuses
the call naming the item, before any model work); empty replies and knowledge are unscored and
counted; scores equal `q2 score`'s row by row; the full signature is in the result; an output
placed inside something read is refused; where the front-end shows details, the spans (issue 43)
equal `q2 score --spans`'s row by row and each lies in its response (`response[start:end] == text`).

Expected values: the statuses and counts follow from the items as written here; the scores are
`q2 score`'s (the reference front-end), the signature the engine's for the same options.
"""

from __future__ import annotations

import itertools
import math

import pytest

from contract.adapters_guardrails import guardrails_adapters
from contract.adapters_harness import harness_adapters
from contract.frontends import (
    BAD_OPTION_KINDS,
    NOT_SCORING,
    Item,
    adapters,
    base_options,
    no_model_loads,
    registry,
)

GUARANTEES = (
    "bad option",
    "missing model",
    "bad item",
    "empty",
    "q2 score rows",
    "signature",
    "outputs",
    "spans",
)
_NAMES = {"qg": "/qg", "qa": "/qa", "nli": "/nli"}
ALL = {
    **adapters(_NAMES),
    **{a.name: a for a in harness_adapters(base_options(_NAMES))},
    **{a.name: a for a in guardrails_adapters(base_options(_NAMES))},
}


def _params(names=None):
    return [
        pytest.param(name, marks=[pytest.mark.slow] if ALL[name].slow else [], id=name)
        for name in (names or ALL)
    ]


@pytest.fixture(scope="module")
def fronts(tiny_models):
    found = {
        **adapters(tiny_models),
        **{a.name: a for a in harness_adapters(base_options(tiny_models))},
        **{a.name: a for a in guardrails_adapters(base_options(tiny_models))},
    }
    assert set(found) == set(ALL)
    return found


# -- one list of front-ends -----------------------------------------------------------------------


@pytest.mark.parametrize("name", registry())
def test_every_front_end_has_an_adapter(name):
    if name in ALL:
        return
    if name in NOT_SCORING:
        assert NOT_SCORING[name], name
        return
    pytest.fail(f"the front-end '{name}' has no adapter in tests/contract and is not in NOT_SCORING")


def test_the_registry_is_read_from_the_package():
    names = registry()
    # the CLI verbs, the console scripts and the Inspect entry point come from their declarations
    assert {
        "q2 score",
        "q2 demo",
        "q2 register",
        "console script q2",
        "entry point inspect_ai:q2_metric",
    } <= set(names)
    assert "lm-eval q2_wow" in names and "lm-eval q2_dialogue" in names
    assert set(NOT_SCORING) <= set(names), "a NOT_SCORING entry names no front-end"
    assert not set(NOT_SCORING) & set(ALL)


# -- items ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good(rows) -> list[Item]:
    return [Item(r["response"], r["knowledge"]) for r in rows[:10]]


@pytest.fixture(scope="module")
def with_empties(good) -> list[Item]:
    """Good items with an empty response (row 1) and an invisible knowledge (row 4) among them."""
    return [
        good[0],
        Item("   ", good[1].knowledge),
        good[1],
        good[2],
        Item(good[3].response, "\u200b"),
        *good[3:],
    ]


EMPTY_AT = (1, 4)
_REPORTS: dict[str, object] = {}


@pytest.fixture(scope="module")
def reports(fronts, with_empties, tmp_path_factory):
    """Each front-end's report on `with_empties`, made once (several guarantees read it)."""

    def get(name):
        if name not in _REPORTS:
            _REPORTS[name] = fronts[name].score(with_empties, tmp_path_factory.mktemp(name.replace(" ", "_")))
        return _REPORTS[name]

    return get


# -- the guarantees ---------------------------------------------------------------------------------


def _one_sentence(text: str) -> None:
    assert text and "\n" not in text.strip() and "Traceback" not in text, text


@pytest.mark.parametrize("kind", BAD_OPTION_KINDS)
@pytest.mark.parametrize("name", _params())
def test_bad_option(fronts, name, kind, tmp_path):
    adapter = fronts[name]
    with no_model_loads():
        message = adapter.refusal(kind, tmp_path)
    _one_sentence(message)
    assert adapter.option_word(kind) in message, message


@pytest.mark.parametrize("name", _params())
def test_missing_model(fronts, name, tmp_path):
    adapter = fronts[name]
    with no_model_loads():
        message = adapter.refusal("missing model", tmp_path)
    _one_sentence(message)
    assert "no_such_model" in message and adapter.option_word("missing model") in message, message
    for word in adapter.foreign_words:
        assert word not in message, message


@pytest.mark.parametrize("name", _params())
def test_bad_item(fronts, name, good, tmp_path):
    adapter = fronts[name]
    items = [good[0], Item(7, good[1].knowledge), good[2]]
    if adapter.bad_item == "n/a":
        pytest.skip(adapter.bad_item_reason)
    if adapter.bad_item == "refused":
        with no_model_loads():
            message = adapter.refuse_item(items)
        _one_sentence(message)
        assert message.startswith("item 1: field '") and "got int" in message, message
        return
    report = adapter.score(items, tmp_path)
    assert [r.status for r in report.rows] == ["scored", "bad", "scored"]
    bad = report.rows[1]
    assert bad.q2 is None and bad.key in bad.error and "response" in bad.error and "int" in bad.error, bad
    assert report.counts == {"scored": 2, "empty": 0, "bad": 1}


@pytest.mark.parametrize("name", _params())
def test_empty(name, reports):
    report = reports(name)
    assert [i for i, r in enumerate(report.rows) if r.status == "empty"] == list(EMPTY_AT)
    assert all(report.rows[i].q2 is None for i in EMPTY_AT)
    assert all(r.q2 is not None for i, r in enumerate(report.rows) if i not in EMPTY_AT)
    assert report.counts == {"scored": 10, "empty": 2, "bad": 0}


@pytest.mark.parametrize("name", _params())
def test_q2_score_rows(name, reports, fronts):
    reference = reports("q2 score")
    # rows that differ: a swap of two rows would show (the tiny models' scores vary with the text)
    assert len({r.q2 for r in reference.rows if r.q2 is not None}) >= 3, reference.rows
    report = reports(name)
    digits = getattr(fronts[name], "digits", None)  # a front-end that shows rounded scores
    assert len(report.rows) == len(reference.rows)
    for mine, theirs in zip(report.rows, reference.rows):
        if theirs.q2 is None:
            assert mine.q2 is None
        elif digits:
            assert mine.q2 == round(theirs.q2, digits)
        else:
            assert mine.q2 == theirs.q2 or math.isclose(mine.q2, theirs.q2, rel_tol=1e-12)


@pytest.mark.parametrize("name", _params())
def test_signature(name, reports, tiny_models):
    from q2_metric.scorer import Q2Scorer

    expected = str(Q2Scorer(**base_options(tiny_models)).signature())
    assert reports(name).signature == expected


@pytest.mark.parametrize("name", _params())
def test_outputs(fronts, name, tmp_path, tiny_models):
    adapter = fronts[name]
    if getattr(adapter, "writes", True) is False:
        pytest.skip("writes no file")
    message = adapter.write_inside_read(tmp_path)
    _one_sentence(message)
    assert "lies inside" in message and f"'{tiny_models['qg']}'" in message, message


_SPAN_FIELDS = ("start", "end", "text", "candidate", "question", "supported")


@pytest.mark.parametrize("name", _params())
def test_spans(name, reports, fronts, with_empties):
    adapter = fronts[name]
    reason = getattr(adapter, "spans_reason", None)
    if reason:
        pytest.skip(reason)
    reference, report = reports("q2 score").spans, reports(name).spans
    assert report is not None and len(report) == len(reference) == len(with_empties)
    # spans worth comparing: several responses have some, with different offsets
    assert (
        sum(bool(s) for s in reference) >= 5
        and len({(s["start"], s["end"]) for r in reference for s in r}) >= 5
    )
    for item, mine, theirs in zip(with_empties, report, reference):
        for span in mine:
            assert item.response[span["start"] : span["end"]] == span["text"], (item.response, span)
        if getattr(adapter, "marks", False):
            # a page marks spans without overlaps (of overlapping ones, one is shown: docs/spans.md):
            # each mark is a span of q2 score's, and every span of q2 score's is marked or overlaps a mark
            places = {(s["start"], s["end"], s["text"]) for s in theirs}
            marks = sorted((s["start"], s["end"], s["text"]) for s in mine)
            assert set(marks) <= places, (item.response, marks, places)
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(marks)), marks
            assert all(any(s < e and m < n for m, n, _ in marks) for s, e, _ in places), (marks, places)
            continue
        fields = [f for f in _SPAN_FIELDS if all(f in s for s in mine)] if mine else ["start", "end", "text"]
        assert [tuple(s[f] for f in fields) for s in mine] == [tuple(s[f] for f in fields) for s in theirs]
        if mine and "score" in mine[0]:
            assert all(
                math.isclose(a["score"], b["score"], rel_tol=1e-9)
                for a, b in zip(mine, theirs)
                if a["score"] is not None
            )
