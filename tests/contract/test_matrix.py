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
equal `q2 score --spans`'s row by row and each lies in its response (`response[start:end] == text`);
where it shows each item's record (`frontend.Record`), the verdict words, the reason sentences and
the spans' reason phrases are `q2 score --threshold 0.5`'s, in process and through the service
(the Guardrails AI validator and the NeMo Guardrails action against a real `q2 serve`); given an
operating-point file (`operating_point`, spelled as the front-end spells options), the signature
names it (`thr:` and `op:` with the file's digest) and every verdict shown is its threshold's.

Expected values: the statuses and counts follow from the items as written here; the scores are
`q2 score`'s (the reference front-end), the signature the engine's for the same options; the
verdicts are `q2 score --threshold`'s decisions (`unverified` where it has none: fail closed), the
reasons its `reason` column, and each span's phrase follows from its answers and labels in
`q2 score --spans` by the rule docs/spans.md states (written out here, `SPAN_PHRASE`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
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
    flags,
    no_model_loads,
    registry,
    run_q2,
    write_jsonl,
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
    "records",
    "operating point",
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
    from q2_metric.registry import entries

    names = registry()
    # the package's registry (checked against the CLI verbs, the entry points and the task files by
    # tests/unit/test_registry.py)
    assert names == list(entries())
    assert {"q2 score", "q2 demo", "q2 register", "inspect q2", "q2 serve"} <= set(names)
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


# -- one record: the same verdict words and reason sentences everywhere ----------------------------

THRESHOLD = 0.5  # the default of every front-end that decides


def span_phrase(span: dict) -> str:
    """A span's sentence from its fields in `q2 score --spans`, by the rule docs/spans.md states."""
    if span["supported"] is None:
        return "No valid question was asked about it."
    if span["knowledge_has_answer"] is False:
        return "Its question was not answered by the knowledge."
    if span["f1"] is not None and span["f1"] >= 1.0:
        return "Its question was answered the same way from the knowledge."
    if span["nli_label"] == "entailment":
        return "Its question was answered differently, but NLI found the answers consistent (entailment)."
    if span["nli_label"] == "contradiction":
        return "Its question was answered in contradiction of the response (NLI)."
    if not span["f1"]:
        return "Its question was answered with no word in common (token F1 0, NLI neutral)."
    return "Its question was partly matched (token F1, NLI neutral)."


@pytest.fixture(scope="module")
def decided(with_empties, tiny_models, tmp_path_factory):
    """`q2 score --threshold 0.5 --spans` on `with_empties`: per row, (verdict, reason, the phrases
    of its spans)."""
    tmp = tmp_path_factory.mktemp("decided")
    source = write_jsonl(tmp / "in" / "items.jsonl", with_empties)
    out, summary, spans = tmp / "out.jsonl", tmp / "summary.json", tmp / "spans.jsonl"
    code, _, err = run_q2(
        ["score", str(source), "-o", str(out), "--summary", str(summary), "--spans", str(spans)]
        + ["--no-cache", "--no-progress", "--threshold", str(THRESHOLD), *flags(base_options(tiny_models))]
    )
    assert code == 0, err[-3000:]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    details = [json.loads(line) for line in spans.read_text(encoding="utf-8").splitlines()]
    verdicts = [r["decision"] or "unverified" for r in rows]
    reasons = [r["reason"] for r in rows]
    phrases = [[span_phrase(s) for s in d["spans"]] for d in details]
    # rows worth comparing: every verdict word but one at least, reasons that differ, span phrases
    assert len(set(verdicts)) >= 2 and "unverified" in verdicts and len(set(reasons)) >= 4, (
        verdicts,
        reasons,
    )
    assert len({p for row in phrases for p in row}) >= 2, phrases
    return verdicts, reasons, phrases


@pytest.mark.parametrize("name", _params())
def test_records(name, reports, fronts, decided):
    adapter = fronts[name]
    report = reports(name)
    if report.verdicts is None and report.reasons is None:
        reason = getattr(adapter, "records_reason", None)
        assert reason, f"{name}'s report carries no verdicts nor reasons, and its adapter says not why"
        pytest.skip(reason)
    verdicts, reasons, phrases = decided
    if report.verdicts is not None:
        assert report.verdicts == verdicts
    if report.reasons is not None:
        assert report.reasons == reasons
    if report.spans is not None and any(s and "reason" in s[0] for s in report.spans):
        assert [[s["reason"] for s in row or []] for row in report.spans] == phrases


def _guard_outcomes(validator, items) -> list[dict]:
    """Each item through Guardrails AI's own `Guard.validate`: what the guard says of it."""
    from support.guardrails import offline_guard

    guard = offline_guard(validator)
    out = []
    for item in items:
        outcome = guard.validate(item.response, metadata={"knowledge": item.knowledge})
        (log,) = guard.history.last.iterations.last.validator_logs
        result = log.validation_result
        facts = dict(result.metadata or {})
        out.append(
            {
                "passed": outcome.validation_passed,
                "verdict": facts["q2_verdict"],
                "reason": facts["q2_reason"],
                "score": facts["q2_score"],
                "spans": [(s["start"], s["end"], s["text"], s["reason"]) for s in facts["q2_spans"]],
                "message": getattr(result, "error_message", None),
                "error_spans": [
                    (e.start, e.end, e.reason) for e in getattr(result, "error_spans", None) or []
                ],
            }
        )
    return out


def test_guardrails_in_process_and_through_the_service_say_the_same(fronts, with_empties, decided, tmp_path):
    """The Guardrails AI validator in process and against a real `q2 serve` (its `service_url`),
    and the NeMo Guardrails action against the same service: the same verdicts, reasons, messages
    and span reasons, and those of `q2 score --threshold 0.5`."""
    import asyncio
    from types import SimpleNamespace

    from support.serve import q2_serve

    from q2_metric.guardrails.guardrails_ai import Q2Consistency
    from q2_metric.guardrails.nemo import q2_check_consistency

    verdicts, reasons, phrases = decided
    adapter = fronts["guardrails guardrails_ai"]
    in_process = _guard_outcomes(adapter._validator(adapter.base), with_empties)
    with q2_serve(flags(adapter.base), tmp_path) as server:
        served = _guard_outcomes(
            Q2Consistency(threshold=THRESHOLD, service_url=server.url, on_fail="noop"), with_empties
        )
        config = SimpleNamespace(custom_data={"q2": {"url": server.url, "threshold": THRESHOLD}})

        async def nemo_all():
            return [
                await q2_check_consistency(
                    {"bot_message": i.response, "relevant_chunks": i.knowledge}, config
                )
                for i in with_empties
            ]

        nemo = asyncio.run(nemo_all())
    assert [o["verdict"] for o in in_process] == [o["verdict"] for o in served] == verdicts
    assert [o["reason"] for o in in_process] == [o["reason"] for o in served] == reasons
    assert [[s[3] for s in o["spans"]] for o in in_process] == phrases
    for mine, theirs in zip(in_process, served):
        assert mine["spans"] == theirs["spans"] and mine["error_spans"] == theirs["error_spans"]
        assert (mine["passed"], mine["message"]) == (theirs["passed"], theirs["message"])
        assert mine["score"] == theirs["score"] or math.isclose(mine["score"], theirs["score"], rel_tol=1e-12)
    # the guard's failures carry a message, and an error span per unsupported span (or the whole text)
    assert any(o["error_spans"] for o in in_process) and any(o["passed"] for o in in_process) is (
        "consistent" in verdicts
    )
    assert [r.context_updates["q2_verdict"] for r in nemo] == verdicts
    assert [r.context_updates["q2_reason"] for r in nemo] == reasons
    assert [r.return_value for r in nemo] == [v == "consistent" for v in verdicts]


# -- the operating point: the file decides and is signed ----------------------------------------------


@pytest.fixture(scope="module")
def operating_point(reports, tmp_path_factory):
    """An operating-point file (as `q2 calibrate` writes it) whose threshold lies halfway between
    the two lowest distinct scores of `q2 score`'s rows, so that some rows are consistent at it and
    inconsistent at 0.5: (path, threshold, digest)."""
    values = sorted({r.q2 for r in reports("q2 score").rows if r.q2 is not None})
    assert len(values) >= 3 and values[1] <= THRESHOLD, values  # rows the file's threshold decides anew
    threshold = (values[0] + values[1]) / 2
    path = tmp_path_factory.mktemp("op") / "op.json"
    path.write_text(
        json.dumps(
            {
                "format": "q2-operating-point",
                "version": 1,
                "threshold": threshold,
                "rule": {"name": "balanced_accuracy"},
                "dataset": {"name": "contract", "sha256": "a" * 64},
                "scores": {"sha256": "b" * 64, "signature": reports("q2 score").signature},
                "figures": {"balanced_accuracy": {"value": 0.75, "low": 0.5, "high": 1.0}},
                "calibration": {"ece": 0.1, "table": []},
                "created": "2026-12-02T00:00:00+00:00",
            }
        ),
        encoding="utf-8",
    )
    return path, threshold, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", _params())
def test_operating_point(
    name, fronts, with_empties, operating_point, reports, decided, tiny_models, tmp_path
):
    from q2_metric.scorer import Q2Scorer

    adapter = fronts[name]
    reason = getattr(adapter, "op_reason", None)
    if reason:
        pytest.skip(reason)
    path, threshold, digest = operating_point
    at_point = dataclasses.replace(adapter, base={**adapter.base, "operating_point": str(path)})
    report = at_point.score(with_empties, tmp_path)
    plain = str(Q2Scorer(**base_options(tiny_models)).signature())
    assert report.signature == f"{plain}|thr:{threshold:g}|op:ba@{digest[:12]}"
    if report.verdicts is None:  # it shows no verdict per item: the signature names the point
        return
    scores = [r.q2 for r in reports("q2 score").rows]
    expected = [
        "unverified" if q is None else "consistent" if q > threshold else "inconsistent" for q in scores
    ]
    assert expected != decided[0]  # the file's threshold, not 0.5, decides these rows
    assert report.verdicts == expected


# A German item (written for this test): the English set (the default) does not cover it.
GERMAN = Item(
    "Der Rhein fließt durch Basel und Köln und mündet in die Nordsee.",
    "Der Rhein ist ein Fluss in Europa. Er fließt durch Basel und Köln und mündet in die Nordsee.",
)


@pytest.mark.parametrize("name", _params())
def test_another_language_is_unverified(name, fronts, good, tmp_path):
    """Every front-end: an item in a language the chosen set does not cover is unscored,
    unverified with its sentence (naming the language), never an English score; the rest scored."""
    report = fronts[name].score([good[0], GERMAN, good[1]], tmp_path)
    assert [r.q2 is None for r in report.rows] == [False, True, False]
    assert report.rows[1].status == "empty" and report.counts == {"scored": 2, "empty": 1, "bad": 0}
    if report.verdicts is not None:
        assert report.verdicts[1] == "unverified"
    if report.reasons is not None:
        assert report.reasons[1].endswith(
            "is in German (de), which the English (en) model set does not cover."
        )
