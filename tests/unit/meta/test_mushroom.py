"""Mu-SHROOM's two figures as its scorer computes them (`q2_metric.meta.mushroom`): expected values
worked out by hand below, never by the code under test."""

from __future__ import annotations

import json
import math

import pytest

from q2_metric.meta.mushroom import (
    MushroomError,
    Soft,
    cor,
    iou,
    mushroom_figures,
    read_mushroom,
    read_predictions,
    recompute_hard,
    soft_vector,
)


def test_iou_and_cor_on_a_hand_example():
    # a text of 10 characters. Gold soft labels: 0..4 at 0.5, 4..6 at 1.0; gold hard labels: the
    # characters > 0.5, [4, 6]. Predicted: soft 2..6 at 0.8, hard [2, 6].
    gold_soft, pred_soft = [Soft(0, 4, 0.5), Soft(4, 6, 1.0)], [Soft(2, 6, 0.8)]
    # IoU: G = {4, 5}, P = {2, 3, 4, 5}: |G ∩ P| = 2, |G ∪ P| = 4, IoU = 2 / 4 = 0.5
    assert iou([(4, 6)], [(2, 6)]) == 0.5
    # Cor. Gold vector  [.5 .5 .5 .5 1 1 0 0 0 0], predicted [0 0 .8 .8 .8 .8 0 0 0 0].
    # Mean ranks: gold 0 -> 2.5 (ranks 1-4), .5 -> 6.5 (5-8), 1 -> 9.5 (9-10);
    #             predicted 0 -> 3.5 (ranks 1-6), .8 -> 8.5 (7-10). Both rank means are 5.5.
    # Deviations: gold [1 1 1 1 4 4 -3 -3 -3 -3], predicted [-2 -2 3 3 3 3 -2 -2 -2 -2].
    # Sum of products: -2 -2 +3 +3 +12 +12 +6 +6 +6 +6 = 50.
    # Sums of squares: gold 4*1 + 2*16 + 4*9 = 72; predicted 6*4 + 4*9 = 60.
    # ρ = 50 / sqrt(72 * 60) = 50 / sqrt(4320) = 0.76073...
    assert cor(gold_soft, pred_soft, 10) == pytest.approx(50 / math.sqrt(4320))
    assert recompute_hard(gold_soft) == [(4, 6)]  # 0.5 is not > 0.5


def test_the_scorers_conventions_for_empty_and_constant():
    assert iou([], []) == 1.0  # neither marks anything: 1
    assert iou([(0, 3)], []) == 0.0 and iou([], [(0, 3)]) == 0.0
    # both vectors constant (all 0; or all 0 against all 1): 1.0; one constant, the other not: 0.0
    assert cor([], [], 5) == 1.0
    assert cor([], [Soft(0, 5, 1.0)], 5) == 1.0
    assert cor([Soft(0, 2, 0.4)], [], 5) == 0.0
    assert cor([Soft(0, 2, 0.4)], [Soft(0, 5, 0.7)], 5) == 0.0


def test_a_later_soft_label_overwrites_an_earlier_one():
    assert soft_vector([Soft(0, 4, 0.2), Soft(2, 3, 0.9)], 5) == [0.2, 0.2, 0.9, 0.2, 0.0]


def test_hard_labels_recomputed_as_the_scorer_does():
    # > 0.5 only, sorted by (start, end), a span starting where the previous ended merged into it
    soft = [Soft(6, 8, 0.7), Soft(0, 2, 0.6), Soft(2, 4, 0.51), Soft(4, 6, 0.5)]
    assert recompute_hard(soft) == [(0, 4), (6, 8)]


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(rid, text, soft, hard=None, lang="EN"):
    out = {"id": rid, "lang": lang, "model_input": "Q?", "model_output_text": text, "soft_labels": soft}
    if hard is not None:
        out["hard_labels"] = hard
    return out


def test_reader_keeps_good_rows_and_names_bad_ones(tmp_path):
    path = _write(
        tmp_path / "m.jsonl",
        [
            _row("a", "abcdef", [{"start": 0, "end": 3, "prob": 0.6}]),  # no hard labels: recomputed
            _row("b", "abcdef", [{"start": 0, "end": 9, "prob": 0.6}]),  # beyond the text
            _row("c", "abcdef", [{"start": 0, "end": 2, "prob": 1.5}], [[0, 2]]),  # prob above 1
            _row("d", "ab", [], [[1, 0]]),  # start after end
            _row("e", "東京", [{"start": 0, "end": 2, "prob": 1.0}], [[0, 2]], lang="JA"),
        ],
    )
    rows = read_mushroom(path)
    assert rows.ids == ["a", "e"] and rows.hard == [[(0, 3)], [(0, 2)]] and rows.lang == ["en", "ja"]
    assert len(rows.bad) == 3
    assert rows.bad[0].startswith("m.jsonl line 2 (id b): field 'soft_labels' item 0 must have integer")
    assert "'prob' from 0 to 1, got 1.5" in rows.bad[1] and "field 'hard_labels' item 0" in rows.bad[2]
    assert read_mushroom(path, langs=("ja",)).ids == ["e"]


def test_an_id_given_twice_is_refused(tmp_path):
    path = _write(tmp_path / "m.jsonl", [_row("a", "x", []), _row("a", "y", [])])
    with pytest.raises(MushroomError, match="line 2: id a is given twice"):
        read_mushroom(path)


def test_predictions_in_the_tasks_format_or_as_spans(tmp_path):
    pred = _write(
        tmp_path / "p.jsonl",
        [
            {"id": "a", "soft_labels": [{"start": 1, "end": 3, "prob": 0.9}]},  # hard recomputed
            {"id": "b", "spans": [{"start": 0, "end": 2}]},  # hard labels and soft labels of prob 1
        ],
    )
    name, got = read_predictions(f"j={pred}", ["a", "b", "c"], ["abcd", "wxyz", "q"])
    assert name == "j" and got[2] is None
    assert got[0] == [(1, 3)] and got[0].soft == [Soft(1, 3, 0.9)]
    assert got[1] == [(0, 2)] and got[1].soft == [Soft(0, 2, 1.0)]
    bad = _write(tmp_path / "bad.jsonl", [{"id": "zz", "soft_labels": []}])
    with pytest.raises(MushroomError, match=r"line 1: field 'id' 'zz' is no kept row"):
        read_predictions(f"j={bad}", ["a"], ["abcd"])


def test_figures_per_language_with_the_two_references():
    # two outputs in one language: "abcd" gold [0, 2] (soft 0..2 at 1.0), "xy" with nothing marked
    figs = mushroom_figures(
        ["a", "b"],
        ["en", "en"],
        ["abcd", "xy"],
        [[(0, 2)], []],
        [[Soft(0, 2, 1.0)], []],
        {"judge": [[(0, 2)], None]},
    )["en"]["metrics"]
    # judge predicts only "a" (exactly): IoU 1, Cor 1 (identical vectors); "b" unscored
    assert figs["judge"] == {"items": 1, "unscored": ["b"], "iou": 1.0, "cor": 1.0}
    # mark everything: a: 2 of 4 -> 0.5, b: 0 of 2 -> 0; mean 0.25. Cor: a: predicted constant,
    # gold not -> 0; b: both constant -> 1; mean 0.5
    assert figs["mark everything"]["iou"] == 0.25 and figs["mark everything"]["cor"] == 0.5
    # mark nothing: a: 0 (IoU), 0 (Cor); b: 1 and 1; means 0.5 and 0.5
    assert figs["mark nothing"]["iou"] == 0.5 and figs["mark nothing"]["cor"] == 0.5
