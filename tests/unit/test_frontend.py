"""The front-end contract (`q2_metric.frontend`): options, model words, items one by one, outcomes.

Expected values are hand-made: the scripted components' rules (`q2_metric.testing.scripted`) give
1.0 to a response whose capitalised spans occur in the knowledge; the statuses and counts follow
from the items as written here.
"""

import math

import pytest

from q2_metric.errors import ModelNotAvailable, Q2Error, Q2InputError, Q2OptionError, Q2UnknownOption
from q2_metric.frontend import (
    VERDICTS,
    Item,
    ItemResult,
    Outcome,
    Record,
    SpanRecord,
    check_models,
    check_options,
    configure,
    guard,
    model_words,
    record_of,
    score_items,
    validate_items,
    verdict_of,
)
from q2_metric.options import flag_name, python_name
from q2_metric.scorer import Q2Scorer
from q2_metric.testing.scripted import scripted_scorer

GOOD = "Bob Ross hosted the show."


def test_configure_checks_every_value_in_the_front_ends_words():
    with pytest.raises(
        Q2OptionError, match=r"^Invalid Q² option --fallback-scores=\(0, 2, 1\): use 3 numbers"
    ):
        configure({"fallback_scores": (0, 2, 1)}, spell=flag_name("--"))
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option use_nli='false': use True or False\.$"):
        configure({"use_nli": "false"})
    assert configure({"use_nli": False, "device": "cpu"}).use_nli is False


def test_an_unknown_option_is_an_option_error_and_a_type_error():
    with pytest.raises(Q2UnknownOption) as info:
        configure({"use_nlii": True}, spell=flag_name("--q2-"))
    err = info.value
    assert isinstance(err, Q2OptionError) and isinstance(err, TypeError) and isinstance(err, Q2Error)
    assert str(err) == "'--q2-use-nlii' is not a Q² option (did you mean '--q2-use-nli'?)."
    with pytest.raises(TypeError, match="'bogus' is not a Q² option"):
        check_options({"bogus": 1})


def test_check_options_returns_what_q2config_takes():
    assert check_options({"fallback_scores": [0, 0.5, 1], "decoding": None}) == {
        "fallback_scores": (0.0, 0.5, 1.0)
    }


def test_a_missing_model_is_named_in_the_front_ends_words(tmp_path):
    scorer = Q2Scorer(qg_model=str(tmp_path / "nowhere"), device="cpu")
    for spell, expected in (
        (python_name, "as qg_model."),
        (flag_name("--q2-"), "as --q2-qg-model."),
        (lambda n: f"-S {n}=DIR", "as -S qg_model=DIR."),
    ):
        with pytest.raises(ModelNotAvailable) as info:
            check_models(scorer, spell=spell)
        assert expected in str(info.value)
        assert "--qg-model" not in str(info.value)


def test_the_words_are_the_callers_only_inside_the_block(tmp_path):
    scorer = Q2Scorer(qg_model=str(tmp_path / "nowhere"), device="cpu")
    with pytest.raises(ModelNotAvailable, match=r"qg_model \(--qg-model\)"):
        scorer.check_models()  # no front-end named: both spellings, as before
    with (
        pytest.raises(ModelNotAvailable, match=r"as -T qg_model=DIR.*tiny random models.*`-T tiny=true`"),
        model_words(lambda n: f"-T {n}=DIR", tiny_hint="`-T tiny=true`"),
    ):
        scorer.check_models()


def test_validate_items_reports_each_bad_item_with_its_key_and_field():
    items = [
        Item("sample 'a'", GOOD, GOOD),
        Item("sample 'b'", GOOD, None),
        Item("sample 'c'", 3, GOOD),
        Item("sample 'd'", GOOD, GOOD, history="not a list"),
        Item("sample 'e'", "x\ud800", GOOD, ["hi"]),
    ]
    good, bad = validate_items(items)
    assert [i.key for i in good] == ["sample 'a'", "sample 'e'"]
    assert good[1].response == "x\ufffd"  # the text the models read (validation.clean_text)
    assert [b.error for b in bad] == [
        "sample 'b': field 'knowledge' must be a string, got None.",
        "sample 'c': field 'response' must be a string, got int.",
        "sample 'd': field 'history' must be a list of strings, got str.",
    ]
    assert all(b.status == "bad" and b.score is None and b.reason == b.error for b in bad)


def test_score_items_scores_the_good_in_one_call_and_keeps_order():
    scorer = scripted_scorer()
    items = [
        Item("row 1", GOOD, "Bob Ross hosted the show."),
        Item("row 2", 5, GOOD),
        Item("row 3", "   ", GOOD),
        Item("row 4", "Alice Smith sang.", "Bob Ross hosted the show."),
        Item("row 5", GOOD, "\u200b"),
    ]
    out = score_items(scorer, items)
    assert isinstance(out, Outcome)
    assert [i.key for i in out.items] == ["row 1", "row 2", "row 3", "row 4", "row 5"]
    assert [i.status for i in out.items] == ["scored", "bad", "empty", "scored", "empty"]
    assert out.counts == {"scored": 2, "empty": 2, "bad": 1}
    assert out.items[0].q2 == 1.0 and out.items[3].q2 < 1.0
    assert math.isnan(out.items[2].q2) and out.items[2].reason == "Not scored: empty response."
    assert out.items[4].reason == "Not scored: empty knowledge."
    assert out.items[1].reason == "row 2: field 'response' must be a string, got int."
    assert scorer._qg.calls == [2]  # one engine call over the two scorable items' candidates
    assert out.system.num_responses == 4 and out.system.num_scored == 2  # bad items are not responses
    assert "|qg:scripted-ScriptedQG|" in str(out.signature)


def test_score_items_with_only_bad_items_still_signs():
    out = score_items(scripted_scorer(), [Item("doc 0", None, None)])
    assert out.counts == {"scored": 0, "empty": 0, "bad": 1} and math.isnan(out.system.q2)
    assert str(out.signature).startswith("q2:")


def test_item_result_reason_is_the_explanation_line():
    out = score_items(scripted_scorer(), [Item("k", GOOD, GOOD)])
    assert out.items[0].reason.endswith("was answered the same way from the knowledge.")
    assert ItemResult("k", "bad", None, "k: field 'response' must be a string, got int.").reason.startswith(
        "k:"
    )


def test_guard_refuses_an_output_inside_a_read(tmp_path):
    from q2_metric.errors import OutputPathError

    (tmp_path / "in").mkdir()
    with pytest.raises(OutputPathError, match="lies inside"):
        guard({"input": tmp_path / "in"}, {"--output": tmp_path / "in" / "out.csv"})
    guard({"input": tmp_path / "in"}, {"--output": tmp_path / "out.csv"})


def test_the_spacy_and_device_sentences_use_the_front_ends_words():
    from q2_metric.models.checks import check_device, check_spacy, spelling

    with spelling(flag_name("--q2-")):
        with pytest.raises(ModelNotAvailable, match=r"pass an installed one as --q2-spacy-model\.$"):
            check_spacy("no_such_spacy_package")
        import torch

        if not torch.cuda.is_available():
            with pytest.raises(Q2Error, match=r"pass --q2-device 'cpu' or 'auto', or install"):
                check_device("cuda")
    with pytest.raises(ModelNotAvailable, match=r"as spacy_model \(--spacy-model\)\.$"):
        check_spacy("no_such_spacy_package")  # outside the block: both spellings, as before


def test_outcome_as_result_is_the_engine_result_of_its_items():
    """`Outcome.as_result`: what a front-end whose output is a `Q2Result`'s reads (the evaluate
    module's dict, the agreement); a bad item has no score, so it is refused in its own sentence."""
    out = score_items(scripted_scorer(), [Item("item 0", GOOD, GOOD), Item("item 1", "", GOOD)])
    result = out.as_result()
    assert result.scores[0] == 1.0 and math.isnan(result.scores[1])  # "Bob Ross" answered alike; empty
    assert result.signature is out.signature and result.system is out.system
    assert result.to_dict()["num_scored"] == 1 and result.to_dict()["num_skipped"] == 1
    assert [p.stage for p in out.profile] == [p.stage for p in result.profile] and out.profile
    bad = score_items(scripted_scorer(), [Item("item 0", GOOD, GOOD), Item("item 1", GOOD, 3)])
    assert bad.first_error() == "item 1: field 'knowledge' must be a string, got int."
    with pytest.raises(Q2Error, match=r"^item 1: field 'knowledge' must be a string, got int\.$"):
        bad.as_result()


# -- the one result record ------------------------------------------------------------------------


def test_the_verdict_words_and_the_one_rule():
    assert VERDICTS == ("consistent", "inconsistent", "unverified")
    assert verdict_of("scored", 0.75, 0.5) == "consistent"
    assert verdict_of("scored", 0.5, 0.5) == "inconsistent"  # at the threshold: not above it
    assert verdict_of("scored", 0.0, 0.0) == "inconsistent"
    assert verdict_of("scored", float("nan"), 0.5) == "unverified"  # fail closed
    assert verdict_of("empty", None, 0.5) == "unverified"
    assert verdict_of("bad", 1.0, 0.5) == "unverified"  # a bad item's number is never trusted


# "Oslo saw Bob Ross." : O0 s1 l2 o3 ' '4 s5 a6 w7 ' '8 B9 o10 b11 ' '12 R13 o14 s15 s16 .17
OSLO = "Oslo saw Bob Ross."


def test_record_of_each_status_by_hand():
    # scripted rules: each capitalised run is a candidate asked "what about X?"; the knowledge answers
    # X when it holds X (span score 1), else nothing (0): Bob Ross yes, Oslo no -> Q² 1/2
    out = score_items(
        scripted_scorer(),
        [Item("row 1", OSLO, "Bob Ross hosted the show."), Item("row 2", "  ", GOOD), Item("row 3", 7, GOOD)],
    )
    scored, empty, bad = out.records(threshold=0.25)
    assert scored.key == "row 1" and scored.status == "scored"
    assert scored.score == 0.5 and scored.q2_no_nli == 0.5 and scored.verdict == "consistent"
    assert (
        scored.reason
        == "1 of 2 questions was answered the same way from the knowledge; 1 was not answered by the knowledge."
    )
    assert scored.spans == (
        SpanRecord(
            0,
            4,
            "Oslo",
            "Oslo",
            False,
            0.0,
            "Its question was not answered by the knowledge.",
            "what about Oslo?",
            ("Oslo", ""),
        ),
        SpanRecord(
            9,
            17,
            "Bob Ross",
            "Bob Ross",
            True,
            1.0,
            "Its question was answered the same way from the knowledge.",
            "what about Bob Ross?",
            ("Bob Ross", "Bob Ross"),
        ),
    )
    assert scored.error is None and scored.signature == str(out.signature) and scored.consistent
    assert out.records()[0].verdict == "inconsistent"  # 0.5 is not above the default 0.5
    assert (empty.status, empty.score, empty.q2_no_nli, empty.verdict, empty.spans) == (
        "empty",
        None,
        None,
        "unverified",
        (),
    )
    assert empty.reason == "Not scored: empty response." and empty.error is None and not empty.consistent
    message = "row 3: field 'response' must be a string, got int."
    assert (bad.status, bad.score, bad.verdict, bad.reason, bad.error) == (
        "bad",
        None,
        "unverified",
        message,
        message,
    )


def test_record_to_dict_with_a_prefix_and_back():
    span = SpanRecord(0, 4, "Oslo", "Oslo", None, None, "no valid question")
    record = Record("row 1", "scored", 0.25, 0.5, "inconsistent", "Why.", (span,), None, "q2:sig")
    assert record.to_dict("q2_") == {
        "q2_status": "scored",
        "q2_score": 0.25,
        "q2_no_nli": 0.5,  # not q2_q2_no_nli
        "q2_verdict": "inconsistent",
        "q2_reason": "Why.",
        "q2_spans": [
            {
                "start": 0,
                "end": 4,
                "text": "Oslo",
                "candidate": "Oslo",
                "supported": None,
                "score": None,
                "reason": "no valid question",
                "question": None,
                "answers": [None, None],
            }
        ],
        "q2_error": None,
        "q2_signature": "q2:sig",
    }
    assert record.to_dict(spans=False)["spans"] == [] and list(record.to_dict()) == [
        "status",
        "score",
        "q2_no_nli",
        "verdict",
        "reason",
        "spans",
        "error",
        "signature",
    ]
    assert Record.from_dict(record.to_dict("q2_"), "row 1", prefix="q2_") == record
    assert Record.from_dict(record.to_dict(), "row 1") == record


def test_record_from_a_reply_off_its_shape_is_one_sentence():
    with pytest.raises(
        Q2InputError, match=r"^item 0: no status and verdict among consistent, inconsistent, unverified\.$"
    ):
        Record.from_dict({"status": "scored", "verdict": "fine"}, "item 0")
    with pytest.raises(Q2InputError, match=r"^item 0: its spans are not a list of span objects\.$"):
        Record.from_dict({"status": "scored", "verdict": "consistent", "spans": [3]}, "item 0")


def test_record_of_a_result_with_nan_scores():
    from q2_metric.results import ResponseScore

    nan = float("nan")
    result = ItemResult("k", "scored", ResponseScore(0, nan, nan, reason="Not scored: no valid question."))
    record = record_of(result, "sig", 0.5)
    assert (record.score, record.q2_no_nli, record.verdict) == (None, None, "unverified")


# -- the decision: a threshold, or an operating point's -------------------------------------------------
def _op_file(tmp_path, threshold=0.4):
    import json

    path = tmp_path / "op.json"
    path.write_text(
        json.dumps(
            {
                "format": "q2-operating-point",
                "version": 1,
                "threshold": threshold,
                "rule": {"name": "balanced_accuracy"},
                "dataset": {"name": "d", "sha256": "a" * 64},
                "scores": {"sha256": "b" * 64, "signature": "q2:0.5.0|qg:x"},
                "figures": {"balanced_accuracy": {"value": 0.7, "low": 0.6, "high": 0.8}},
                "calibration": {"ece": 0.1, "table": []},
                "created": "2026-12-01T23:00:00+00:00",
            }
        )
    )
    return path


def test_decision_reads_the_operating_point_decides_and_signs(tmp_path):
    import hashlib

    from q2_metric.frontend import decision, decision_of
    from q2_metric.testing.scripted import scripted_scorer

    path = _op_file(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    d = decision_of({"operating_point": str(path), "qg_model": "x"})
    assert d.threshold == 0.4 and d.operating_point is not None
    assert decision(path, 0.4).threshold == 0.4  # the same threshold given twice agrees
    scorer = scripted_scorer()
    out = score_items(scorer, [d.item("row 1", "Paris and Rome are big.", "Paris is big.")])
    record = d.record(out.items[0], out.signature)
    assert record.score == 0.5 and record.verdict == "consistent"  # 0.5 > 0.4
    assert record.signature == f"{out.signature}|thr:0.4|op:ba@{digest[:12]}"
    bare = decision()
    assert bare.threshold == 0.5 and bare.record(out.items[0], out.signature).verdict == "inconsistent"
    assert str(bare.sign(out.signature)) == str(out.signature)  # a bare threshold signs nothing


def test_decision_refusals_are_one_sentence(tmp_path):
    from q2_metric.frontend import decision
    from q2_metric.options.operating_point import OperatingPointError

    with pytest.raises(Q2OptionError, match=r"^The Q² options --threshold=0.5 and --operating-point "):
        decision(_op_file(tmp_path), 0.5, spell=flag_name())
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option threshold=2: "):
        decision(None, 2)
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option operating_point=7: use the path "):
        decision(7)
    with pytest.raises(OperatingPointError, match=r"no such operating-point file\.$"):
        decision(tmp_path / "none.json")


def test_without_opentelemetry_nothing_breaks_and_nothing_is_emitted(monkeypatch):
    """The `otel` extra is optional: with no `opentelemetry` package importable, items are made and
    scored through the contract as ever, and no event is handed anywhere."""
    import sys

    from q2_metric.telemetry import events
    from q2_metric.testing.scripted import scripted_scorer

    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry: ImportError
    monkeypatch.setattr(events, "_OTEL", [])
    item = Item("row 1", "Bob Ross hosted the show.", "Bob Ross hosted the show.", threshold=0.5)
    assert item.parent is None
    out = score_items(scripted_scorer(), [item])
    assert out.counts == {"scored": 1, "empty": 0, "bad": 0} and events._OTEL == [False]
    assert events.emit_each(out.as_result().responses, [0.5], [None]) == 0
    assert events.caller_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") is None
