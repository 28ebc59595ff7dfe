"""`q2 meta-eval` statistics against hand-computed values."""

import csv
import json
import subprocess
import sys

import pytest

from q2_metric.frontends.meta_eval import (classification_report, roc_auc, run_meta_eval, spearman,
                                 system_bootstrap)


def test_classification_hand_computed():
    scores = [0.9, 0.6, 0.4, 0.2, 0.7, 0.1]
    consistent = [1, 1, 1, 0, 0, 0]
    r = classification_report(scores, consistent, threshold=0.5)
    # predicted consistent: 0.9, 0.6, 0.7 -> tp=2, fp=1 ; inconsistent predicted: 0.4, 0.2, 0.1 -> tp=2, fn=1
    assert r["accuracy"] == pytest.approx(4 / 6)
    assert r["consistent"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    assert r["inconsistent"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})
    r = classification_report(scores, consistent, threshold=0.65)
    assert r["accuracy"] == pytest.approx(3 / 6)


def test_nan_scores_are_left_out():
    assert classification_report([1.0, float("nan"), 0.0], [1, 0, 0])["n"] == 2


def test_auc_hand_computed():
    # pairs (pos, neg): 0.9 beats all 3; 0.6 beats 0.2, 0.1, loses to 0.7; 0.4 beats 0.2, 0.1 -> 7/9
    assert roc_auc([0.9, 0.6, 0.4, 0.2, 0.7, 0.1], [1, 1, 1, 0, 0, 0]) == pytest.approx(7 / 9)
    assert roc_auc([0.5, 0.5], [1, 0]) == 0.5


def test_spearman():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_bootstrap_is_deterministic_with_a_seed():
    good = [0.9, 0.8, 0.7, 0.95, 0.6] * 10
    bad = [0.1, 0.3, 0.2, 0.5, 0.4] * 10
    a = system_bootstrap(good, bad, repetitions=50, seed=3)
    b = system_bootstrap(good, bad, repetitions=50, seed=3)
    c = system_bootstrap(good, bad, repetitions=50, seed=4)
    assert a == b and a != c
    assert 0.8 < a.mean <= 1.0 and a.low <= a.mean <= a.high
    # a metric that cannot tell the responses apart correlates near 0 on average
    flat = system_bootstrap([0.5] * 50, [0.5] * 50, repetitions=20, seed=0)
    assert flat.mean == 0.0


def synthetic():
    def rows(score, n=4):
        return [{"response": "paris is nice", "knowledge": "paris is nice and big", "q2": str(score),
                 "q2_no_nli": str(score)} for _ in range(n)]
    splits = {("dodeca", "inconsistent"): rows(0.2), ("dodeca", "consistent"): rows(0.8),
              ("memnet", "inconsistent"): rows(0.4), ("memnet", "consistent"): rows(0.6)}
    cross = [{"dodeca_label": str(i % 2), "memnet_label": str(1 - i % 2), "knowledge": "paris is big",
              "dodeca_response": "paris", "memnet_response": "rome", "dodeca_q2": str(0.1 + 0.8 * (1 - i % 2)),
              "memnet_q2": str(0.1 + 0.8 * (i % 2)), "dodeca_q2_no_nli": "0.5", "memnet_q2_no_nli": "0.5"}
             for i in range(10)]
    return splits, cross


def test_run_meta_eval_synthetic(tmp_path):
    splits, cross = synthetic()
    report = run_meta_eval(splits, cross, repetitions=30, pr_png=str(tmp_path / "pr.png"))
    assert report["table2_mean_per_split"]["dodeca/consistent"]["q2"] == pytest.approx(0.8)
    assert report["table3_classification"]["q2"]["accuracy"] == 1.0
    assert report["table3_classification"]["q2"]["roc_auc"] == 1.0
    t4 = report["table4_system_bootstrap"]
    assert t4["contexts_one_inconsistent"] == 10 and t4["metrics"]["q2"]["spearman_mean"] == pytest.approx(1.0)
    assert (tmp_path / "pr.png").stat().st_size > 1000
    # bert-score is not installed here: the baseline is left out and the report says why, once
    assert "bertscore" not in report["table3_classification"]
    assert sum(n.startswith("BERTScore baseline skipped") for n in report["notes"]) == 1


def test_cli_meta_eval(tmp_path):
    splits, cross = synthetic()
    args = []
    for (system, label), rows in splits.items():
        path = tmp_path / f"{system}_{label}.csv"
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        args += [f"--{system}-{label}", str(path)]
    with open(tmp_path / "cross.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(cross[0]))
        w.writeheader()
        w.writerows(cross)
    res = subprocess.run([sys.executable, "-m", "q2_metric.frontends.cli", "meta-eval", *args, "--cross",
                          str(tmp_path / "cross.csv"), "--repetitions", "20", "--out-dir", str(tmp_path / "me")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Table 4" in res.stdout and (tmp_path / "me" / "meta_eval.md").exists()
    data = json.load(open(tmp_path / "me" / "meta_eval.json"))
    assert set(data["table3_classification"]) >= {"q2", "q2_no_nli", "token_f1", "bleu"}
