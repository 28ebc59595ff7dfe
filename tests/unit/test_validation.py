"""The scorer's input checks: errors name the item and the field before any model runs; empty and
invisible text, lone surrogates and control characters; the sequences the API accepts."""

from __future__ import annotations

import math

import pytest

from q2_metric import Q2Config, Q2Scorer
from q2_metric.errors import Q2InputError
from q2_metric.testing.scripted import ScriptedParser, scripted_scorer


@pytest.mark.parametrize(
    "text",
    [
        "\u200b",
        "\u200b\u200c\u200d\u2060",
        "\u202e\u2066\u2069",
        "\ufeff",
        "\u00a0\u2003\u3000",
        "\u3164",
        "\u00ad",
        "\U000e0041",
        "\u2800",
        " \t\u200f ",
    ],
)
def test_invisible_text_is_empty(text):
    result = scripted_scorer().score([text, "Paris is big."], ["Paris is big.", text])
    assert [r.reason for r in result.responses] == [
        "Not scored: empty response.",
        "Not scored: empty knowledge.",
    ]
    assert result.system.num_scored == 0


@pytest.mark.parametrize("text", ["a\u200b", "\u0301", "\ue000", "é"])
def test_visible_text_is_not_empty(text):
    from q2_metric.validation import is_blank

    assert not is_blank(text)


def test_lone_surrogate_is_replaced_in_the_api(tmp_path):
    parser = ScriptedParser()
    seen = []
    parse = parser.parse
    parser.parse = lambda texts: seen.extend(texts) or parse(texts)
    result = scripted_scorer(parser=parser).score(
        ["Bob\ud800 Ross hosted it.", "A \ud83d\ude00 pair."], ["Bob Ross hosted it.", "A pair."]
    )
    assert "Bob\ufffd Ross hosted it." in seen and "A \U0001f600 pair." in seen  # the pair is its character
    assert not any(0xD800 <= ord(c) <= 0xDFFF for text in seen for c in text)
    assert result.system.num_scored == 2


def test_nul_only_knowledge_is_empty():
    result = scripted_scorer().score(["Paris is big.", "Rome.", "\x00\x1b"], ["\x00\x00", " \x00\t", "Rome."])
    assert [r.reason for r in result.responses] == [
        "Not scored: empty knowledge.",
        "Not scored: empty knowledge.",
        "Not scored: empty response.",
    ]
    assert result.system.num_skipped == 3


def test_api_accepts_any_sequence_of_strings():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    from q2_metric.validation import validate_inputs

    responses, knowledge = ["Paris is big.", "Rome."], ["Paris is big.", "Rome."]
    expected = scripted_scorer().score(responses, knowledge).scores
    for r, k in [
        (tuple(responses), tuple(knowledge)),
        (np.array(responses), np.array(knowledge)),
        (pd.Series(responses, index=[7, 3]), pd.Series(knowledge)),
    ]:
        assert scripted_scorer().score(r, k).scores == expected
        assert all(type(x) is str for x in validate_inputs(r, k)[0])  # numpy.str_ becomes str
    for bad, kind in [(set(responses), "set"), (dict.fromkeys(responses), "dict")]:
        with pytest.raises(Q2InputError) as err:
            scripted_scorer().score(bad, knowledge)
        assert str(err.value) == (
            f"response must be a sequence of strings (list, tuple, numpy array, pandas "
            f"Series), got {kind}, whose order is not the order of the items; pass a list"
        )
    with pytest.raises(Q2InputError, match=r"must be one-dimensional .* got 2 dimensions"):
        scripted_scorer().score(np.array([responses]), knowledge)
    with pytest.raises(
        Q2InputError, match=r"item 1: field 'response' must be a string, got NoneType|got None"
    ):
        scripted_scorer().score(np.array(["a", None], dtype=object), knowledge)


def unloadable():
    # Any model use would fail: these checks must happen before.
    return Q2Scorer(Q2Config(qg_model="/nonexistent/qg"))


def test_mismatched_lengths():
    with pytest.raises(Q2InputError, match="response has 2 items but knowledge has 1"):
        unloadable().score(["a", "b"], ["c"])


@pytest.mark.parametrize(
    "responses, knowledge, message",
    [
        (["ok", None], ["k", "k"], "item 1: field 'response' must be a string, got None"),
        (["ok", "ok"], ["k", 3], "item 1: field 'knowledge' must be a string, got int"),
        (
            "a single string",
            ["k"],
            r"response must be a sequence of strings \(list, tuple, numpy array, pandas Series\), got a single str",
        ),
    ],
)
def test_non_strings(responses, knowledge, message):
    with pytest.raises(Q2InputError, match=message):
        unloadable().score(responses, knowledge)


def test_empty_and_whitespace_give_nan_and_are_counted():
    result = scripted_scorer().score(
        ["Paris is big.", "", "Rome.", " \n"], ["Paris is big.", "Paris.", "  ", "Rome."]
    )
    reasons = [r.reason for r in result.responses]
    # the one sentence of each (`explain.reason_line`): "Paris" asked and answered alike on both sides
    assert reasons == [
        "The question was answered the same way from the knowledge.",
        "Not scored: empty response.",
        "Not scored: empty knowledge.",
        "Not scored: empty response.",
    ]
    assert [math.isnan(s) for s in result.scores] == [False, True, True, True]
    assert result.q2 == 1.0 and result.system.num_skipped == 3 and result.system.num_scored == 1


def test_all_empty_batch_needs_no_model():
    result = unloadable().score(["", " "], ["x", "y"])
    assert math.isnan(result.q2) and result.system.num_skipped == 2


def test_a_response_past_spacys_max_length_is_one_unscored_row():
    """spaCy refuses to parse more than `nlp.max_length` (1,000,000) characters: `q2 score` and `q2
    rescore` stopped with its ValueError and wrote no row (issue 49). Such a response is one row
    not scored, with its reason; the rest of the batch is scored."""

    class SpacyLike(ScriptedParser):
        def parse(self, texts):
            if any(len(t) > 1_000_000 for t in texts):  # what spaCy's nlp() raises (E088)
                raise ValueError("[E088] Text of length 1000100 exceeds maximum of 1000000.")
            return super().parse(texts)

    long = "Bob Ross painted. " * 55_561  # 1,000,098 characters
    assert len(long) > 1_000_000
    result = scripted_scorer(parser=SpacyLike()).score(
        [long, "Bob Ross painted."], ["Bob Ross.", "Bob Ross."]
    )
    first, second = result.responses
    assert math.isnan(first.q2) and not first.scored
    assert (
        first.reason == "Not scored: the response has 1,000,098 characters, above the 1,000,000 spaCy parses."
    )
    assert second.scored and not math.isnan(second.q2)


def test_plainly_non_english_text_is_unverified_with_a_warning():
    """The English set reads English only: for Chinese text the only span was '》' (before: scored,
    with this warning). Such an item is unverified (NaN, its reason naming the item, the field and
    the language), and a batch with texts whose letters are mostly not Latin gets one warning naming
    how many and the first item; English, and Latin-script text with a few other letters, none."""
    import warnings

    from q2_metric.errors import NotEnglishWarning

    scorer = scripted_scorer()
    chinese = "鲍勃·罗斯主持了电视节目《欢乐画室》，教观众画风景。"
    with pytest.warns(
        NotEnglishWarning, match=r"^1 of 3 items are plainly not English .*first: item 1, its response\)"
    ):
        result = scorer.score(
            ["Bob Ross painted.", chinese, "Ça va très bien à Zürich 東京."],
            ["Bob Ross.", chinese, "Zürich."],
        )
    assert math.isnan(result.scores[1]) and not math.isnan(result.scores[0])
    assert result.responses[1].reason == (
        "Not scored: item 1: field 'response' is in Chinese (zh), which the English (en) model set does not cover."
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotEnglishWarning)
        scorer.score(["Bob Ross painted.", "Ça va très bien à Zürich 東京."], ["Bob Ross.", "Zürich."])
    # each field judged alone: a Chinese or Russian response to long English knowledge (before: read
    # together with it, mostly Latin letters, no warning)
    english = "Bob Ross was an American painter who hosted The Joy of Painting on PBS for eleven years. " * 3
    russian = "Боб Росс вёл телепередачу «Радость живописи»."
    with pytest.warns(NotEnglishWarning, match=r"^2 of 3 items .*first: item 0, its response\)"):
        scorer.score([chinese, "Bob Ross painted.", russian], [english, "Bob Ross.", english])
    with pytest.warns(NotEnglishWarning, match=r"^1 of 1 items .*first: item 0, its knowledge\)"):
        scorer.score(["Bob Ross painted."], [russian])


def test_knowledge_as_a_list_of_passages_is_one_rule_for_every_front_end(tmp_path):
    """The RAG shape: a list of passages is one knowledge text, the passages joined by a space, in
    `Q2Scorer.score`, the contract's items (Space, q2 rescore, the harnesses) and `q2 score`'s
    reader (issue 49: q2 score refused it row by row, compute took the best single passage, ragas
    joined with a space). Expected: the same calls with the joined string written out by hand."""
    import json

    from q2_metric.corpus.files import score_file
    from q2_metric.frontend import Item, score_items
    from q2_metric.io import read_rows

    passages = ["Bob Ross hosted a show.", "Steve Ross painted."]
    joined = "Bob Ross hosted a show. Steve Ross painted."
    scorer = scripted_scorer()
    by_hand = scorer.score(["Bob Ross met Steve Ross."], [joined])
    assert scorer.score(["Bob Ross met Steve Ross."], [passages]).scores == by_hand.scores
    outcome = score_items(scorer, [Item("a", "Bob Ross met Steve Ross.", passages)])
    assert outcome.items[0].status == "scored" and outcome.items[0].score.q2 == by_hand.scores[0]
    src = tmp_path / "rag.jsonl"
    src.write_text(json.dumps({"response": "Bob Ross met Steve Ross.", "knowledge": passages}) + "\n")
    assert read_rows(src)[0].fields["knowledge"] == joined
    score_file(scorer, src, tmp_path / "out.jsonl", cache_dir=None)
    assert json.loads((tmp_path / "out.jsonl").read_text())["q2"] == by_hand.scores[0]
    with pytest.raises(Q2InputError, match="item 0: field 'knowledge' must be a string, got list"):
        scorer.score(["a"], [["a", 1]])  # a list that is not of passages


def test_one_item_check_for_every_caller():
    """The one item check (`validation.item_error`): the same sentence from the contract's
    `validate_items`, the list call's `validate_inputs` and the histories' `check_histories`
    (the sentences are written here by hand)."""
    from q2_metric.frontend import Item, validate_items
    from q2_metric.validation import check_histories, item_error, validate_inputs

    assert item_error("row 3", {"response": "a", "knowledge": "b"}, ["hi"]) is None
    assert (
        item_error("row 3", {"response": 7, "knowledge": "b"})
        == "row 3: field 'response' must be a string, got int."
    )
    assert item_error("k", {}, "a ||| b") == "k: field 'history' must be a list of strings, got str."
    assert item_error("k", {}, 5, "histories") == "k: field 'histories' must be a list of strings, got int."
    assert item_error("k", {}, ["a", None]) == "k: turn 1 of field 'history' must be a string, got None."
    _, bad = validate_items([Item("item 1", "a", 3), Item("item 0", "a", "b", history=["x", 2])])
    assert [b.error for b in bad] == [
        "item 1: field 'knowledge' must be a string, got int.",
        "item 0: turn 1 of field 'history' must be a string, got int.",
    ]
    with pytest.raises(Q2InputError) as err:
        validate_inputs(["a", "b"], ["c", 3])
    assert str(err.value) == "item 1: field 'knowledge' must be a string, got int."
    with pytest.raises(Q2InputError) as err:
        check_histories([["x", 2]], 1)
    assert str(err.value) == "item 0: turn 1 of field 'histories' must be a string, got int."


def _count_checks(monkeypatch) -> dict[tuple[str, str], int]:
    """Every call of the one item check (`validation.item_error`), wherever it was imported,
    counted per (item, what it checked: its texts or its history)."""
    import sys

    from q2_metric import validation

    real, calls = validation.item_error, {}

    def counting(key, texts, history=None, history_field="history"):
        for kind, asked in (("texts", bool(texts)), ("history", history is not None)):
            if asked:
                calls[key, kind] = calls.get((key, kind), 0) + 1
        return real(key, texts, history, history_field)

    for module in list(sys.modules.values()):
        if (
            getattr(module, "__name__", "").startswith("q2_metric")
            and getattr(module, "item_error", None) is real
        ):
            monkeypatch.setattr(module, "item_error", counting)
    return calls


def _coref_scorer():
    from q2_metric.testing.scripted import ScriptedCoref

    return scripted_scorer(Q2Config(coref=True), coref=ScriptedCoref([["Bob Ross", "he"]]))


def test_each_item_and_its_history_are_checked_once_on_every_path(monkeypatch):
    """One check per item and one per history, whatever the door: the Python API, the contract
    (every front-end's `score_items`), and `compute` / `add_batch` (before: an item checked up to
    three times in one `compute`, its history up to four)."""
    import evaluate

    import q2_metric
    from q2_metric.frontend import Item, score_items

    responses, knowledge = (
        ["he hosted a show.", "he painted."],
        ["Bob Ross hosted a show.", "Bob Ross painted."],
    )
    histories = [["Who is Bob Ross?"], ["What did he do?"]]
    once = {(f"item {i}", kind): 1 for i in range(2) for kind in ("texts", "history")}

    calls = _count_checks(monkeypatch)
    _coref_scorer().score(responses, knowledge, histories=histories)
    assert calls == once

    calls.clear()
    items = [Item(f"item {i}", r, k, h) for i, (r, k, h) in enumerate(zip(responses, knowledge, histories))]
    assert score_items(_coref_scorer(), items).counts["scored"] == 2
    assert calls == once

    metric = evaluate.load(q2_metric.module_path())
    scorer = _coref_scorer()
    monkeypatch.setattr(metric, "scorer", lambda config: scorer)  # scripted components, same door
    calls.clear()
    out = metric.compute(
        predictions=responses, references=knowledge, histories=histories, coref=True, tiny=True
    )
    assert len(out["scores"]) == 2 and calls == once
    calls.clear()
    metric.add_batch(predictions=responses[:1], references=knowledge[:1])
    metric.add(prediction=responses[1], reference=knowledge[1])
    out = metric.compute(histories=histories, coref=True, tiny=True)
    assert len(out["scores"]) == 2 and calls == once
