"""`q2 meta-eval` as the paper defines it, pinned on hand-made data."""

import csv
import math
import subprocess
import sys

import numpy as np
import pytest
from support.data import ANNOTATED
from support.files import read_csv, read_json

from q2_metric.meta.baselines import bleu_scores, overlap_scores
from q2_metric.meta.evaluation import SPLITS, AnnotatedSet, MetaEvalInputError, run_meta_eval
from q2_metric.meta.stats import (
    classification_report,
    roc_auc,
    simulate_systems,
    spearman,
    system_bootstrap,
    to_unit_scale,
)
from q2_metric.models.spacy_parser import load_spacy


@pytest.fixture(scope="module")
def nlp():
    return load_spacy()


def test_threshold_direction_score_at_threshold_is_inconsistent():
    # a neutral fallback scores exactly 0.5: inconsistent, as in the paper ("0.5 or below")
    r = classification_report([0.5, 0.51, 0.2, 0.9], [0, 1, 0, 1], threshold=0.5)
    assert r["accuracy"] == 1.0
    r = classification_report([0.5], [1], threshold=0.5)
    assert r["accuracy"] == 0.0 and r["consistent"]["recall"] == 0.0


def test_classification_hand_computed():
    scores = [0.9, 0.6, 0.4, 0.2, 0.7, 0.1]
    consistent = [1, 1, 1, 0, 0, 0]
    r = classification_report(scores, consistent, threshold=0.5)
    assert r["accuracy"] == pytest.approx(4 / 6)
    assert r["consistent"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    assert roc_auc(scores, consistent) == pytest.approx(7 / 9)


def test_overlap_tokenisation(nlp):
    # knowledge lower-cased; stop words ("is", "the", "of", "in") and punctuation dropped:
    # gold {paris, capital, france}, prediction {paris, nice, city, france} -> P 2/4, R 2/3
    [score] = overlap_scores(["Paris is a nice city in France!"], ["Paris is the capital of France."], nlp)
    assert score == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))
    assert overlap_scores(["the of"], ["Paris"], nlp) == [0.0]  # nothing shared


def test_bleu_scale_and_lowercased_reference():
    import sacrebleu

    [same] = bleu_scores(["paris is the capital of france ."], ["Paris is the capital of France ."])
    assert same == pytest.approx(100.0)  # the knowledge is lower-cased; 0-100 scale
    [partial] = bleu_scores(["paris is a big city"], ["Paris is the capital of France"])
    assert partial == pytest.approx(
        sacrebleu.corpus_bleu(["paris is a big city"], [["paris is the capital of france"]]).score
    )
    assert to_unit_scale("bleu", [50.0]) == [0.5]
    assert to_unit_scale("bertscore", [-1.0, 0.0, 1.0]) == [0.0, 0.5, 1.0]


def test_bootstrap_draws_one_sample_shared_by_all_systems():
    # each context's two responses score the same: with one shared sample every simulated system
    # gets the same mean, so no repetition has a correlation (independent samples would)
    scores = np.linspace(0.0, 1.0, 40)
    res = system_bootstrap(scores, scores, repetitions=25, seed=1)
    assert res.no_correlation == 25 and math.isnan(res.mean)
    rng = np.random.default_rng(0)
    systems = simulate_systems(np.ones(10), np.zeros(10), rng, shares=(0.05, 0.25), sample_size=350)
    assert systems == pytest.approx([1 - round(0.05 * 350) / 350, 1 - round(0.25 * 350) / 350])


def test_bootstrap_percentiles_and_seed():
    rng = np.random.default_rng(7)
    good, bad = rng.uniform(0.2, 1.0, 60), rng.uniform(0.0, 0.8, 60)  # overlapping: imperfect ranks
    a = system_bootstrap(good, bad, repetitions=50, seed=3)
    assert (
        a
        == system_bootstrap(good, bad, repetitions=50, seed=3)
        != system_bootstrap(good, bad, repetitions=50, seed=4)
    )
    assert 0.3 < a.mean < 1.0 and a.low < a.mean < a.high and a.no_correlation == 0
    assert spearman([5, 4, 3, 2, 1], [0.9, 0.8, 0.7, 0.6, 0.5]) == pytest.approx(1.0)


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def synthetic(tmp_path, q2=True):
    def rows(score, n=4):
        return [
            {
                "response": "paris is nice",
                "knowledge": "Paris is nice and big",
                **(
                    {
                        "q2": score,
                        "q2_no_nli": score,
                        "num_questions": 2,
                        "num_no_answer": 1,
                        "fallback": "False",
                    }
                    if q2
                    else {}
                ),
            }
            for _ in range(n)
        ]

    scores = {
        "dodeca_inconsistent": 0.2,
        "dodeca_consistent": 0.8,
        "memnet_inconsistent": 0.5,
        "memnet_consistent": 0.6,
    }
    for split in SPLITS:
        write_csv(tmp_path / f"{split}.csv", rows(scores[split]))
    cross = [
        {
            "knowledge": "Paris is big",
            "dodeca_response": "paris",
            "memnet_response": "rome",
            "dodeca_label": i % 2,
            "memnet_label": 1 - i % 2,
            **(
                {
                    "dodeca_q2": 0.1 + 0.8 * (1 - i % 2),
                    "memnet_q2": 0.1 + 0.8 * (i % 2),
                    "dodeca_q2_no_nli": 0.5,
                    "memnet_q2_no_nli": 0.5,
                }
                if q2
                else {}
            ),
        }
        for i in range(10)
    ]
    write_csv(tmp_path / "cross_annotation.csv", cross)
    return AnnotatedSet.from_dir(tmp_path)


def test_run_meta_eval_synthetic(tmp_path, nlp):
    figures = {}
    report = run_meta_eval(synthetic(tmp_path), repetitions=30, nlp=nlp, bertscore=False, figures=figures)
    assert report.table2["dodeca_consistent"].means["q2"] == pytest.approx(0.8)
    assert report.table2["dodeca_consistent"].stats["valid_questions"] == 8
    assert report.table2["dodeca_consistent"].value("no_answer_share") == 0.5
    # memnet inconsistent scores 0.5: "0.5 or below" is inconsistent, so every response is right
    assert report.table3["q2"].accuracy == 1.0 and report.table3["q2"].inconsistent.recall == 1.0
    assert report.table4["q2"].bootstrap.mean == pytest.approx(1.0) and report.contexts_one_inconsistent == 10
    assert report.table4["q2_no_nli"].bootstrap.no_correlation == 30  # a constant metric never correlates
    # TRUE, cross annotation: Q² is 0.9 for every consistent response and 0.1 for every other one
    # (AUC 1); Q² without NLI is 0.5 everywhere (all pairs tied: AUC 1/2)
    cross = report.true.metrics
    assert cross["q2"]["cross"].auc == 1.0 and cross["q2"]["cross"].n == 20
    assert cross["q2_no_nli"]["cross"].auc == 0.5 == cross["q2_no_nli"]["cross"].low
    # the JSON form (meta_eval.json) keeps its keys and nesting
    data = report.to_dict()
    assert list(data) == [
        "threshold",
        "seed",
        "sources",
        "metrics",
        "table2",
        "table3",
        "table4",
        "true",
        "contexts_one_inconsistent",
        "notes",
        "plots",
    ]
    assert (
        data["table2"]["dodeca_consistent"]["n"] == 4
        and data["table3"]["q2"]["inconsistent"]["recall"] == 1.0
    )
    assert data["table4"]["q2"]["contexts"] == 10 and data["true"]["metrics"]["q2"]["cross"]["roc_auc"] == 1.0
    assert data["plots"] == list(figures)
    assert set(figures) == {
        "pr_curve.png",
        "roc_curve.png",
        "hist_q2.png",
        "hist_q2_no_nli.png",
        "hist_overlap.png",
        "hist_bleu.png",
    }
    assert all(png.startswith(b"\x89PNG") and len(png) > 1000 for png in figures.values())


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda rows: [r.pop("q2") for r in rows], "dodeca_consistent.csv: column 'q2' is missing"),
        (
            lambda rows: rows[2].update(q2=""),
            "dodeca_consistent.csv: column 'q2' is empty at row 3 (line 4).",
        ),
        (lambda rows: rows[0].update(q2="5.0"), "column 'q2' holds 5.0 at row 1 (line 2), outside [0, 1]."),
        (lambda rows: rows[1].update(q2="-3"), "column 'q2' holds -3 at row 2 (line 3), outside [0, 1]."),
        (lambda rows: rows[0].update(q2="high"), "column 'q2' holds 'high', not a number at row 1 (line 2)."),
    ],
)
def test_bad_score_columns_stop_with_one_sentence(tmp_path, nlp, edit, message):
    synthetic(tmp_path)
    path = tmp_path / "dodeca_consistent.csv"
    rows = read_csv(path)
    edit(rows)
    write_csv(path, rows) if rows[0] else None
    with pytest.raises(MetaEvalInputError) as err:
        run_meta_eval(AnnotatedSet.from_dir(tmp_path), repetitions=5, nlp=nlp, bertscore=False)
    assert message in str(err.value)


def test_bad_cross_annotation_stops(tmp_path, nlp):
    synthetic(tmp_path)
    path = tmp_path / "cross_annotation.csv"
    rows = read_csv(path)
    for r in rows:
        r.pop("memnet_q2")
    write_csv(path, rows)
    with pytest.raises(MetaEvalInputError, match="column 'dodeca_q2' and 'memnet_q2' is missing"):
        run_meta_eval(AnnotatedSet.from_dir(tmp_path), repetitions=5, nlp=nlp, bertscore=False)
    rows[3]["dodeca_label"] = "2"
    write_csv(path, rows)
    with pytest.raises(
        MetaEvalInputError, match=r"'dodeca_label' holds '2' at row 4 .line 5.; labels must be 0 or 1"
    ):
        run_meta_eval(
            AnnotatedSet.from_dir(tmp_path), baselines_only=True, repetitions=5, nlp=nlp, bertscore=False
        )


@pytest.mark.slow  # a subprocess
def test_cli_baselines_only_on_the_annotated_set(tmp_path):
    """The real annotated set, no model: Tables 2-4 and the TRUE table for overlap and BLEU, the plots,
    meta_eval.md and meta_eval.tex."""
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "meta-eval",
            "--annotated-dir",
            str(ANNOTATED),
            "--baselines-only",
            "--no-bertscore",
            "--repetitions",
            "200",
            "--out-dir",
            str(tmp_path / "me"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    data = read_json(tmp_path / "me" / "meta_eval.json")
    assert set(data["table2"]) == set(SPLITS)
    for split in SPLITS:
        assert set(data["table2"][split]) >= {"overlap", "bleu"} and data["table2"][split]["n"] == 150
    assert (
        0 < data["table2"]["memnet_consistent"]["overlap"] < 1
        and data["table2"]["memnet_consistent"]["bleu"] > 1
    )
    for metric in ("overlap", "bleu"):
        assert set(data["table4"][metric]) >= {"mean", "low", "high"}
        assert (
            -1
            <= data["table4"][metric]["low"]
            <= data["table4"][metric]["mean"]
            <= data["table4"][metric]["high"]
            <= 1
        )
    for metric in ("overlap", "bleu"):  # the TRUE table, on both annotated sets
        for name, n in (("split", 600), ("cross", 1088)):
            t = data["true"]["metrics"][metric][name]
            assert t["n"] == n and t["low"] < t["roc_auc"] < t["high"] and t["draws"] == 1000
    markdown = (tmp_path / "me" / "meta_eval.md").read_text()
    assert "Table 4" in markdown and "## TRUE protocol" in markdown
    for name in ("pr_curve.png", "roc_curve.png", "hist_overlap.png", "hist_bleu.png"):  # no Q², still plots
        assert (tmp_path / "me" / name).read_bytes().startswith(b"\x89PNG") and f"]({name})" in markdown
    assert r"\begin{tabular}" in (tmp_path / "me" / "meta_eval.tex").read_text()


@pytest.mark.slow  # a subprocess
def test_cli_missing_column_exit_code(tmp_path):
    synthetic(tmp_path, q2=False)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "meta-eval",
            "--annotated-dir",
            str(tmp_path),
            "--no-bertscore",
            "--out-dir",
            str(tmp_path / "me"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 2
    assert res.stderr.strip().endswith(
        "dodeca_inconsistent.csv: column 'q2' is missing (score the file with "
        "`q2 score`, or pass --baselines-only)."
    )
    assert not (tmp_path / "me" / "meta_eval.json").exists()
