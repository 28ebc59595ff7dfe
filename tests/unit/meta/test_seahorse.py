"""SEAHORSE's reader (question4, articles by gem_id) and per-language figures
(`q2_metric.meta.seahorse`), on tests/data/seahorse; expected values by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from q2_metric.meta.seahorse import (
    SeahorseError,
    correlations,
    read_articles,
    read_seahorse,
    seahorse_figures,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "seahorse"


def _rows():
    from q2_metric import io

    raw, _ = io.read_table(DATA / "test.tsv")
    return [r.fields for r in raw]


def test_question4_with_articles_joined_by_gem_id():
    articles = read_articles(DATA / "articles.jsonl")
    assert articles["xsum-test-3"].startswith("The mayor will stay")  # xsum's column is `document`
    kept, bad, counts = read_seahorse(DATA / "test.tsv", _rows(), articles)
    assert kept["gem_id"] == [
        "mlsum_de-test-1",
        "mlsum_de-test-2",
        "xlsum_english-test-1",
        "xlsum_english-test-2",
        "xlsum_spanish-test-1",
        "xlsum_spanish-test-2",
        "mlsum_de-test-10",
    ]
    assert kept["consistent"] == [1, 0, 1, 0, 1, 0, 1]
    assert kept["lang"] == ["de", "de", "en", "en", "es", "es", "de"]  # en-US -> en
    assert kept["knowledge"][0] == articles["mlsum_de-test-1"]
    assert bad == [
        "test.tsv row 9 (gem_id mlsum_de-test-9): no article has this gem_id in --seahorse-articles."
    ]
    assert counts["left_out_by_label"] == {"(empty)": 1, "Unsure": 1} and counts["kept"] == 7
    assert read_seahorse(DATA / "test.tsv", _rows(), articles, langs=("ES",))[0]["lang"] == ["es", "es"]


def test_an_articles_file_without_a_text_column_is_refused(tmp_path):
    bad = tmp_path / "a.jsonl"
    bad.write_text('{"gem_id": "x", "summary": "y"}\n')
    with pytest.raises(
        SeahorseError, match="needs a 'gem_id' column and one of 'text', 'document', 'source'"
    ):
        read_articles(bad)
    with pytest.raises(SeahorseError, match="no such file"):
        read_articles(tmp_path / "none.jsonl")


def test_correlations_by_hand():
    # scores [.9, .4, .3], labels [1, 0, 1].
    # ROC AUC: consistent .9 and .3 against .4: one win, one loss -> 1/2.
    # Pearson (in tenths): x = [9, 4, 3], mean 16/3, deviations [11, -4, -7]/3; y deviations
    # [1, -2, 1]/3. Sum of products (11 + 8 - 7)/9 = 12/9; sums of squares 186/9 and 6/9:
    # r = (12/9) / sqrt(186 * 6 / 81) = 12 / sqrt(1116) = 0.3592...
    # Spearman: ranks x [3, 2, 1], ranks y [2.5, 1, 2.5]; deviations [1, 0, -1] and
    # [.5, -1, .5]: sum of products .5 + 0 - .5 = 0 -> ρ = 0.
    c = correlations([0.9, 0.4, 0.3], [1, 0, 1])
    assert c["roc_auc"] == 0.5 and c["pearson"] == pytest.approx(12 / math.sqrt(1116))
    assert c["spearman"] == pytest.approx(0.0, abs=1e-12) and c["n"] == 3 and c["yes"] == 2


def test_undefined_figures_are_none_and_unscored_rows_are_left_out():
    c = correlations([0.5, 0.5, float("nan")], [1, 0, 1])  # constant scores: no ρ; AUC a tie: 1/2
    assert c["pearson"] is None and c["spearman"] is None and c["roc_auc"] == 0.5 and c["unscored"] == 1
    assert correlations([0.2, 0.9], [1, 1])["roc_auc"] is None  # one class


def test_figures_per_language_and_all():
    figs = seahorse_figures(["de", "en", "de", "en"], [1, 1, 0, 0], {"m": [0.9, 0.2, 0.1, 0.4]})
    # de: .9 (Yes) beats .1 (No): 1; en: .2 (Yes) below .4 (No): 0; all: Yes {.9, .2} vs No
    # {.1, .4}: .9 wins twice, .2 wins once (over .1): 3 of 4
    assert figs["de"]["m"]["roc_auc"] == 1.0 and figs["en"]["m"]["roc_auc"] == 0.0
    assert figs["all"]["m"]["roc_auc"] == 0.75
