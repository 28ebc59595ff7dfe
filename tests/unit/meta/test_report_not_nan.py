"""`meta_eval.md` and `meta_eval.tex` write an undefined figure as `n/a`, never `nan` (issue 36), and
state the one threshold rule (consistent iff score > T)."""

import csv

import pytest

from q2_metric.meta.evaluation import SPLITS, AnnotatedSet, run_meta_eval
from q2_metric.meta.report import render_latex, render_markdown


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from q2_metric.models.spacy_parser import load_spacy

    d = tmp_path_factory.mktemp("set")
    score = {
        "dodeca_inconsistent": 0.2,
        "dodeca_consistent": 0.8,
        "memnet_inconsistent": 0.3,
        "memnet_consistent": 0.6,
    }
    for split in SPLITS:  # no question anywhere: the no-answer share is undefined
        write_csv(
            d / f"{split}.csv",
            [
                {
                    "response": f"paris {split} {i}",
                    "knowledge": "Paris is big",
                    "q2": score[split],
                    "q2_no_nli": score[split],
                    "num_questions": 0,
                    "num_no_answer": 0,
                    "fallback": "True",
                }
                for i in range(3)
            ],
        )
    write_csv(
        d / "cross_annotation.csv",
        [
            {
                "knowledge": "Paris is big",
                "dodeca_response": "paris",
                "memnet_response": "rome",
                "dodeca_label": i % 2,
                "memnet_label": 1 - i % 2,
                "dodeca_q2": 0.5,
                "memnet_q2": 0.5,
                "dodeca_q2_no_nli": 0.5,
                "memnet_q2_no_nli": 0.5,
            }
            for i in range(4)
        ],
    )
    return run_meta_eval(
        AnnotatedSet.from_dir(d), repetitions=5, auc_draws=5, nlp=load_spacy(), bertscore=False
    )


def test_undefined_is_n_a(report):
    md, tex = render_markdown(report), render_latex(report)
    for text in (md, tex):
        cells = [
            c.strip()
            for line in text.splitlines()
            for c in line.replace("\\\\", "").split("|" if "|" in line else "&")
        ]
        assert "nan" not in cells and "n/a" in cells


def test_the_rule_is_stated(report):
    assert "consistent iff score > 0.5" in render_markdown(report)
    assert r"consistent iff score $>$ 0.5" in render_latex(report)
