"""Answer candidates without English spaCy: numbers and dates by rule in every script, BIO tags to
spans, the candidates' order, and the stage; every expected value written by hand, and every
candidate slicing its text exactly."""

from __future__ import annotations

import pytest

from q2_metric.components import Candidate
from q2_metric.results import Pair, ResponseScore
from q2_metric.steps.candidate_rules import (
    bio_spans,
    find_candidates_by,
    numbers_and_dates,
    ordered_candidates,
)


def found(text: str) -> list[tuple[str, str]]:
    out = numbers_and_dates(text)
    assert all(text[c.start : c.end] == c.text for c in out)
    return [(c.text, c.kind) for c in out]


@pytest.mark.parametrize(
    "text, expected",
    [
        # German: day with a full stop, the month's name, a decimal comma
        (
            "Das Museum öffnet am 5. März 2021 wieder, 3,7 Millionen.",
            [("5. März 2021", "date"), ("3,7", "number")],
        ),
        ("Die Mauer fiel am 9. November 1989.", [("9. November 1989", "date")]),
        # Russian: the month's genitive, "года" after the year
        (
            "Гагарин полетел 12 апреля 1961 года, 13 миллионов.",
            [("12 апреля 1961 года", "date"), ("13", "number")],
        ),
        ("Музей открылся 5 марта 2021 г. в Москве", [("5 марта 2021 г.", "date")]),
        # CJK without spaces, ASCII and full-width digits
        (
            "这座博物馆于2021年3月5日重新开放，全长21196公里。",
            [("2021年3月5日", "date"), ("21196", "number")],
        ),
        ("会議は２０２１年３月５日に開かれた。", [("２０２１年３月５日", "date")]),
        ("富士山高3776米，建于1989年。", [("3776", "number"), ("1989年", "date")]),
        ("2021년 3월 5일에 열렸다", [("2021년 3월 5일", "date")]),
        # Arabic-Indic digits, right to left
        ("افتتح المتحف في ٥ مارس ٢٠٢١. طوله ٦٦٥٠ كيلومترا", [("٥ مارس ٢٠٢١", "date"), ("٦٦٥٠", "number")]),
        ("نسبة ٪٥٠ أو ٥٠٪ و٣٫٥", [("٥٠", "number"), ("٥٠٪", "number"), ("٣٫٥", "number")]),
        # English, Spanish, ISO and numeric dates, thousands and per cent
        (
            "finished on March 31, 1889, 330 metres and 8,849 m; 50% in 2021-03-05 or 05.03.2021",
            [
                ("March 31, 1889", "date"),
                ("330", "number"),
                ("8,849", "number"),
                ("50%", "number"),
                ("2021-03-05", "date"),
                ("05.03.2021", "date"),
            ],
        ),
        ("El Prado abrió el 19 de noviembre de 1819.", [("19 de noviembre de 1819", "date")]),
        ("Mainz hat 5 Tore", [("5", "number")]),  # "Mai" inside a word is no month
        # digits after a Latin or Cyrillic letter are a name's; CJK and Arabic letters touch numbers
        ("H2O, MP3 und Т34, 5km", [("5", "number")]),
        ("富士山高3776米", [("3776", "number")]),
        ("و٣٫٥ مليون", [("٣٫٥", "number")]),
        ("no digits here, ни одной", []),
    ],
)
def test_numbers_and_dates_by_hand(text, expected):
    assert found(text) == expected


def test_offsets_are_exact_beside_combining_marks_and_rtl_text():
    # by hand: "Cafe" + U+0301 is 5 characters (0-4), "2021" 6-10, "cre" + U+0300 + "me" 12-17,
    # "3" 19, U+200F (right-to-left mark) 21, "العدد" 22-26, "١٢" 28-29
    text = "Cafe\u0301 2021, cre\u0300me 3 \u200fالعدد ١٢ اليوم"
    out = numbers_and_dates(text)
    assert [(c.text, c.start, c.end) for c in out] == [("2021", 6, 10), ("3", 19, 20), ("١٢", 28, 30)]
    assert all(text[c.start : c.end] == c.text for c in out)


def test_bio_spans_group_tags_and_keep_exact_offsets():
    # "Anna lebt in Köln." tokens with the space before a word inside its piece, as Metaspace gives
    text = "Anna lebt in Köln."
    offsets = [(0, 0), (0, 4), (4, 9), (9, 12), (12, 15), (15, 17), (17, 18), (0, 0)]
    labels = ["O", "B-PER", "O", "O", "B-LOC", "I-LOC", "O", "B-ORG"]  # a special token's label is skipped
    spans = bio_spans(text, offsets, labels)
    assert [(c.text, c.start, c.end, c.kind) for c in spans] == [
        ("Anna", 0, 4, "entity"),
        ("Köln", 13, 17, "entity"),
    ]


def test_bio_spans_cjk_and_lenient_inside_and_bioes():
    text = "北京是中国的首都"
    offsets = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8)]
    # I- after O opens an entity; I- of another type opens another; S- stands alone; E- closes
    labels = ["I-LOC", "I-LOC", "O", "B-LOC", "I-ORG", "S-MISC", "B-PER", "E-PER"]
    assert [c.text for c in bio_spans(text, offsets, labels)] == ["北京", "中", "国", "的", "首都"]


def test_ordered_candidates_paper_order_and_rules_over_overlaps():
    entities = [
        Candidate("Berlin", 0, 6, "entity"),
        Candidate("Berlin", 20, 26, "entity"),
        Candidate("März", 33, 37, "entity"),
    ]
    chunks = [Candidate("berlin", 0, 6, "noun_chunk"), Candidate("die Stadt", 7, 16, "noun_chunk")]
    rules = [Candidate("5. März 2021", 30, 42, "date")]
    got = ordered_candidates(entities, chunks, rules)
    assert [(c.text, c.start) for c in got] == [
        ("Berlin", 0),
        ("Berlin", 20),
        ("die Stadt", 7),
        ("5. März 2021", 30),
    ]


class Listed:
    """A scripted extractor: each text's candidates from a table, counting its calls."""

    name = "scripted"

    def __init__(self, table):
        self.table, self.calls = table, []

    def extract(self, texts):
        self.calls.append(list(texts))
        return [self.table[t] for t in texts]


def test_stage_sets_candidates_offsets_once_per_response_and_drops():
    a, b = "Ich wohne in Köln.", "北京是首都"
    table = {
        a: [Candidate("Ich", 0, 3, "entity"), Candidate("Köln", 13, 17, "entity")],
        b: [Candidate("北京", 0, 2, "entity")],
    }
    pairs = [Pair(r, "k", ResponseScore(i, 0.0, 0.0)) for i, r in enumerate([a, b, a])]
    extractor = Listed(table)
    assert find_candidates_by(pairs, extractor, drop=["ich"]) == "scripted"
    assert extractor.calls == [[a, b]]  # one call, each distinct response once
    assert [p.result.candidates for p in pairs] == [["Köln"], ["北京"], ["Köln"]]
    assert [p.result.candidate_offsets for p in pairs] == [[(13, 17)], [(0, 2)], [(13, 17)]]
