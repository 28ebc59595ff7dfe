"""Q² in the benchmark (through `q2 score`'s file scorer, tiny random models) and the decision
threshold of `q2 score --threshold` and `compute(threshold=)`.

Expected values: Q²'s scores come from a separate `q2 score` run on the same pairs, and the ROC AUC,
decisions and counts are recomputed here from those scores (pairwise AUC, `>=` by hand)."""

import csv
import json

import numpy as np
import pytest
from support.data import sample_rows

from q2_metric.cli import main
from q2_metric.signature import Signature


def my_auc(scores, consistent) -> float:
    pos = [s for s, y in zip(scores, consistent) if y == 1]
    neg = [s for s, y in zip(scores, consistent) if y == 0]
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def tiny_flags(models) -> list[str]:
    return [
        "--qg-model",
        models["qg"],
        "--qa-model",
        models["qa"],
        "--nli-model",
        models["nli"],
        "--device",
        "cpu",
        "--max-question-length",
        "8",
    ]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Four consistent and four inconsistent rows of the bundled annotated sample, with its consistent/inconsistent labels."""
    every = sample_rows()
    rows = [r for r in every if r["label"] == "consistent"][:4] + [
        r for r in every if r["label"] != "consistent"
    ][:4]
    assert {r["label"] for r in rows} == {"consistent", "inconsistent"}
    path = tmp_path_factory.mktemp("small") / "small.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["response", "knowledge", "label"], extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path, [int(r["label"] == "consistent") for r in rows]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow  # seconds: tiny models end to end, several times
def test_q2_column_of_the_benchmark(tmp_path, tiny_models, small):
    path, labels = small
    out, cache = tmp_path / "out", tmp_path / "cache"
    code = main(
        [
            "meta-eval",
            "--dataset",
            f"small={path}",
            "--label-col",
            "label",
            "--consistent-label",
            "consistent",
            "--no-bertscore",
            "--bootstrap",
            "25",
            "--cache-dir",
            str(cache),
            "--no-progress",
            "--out-dir",
            str(out),
            *tiny_flags(tiny_models),
        ]
    )
    assert code == 0
    report = json.loads((out / "benchmark.json").read_text())
    res = report["results"]["small"]["metrics"]
    assert {"q2", "q2_no_nli", "overlap", "bleu", "e2e_nli"} <= set(res)
    # the same pairs scored by `q2 score` on its own
    assert (
        main(
            [
                "score",
                str(path),
                "-o",
                str(tmp_path / "scored.csv"),
                "--no-cache",
                "--no-progress",
                *tiny_flags(tiny_models),
            ]
        )
        == 0
    )
    q2 = [float(r["q2"]) for r in read(tmp_path / "scored.csv")]
    assert res["q2"]["roc_auc"] == pytest.approx(my_auc(q2, labels), abs=1e-12)
    assert res["overlap"]["p_vs_q2"] is not None and res["q2"]["p_vs_q2"] is None
    assert any(cache.rglob("*")), "Q² went through the resumable cache"
    assert report["metrics"]["q2"]["source"].startswith("q2 score")


def test_missing_q2_model_stops_before_any_work(tmp_path, small, capsys):
    path, _ = small
    out = tmp_path / "out"
    code = main(
        [
            "meta-eval",
            "--dataset",
            f"small={path}",
            "--label-col",
            "label",
            "--consistent-label",
            "consistent",
            "--qg-model",
            str(tmp_path / "no-such-model"),
            "--out-dir",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "no-such-model" in err and not out.exists()


@pytest.mark.slow  # seconds: tiny models end to end, several times
def test_score_threshold_adds_decisions_counts_and_signature(tmp_path, tiny_models, small):
    path, _ = small
    flags = [*tiny_flags(tiny_models), "--no-cache", "--no-progress"]
    assert (
        main(
            ["score", str(path), "-o", str(tmp_path / "a.csv"), "--summary", str(tmp_path / "a.json"), *flags]
        )
        == 0
    )
    assert (
        main(
            [
                "score",
                str(path),
                "-o",
                str(tmp_path / "b.csv"),
                "--summary",
                str(tmp_path / "b.json"),
                "--threshold",
                "0.4",
                *flags,
            ]
        )
        == 0
    )
    plain, decided = read(tmp_path / "a.csv"), read(tmp_path / "b.csv")
    assert "decision" not in plain[0]
    expected = ["consistent" if float(r["q2"]) > 0.4 else "inconsistent" for r in decided]
    assert [r["decision"] for r in decided] == expected
    summary, before = (
        json.loads((tmp_path / "b.json").read_text()),
        json.loads((tmp_path / "a.json").read_text()),
    )
    assert (summary["threshold"], summary["num_consistent"], summary["num_inconsistent"]) == (
        0.4,
        expected.count("consistent"),
        expected.count("inconsistent"),
    )
    assert summary["signature"] == before["signature"] + "|thr:0.4"
    assert "|thr:0.4|" in summary["signature_short"] and "thr" not in before["signature_short"]
    assert Signature.parse(summary["signature"]).to_dict()["thr"] == "0.4"


def test_score_threshold_refuses_a_decision_column_and_bad_values(tmp_path, tiny_models, small, capsys):
    path, _ = small
    rows = read(path)
    clash = tmp_path / "clash.csv"
    with open(clash, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=[*rows[0], "decision"])
        w.writeheader()
        w.writerows({**r, "decision": "mine"} for r in rows)
    out = tmp_path / "o.csv"
    assert (
        main(
            [
                "score",
                str(clash),
                "-o",
                str(out),
                "--threshold",
                "0.5",
                "--no-cache",
                *tiny_flags(tiny_models),
            ]
        )
        == 2
    )
    assert "already has a column 'decision'" in capsys.readouterr().err and not out.exists()
    with pytest.raises(SystemExit):
        main(["score", str(path), "-o", str(out), "--threshold", "1.5"])
    assert "[0, 1]" in capsys.readouterr().err


def test_compute_threshold(tiny_models):
    import evaluate

    import q2_metric
    from q2_metric.errors import Q2OptionError

    rows = sample_rows()[:4]
    q2 = evaluate.load(q2_metric.module_path())
    tiny = dict(
        qg_model=tiny_models["qg"],
        qa_model=tiny_models["qa"],
        nli_model=tiny_models["nli"],
        device="cpu",
        decoding="greedy",
        max_question_length=8,
        progress=False,
    )
    preds, refs = [r["response"] for r in rows] + [""], [r["knowledge"] for r in rows] + ["k"]
    plain = q2.compute(predictions=preds, references=refs, **tiny)
    got = q2.compute(predictions=preds, references=refs, threshold=0.3, **tiny)
    expected = [None if s is None else "consistent" if s > 0.3 else "inconsistent" for s in plain["scores"]]
    assert got["decisions"] == expected and expected[-1] is None
    assert (got["num_consistent"], got["num_inconsistent"]) == (
        expected.count("consistent"),
        expected.count("inconsistent"),
    )
    assert got["signature"] == plain["signature"] + "|thr:0.3" and "decisions" not in plain
    with pytest.raises(Q2OptionError, match="threshold"):
        q2.compute(predictions=preds, references=refs, threshold=2, **tiny)
    assert np.isclose(got["q2"], plain["q2"])
