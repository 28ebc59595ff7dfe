"""PsiloQA's reader and span figures (`q2_metric.meta.psiloqa`), expected values by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from q2_metric.meta.psiloqa import PsiloQAError, psiloqa_figures, read_psiloqa, span_iou_f1


def _row(rid, answer, labels, lang="de", passage="Ein Text.", question="Was?"):
    return {
        "id": rid,
        "lang": lang,
        "wiki_passage": passage,
        "question": question,
        "llm_answer": answer,
        "labels": labels,
    }


def test_span_f1_and_iou_by_hand():
    # answer 1: gold [0, 4), predicted [2, 8): shared {2, 3}: tp 2; predicted 6, gold 4;
    #   IoU 2 / |{0..7}| = 2 / 8 = 0.25
    # answer 2: nothing in either: tp 0, IoU 1 (both empty)
    # summed: P = 2 / 6 = 1/3, R = 2 / 4 = 1/2, F1 = 2 * (1/3 * 1/2) / (1/3 + 1/2) = (1/3) / (5/6) = 0.4
    figs = span_iou_f1([[(0, 4)], []], [[(2, 8)], []])
    assert figs["tp"] == 2 and figs["predicted"] == 6 and figs["gold"] == 4
    assert figs["precision"] == pytest.approx(1 / 3) and figs["recall"] == 0.5
    assert figs["f1"] == pytest.approx(0.4) and figs["iou"] == pytest.approx((0.25 + 1) / 2)


def test_reader_joins_question_and_passage_and_reads_csv_labels():
    rows = [
        _row("1", "Goethe 1750.", [[7, 11]]),
        _row("2", "Goethe 1750.", "[[7, 11]]"),  # a CSV cell: the list as JSON text
        _row("3", "kurz", [[0, 9]]),  # beyond the answer
        _row("4", "", []),
        _row("5", "نعم", [], lang="AR"),
    ]
    kept, bad = read_psiloqa(Path("test.jsonl"), rows)
    assert kept["ids"] == ["1", "2", "5"] and kept["gold"] == [[(7, 11)], [(7, 11)], []]
    assert kept["knowledge"][0] == "Was?\nEin Text." and kept["lang"] == ["de", "de", "ar"]
    assert bad == [
        "test.jsonl row 3 (id 3): field 'labels' item 0 must be [start, end], integers with start < end "
        "within 'llm_answer' (4 characters), got [0, 9].",
        "test.jsonl row 4 (id 4): field 'llm_answer' is empty or not text.",
    ]
    assert read_psiloqa(Path("t"), rows, langs=("AR",))[0]["ids"] == ["5"]
    with pytest.raises(PsiloQAError, match="id 1 is given twice"):
        read_psiloqa(Path("t"), [rows[0], rows[0]])


def test_figures_per_language_leave_out_unscored_answers():
    figs = psiloqa_figures(["a", "b"], ["de", "ar"], [[(0, 2)], []], {"j": [[(0, 2)], None]})
    assert figs["de"]["metrics"]["j"]["f1"] == 1.0 and figs["de"]["metrics"]["j"]["iou"] == 1.0
    assert figs["ar"]["metrics"]["j"]["answers"] == 0 and figs["ar"]["metrics"]["j"]["unscored"] == ["b"]
    assert figs["ar"]["metrics"]["j"]["iou"] is None
