"""Span-level evaluation on hand-made gold; every expected figure is computed by hand in a comment."""

import json
from fractions import Fraction

import pytest
from support.files import read_jsonl

from q2_metric.corpus.files import score_file
from q2_metric.errors import Q2InputError
from q2_metric.meta.spans import SpanCase, evaluate_spans, span_report
from q2_metric.testing.scripted import scripted_scorer


def close(value, fraction):
    return value == pytest.approx(float(fraction))


def test_three_levels_by_hand():
    cases = [
        SpanCase(1, "x" * 20, gold=[(0, 10)], predicted=[(5, 15)]),
        SpanCase(2, "x" * 20, gold=[], predicted=[(0, 4)]),
        SpanCase(3, "x" * 20, gold=[(2, 6), (10, 12)], predicted=[]),
        SpanCase(4, "x" * 20, gold=[(0, 3)], predicted=[(0, 3), (0, 3)]),
    ]  # multi mode: one span twice
    got = evaluate_spans(cases)
    # characters: P = {5..14} (10) + {0..3} (4) + {} + {0..2} (3) = 17; G = 10 + 0 + (4 + 2) + 3 = 19;
    # P ∩ G = {5..9} (5) + 0 + 0 + 3 = 8 -> precision 8/17, recall 8/19, F1 2*8/(17+19) = 4/9
    c = got["character"]
    assert (c["tp"], c["predicted"], c["gold"]) == (8, 17, 19)
    assert (
        close(c["precision"], Fraction(8, 17))
        and close(c["recall"], Fraction(8, 19))
        and close(c["f1"], Fraction(4, 9))
    )
    # spans: predicted (5,15) hits (0,10); (0,4) hits nothing; (0,3) hits (0,3): precision 2/3;
    # gold (0,10) and (0,3) are overlapped, (2,6) and (10,12) are not: recall 2/4;
    # F1 = 2 * (2/3 * 1/2) / (2/3 + 1/2) = 4/7
    s = got["span"]
    assert (s["predicted"], s["predicted_overlapping"], s["gold"], s["gold_overlapped"]) == (3, 2, 4, 2)
    assert (
        close(s["precision"], Fraction(2, 3))
        and close(s["recall"], Fraction(1, 2))
        and close(s["f1"], Fraction(4, 7))
    )
    # responses: flagged 1, 2, 4; hallucinated 1, 3, 4; both 1, 4: precision 2/3, recall 2/3, F1 2/3
    r = got["response"]
    assert (r["tp"], r["predicted"], r["gold"]) == (2, 3, 3) and close(r["f1"], Fraction(2, 3))


def test_undefined_figures_are_none():
    got = evaluate_spans([SpanCase(1, "abc", gold=[], predicted=[])])
    assert (
        got["character"]["precision"] is None
        and got["span"]["recall"] is None
        and got["response"]["f1"] is None
    )


# Three responses (offsets counted by hand):
# "Zoë met Ada in Oslo." : Z0 o1 ë2 ' '3 m4 e5 t6 ' '7 A8 d9 a10 ' '11 i12 n13 ' '14 O15 s16 l17 o18 .19
#   knowledge "Zoë met Ada in Bergen.": the scripted QA finds no "Oslo" -> span score 0 -> Oslo (15, 19) unsupported;
#   gold: "in Oslo" (12, 19)
# "Ada sang in Rome." : every candidate in the knowledge; no gold span
# "Bob flew to Paris." : every candidate in the knowledge (nothing unsupported); gold: "Bob" (0, 3)
TEXTS = [
    ("Zoë met Ada in Oslo.", "Zoë met Ada in Bergen.", [(12, 19)]),
    ("Ada sang in Rome.", "Ada sang in Rome.", []),
    ("Bob flew to Paris.", "Bob flew to Paris.", [(0, 3)]),
]


def _gold(path, shape):
    with open(path, "w", encoding="utf-8") as f:
        for response, knowledge, spans in TEXTS:
            labels = [{"start": s, "end": e, "label": "Evident Conflict"} for s, e in spans]
            row = (
                {"id": "r", "response": response, "knowledge": knowledge, "labels": labels}
                if shape == "ragtruth"
                else {"prompt": knowledge, "answer": response, "labels": labels, "split": "test"}
            )
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("shape", ["ragtruth", "lettucedetect"])
def test_both_shapes_through_q2_score_spans(tmp_path, shape):
    gold = tmp_path / "gold.jsonl"
    _gold(gold, shape)
    cols = {} if shape == "ragtruth" else {"response_col": "answer", "knowledge_col": "prompt"}
    score_file(
        scripted_scorer(),
        gold,
        tmp_path / "scored.jsonl",
        spans_path=tmp_path / "spans.jsonl",
        cache_dir=None,
        **cols,
    )
    report = span_report(gold, tmp_path / "spans.jsonl")
    # characters: P = {15..18} (4); G = {12..18} (7) + {0..2} (3) = 10; P ∩ G = 4:
    # precision 4/4, recall 4/10, F1 2*4/(4+10) = 4/7
    c = report["character"]
    assert (c["tp"], c["predicted"], c["gold"]) == (4, 4, 10) and close(c["f1"], Fraction(4, 7))
    # spans: the one predicted overlaps gold (precision 1); gold (12,19) overlapped, (0,3) not (recall 1/2); F1 2/3
    s = report["span"]
    assert (s["precision"], s["recall"]) == (1.0, 0.5) and close(s["f1"], Fraction(2, 3))
    # responses: flagged {1}, hallucinated {1, 3}: precision 1, recall 1/2
    assert (report["response"]["precision"], report["response"]["recall"]) == (1.0, 0.5)
    assert (report["rows"], report["unscored"], report["responses"]) == (3, 0, 3)


def test_spans_of_another_file_refused(tmp_path):
    gold = tmp_path / "gold.jsonl"
    _gold(gold, "ragtruth")
    other = tmp_path / "other.jsonl"
    rows = read_jsonl(gold, encoding="utf-8")
    rows[0]["response"] = "Zoë met Ada in Lima Oslo."  # the unsupported span moves
    other.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    score_file(
        scripted_scorer(),
        other,
        tmp_path / "scored.jsonl",
        spans_path=tmp_path / "spans.jsonl",
        cache_dir=None,
    )
    with pytest.raises(Q2InputError, match="row 1: the span 'Lima Oslo' is not at 15-24"):
        span_report(gold, tmp_path / "spans.jsonl")
    # fewer rows than the gold file
    short = tmp_path / "short.jsonl"
    with open(tmp_path / "spans.jsonl", encoding="utf-8") as f:
        short.write_text("".join(f.readlines()[:2]), encoding="utf-8")
    with pytest.raises(Q2InputError, match=r"has 2 rows, the gold file .* 3"):
        span_report(gold, short)


def test_bad_gold_label_named(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        json.dumps({"response": "abc", "knowledge": "abc", "labels": [{"start": 2, "end": 9}]}) + "\n"
    )
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps({"row": 1, "q2": 1.0, "spans": [], "unsupported_spans": []}) + "\n")
    with pytest.raises(
        Q2InputError, match=r"line 1: label 0 must have integer 'start' < 'end' within the response \(3"
    ):
        span_report(gold, spans)


def _spans_with(tmp_path, change):
    """The gold file, and its spans file from `q2 score --spans` with `change(rows)` applied."""
    gold = tmp_path / "gold.jsonl"
    _gold(gold, "ragtruth")
    score_file(
        scripted_scorer(),
        gold,
        tmp_path / "scored.jsonl",
        spans_path=tmp_path / "spans.jsonl",
        cache_dir=None,
    )
    rows = read_jsonl(tmp_path / "spans.jsonl", encoding="utf-8")
    rows = change(rows)
    spans = tmp_path / "changed.jsonl"
    spans.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return gold, spans


@pytest.mark.parametrize(
    "start, end, message",
    [
        (
            15,
            4700,
            r"row 1: the span 'Oslo' is not at 15-4700 of the gold response \(20 characters\)",
        ),
        (
            -5,
            -1,
            r"row 1: span 0 of 'unsupported_spans' must have integer 'start' < 'end' within the "
            r"response \(20 characters\), got start=-5, end=-1\.",
        ),
        (True, 19, r"got start=True, end=19\."),
        (15, None, r"got start=15, end=None\."),
    ],
)
def test_predicted_offsets_are_checked_as_gold_ones(tmp_path, start, end, message):
    """Offsets past the end, negative, booleans or null were accepted (a null end a traceback);
    each is one sentence naming the row and the field (issue 49)."""

    def move(rows):
        rows[0]["unsupported_spans"][0].update(start=start, end=end)
        return rows

    gold, spans = _spans_with(tmp_path, move)
    with pytest.raises(Q2InputError, match=message):
        span_report(gold, spans)


def test_duplicated_rows_and_spans_of_another_files_supported_text_are_refused(tmp_path):
    gold, spans = _spans_with(tmp_path, lambda rows: [rows[0], rows[1], rows[1]])
    with pytest.raises(Q2InputError, match=r"line 3: row 2 appears twice"):
        span_report(gold, spans)

    def other_text(rows):  # row 2 has no unsupported span: its supported spans name the text
        rows[1]["spans"][0]["text"] = "Eve"
        return rows

    gold, spans = _spans_with(tmp_path, other_text)
    with pytest.raises(Q2InputError, match=r"row 2: the span 'Eve' is not at 0-3 of the gold response"):
        span_report(gold, spans)
