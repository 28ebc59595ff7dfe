"""`q2 meta-eval --dataset ...`: the benchmark on BEGIN, TRUE-format and mapped files.

Expected values come from an independent computation written here (not the project's code): the
files read with pandas, the released baseline definitions re-implemented (Overlap: token F1 of
spaCy tokens without stop words and punctuation, knowledge lower-cased; BLEU: sacrebleu's
corpus_bleu([response], [[knowledge.lower()]]), as the released code's baselines.py),
ROC AUC by counting pairs, and the threshold by trying every dev score.
"""

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.data import ANNOTATED, DATA

from q2_metric.cli import main
from q2_metric.meta.calibrate import best_threshold, decision_report

BEGIN = DATA / "begin"  # the BEGIN files the repository holds (data/README.md)
DRAWS = 40


# -- the independent computation ----------------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer():
    from q2_metric.models.spacy_parser import load_spacy  # only to find the installed English model

    # The released code runs the whole pipeline; its token text, is_stop and is_punct come from the
    # tokenizer alone (lexical attributes), which keeps this test fast.
    return load_spacy().tokenizer


def my_overlap(tokenizer, response: str, knowledge: str) -> float:
    def toks(text):
        return [t.text.lower() for t in tokenizer(text) if not t.is_stop and not t.is_punct]

    gold, pred = toks(knowledge.lower()), toks(response)
    same = sum((Counter(gold) & Counter(pred)).values())
    if not same:
        return 0.0
    p, r = same / len(pred), same / len(gold)
    return 2 * p * r / (p + r)


def my_bleu(response: str, knowledge: str) -> float:
    import sacrebleu

    return sacrebleu.corpus_bleu([response], [[knowledge.lower()]]).score / 100


def my_auc(scores, consistent) -> float:
    """Share of (consistent, inconsistent) pairs where the consistent one scores higher, ties half."""
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    pos, neg = s[y == 1], s[y == 0]
    wins = 0.0
    for chunk in np.array_split(pos, max(1, len(pos) // 500)):
        diff = chunk[:, None] - neg[None, :]
        wins += (diff > 0).sum() + 0.5 * (diff == 0).sum()
    return wins / (len(pos) * len(neg))


def my_balanced_accuracy(scores, consistent, t) -> float:
    pred = [s > t for s in scores]  # the released code's rule: a score <= t is inconsistent
    pos = [p for p, y in zip(pred, consistent) if y == 1]
    neg = [not p for p, y in zip(pred, consistent) if y == 0]
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2


def my_threshold(scores, consistent) -> float:
    best, best_t = -1.0, None
    for t in sorted(set(scores) | {0.0}):  # ascending: the first of equals is the lowest
        ba = my_balanced_accuracy(scores, consistent, t)
        if ba > best + 1e-15:
            best, best_t = ba, t
    return best_t


def my_precision_recall(scores, consistent, t) -> tuple[float, float]:
    tp = sum(s > t and y == 1 for s, y in zip(scores, consistent))
    fp = sum(s > t and y == 0 for s, y in zip(scores, consistent))
    fn = sum(s <= t and y == 1 for s, y in zip(scores, consistent))
    return tp / (tp + fp), tp / (tp + fn)


def read_tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", quoting=3, keep_default_na=False, dtype=str)


def my_scores(tokenizer, responses, knowledge) -> dict[str, list[float]]:
    return {
        "overlap": [my_overlap(tokenizer, r, k) for r, k in zip(responses, knowledge)],
        "bleu": [my_bleu(r, k) for r, k in zip(responses, knowledge)],
    }


# -- the must-show command ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def begin_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "D"
    code = main(
        [
            "meta-eval",
            "--baselines-only",
            "--no-bertscore",
            "--dataset",
            f"begin-dev={BEGIN / 'v1' / 'dev_05_24_21.tsv'}",
            "--dataset",
            f"begin-test={BEGIN / 'v1' / 'test_05_24_21.tsv'}",
            "--dataset",
            f"begin-wow-dev={BEGIN / 'wow' / 'begin_dev_wow.tsv'}",
            "--calibrate",
            "begin-dev:begin-test",
            "--bootstrap",
            str(DRAWS),
            "--out-dir",
            str(out),
        ]
    )
    assert code == 0
    return out, json.loads((out / "benchmark.json").read_text())


def test_begin_aucs_and_calibration_match_an_independent_computation(begin_run, tokenizer):
    _out, report = begin_run
    files = {
        "begin-dev": (BEGIN / "v1" / "dev_05_24_21.tsv", "evidence", "gold label", "entailment"),
        "begin-test": (BEGIN / "v1" / "test_05_24_21.tsv", "evidence", "gold label", "entailment"),
        "begin-wow-dev": (
            BEGIN / "wow" / "begin_dev_wow.tsv",
            "knowledge",
            "begin_label",
            "Fully attributable",
        ),
    }
    mine = {}
    for name, (path, know, lab, good) in files.items():
        df = read_tsv(path)
        y = (df[lab] == good).astype(int).tolist()
        sc = my_scores(tokenizer, df["response"].tolist(), df[know].tolist())
        mine[name] = (sc, y)
        d = report["datasets"][name]
        assert (d["n"], d["consistent"]) == (len(df), sum(y))
        for m in ("overlap", "bleu"):
            got = report["results"][name]["metrics"][m]
            assert got["roc_auc"] == pytest.approx(my_auc(sc[m], y), abs=1e-12), (name, m)
            assert got["low"] <= got["roc_auc"] <= got["high"] and got["draws"] == DRAWS
    # TRUE's counts for BEGIN v1 (its README): dev 282 of 836, test 2,762 of 6,474 consistent
    assert report["datasets"]["begin-dev"]["consistent"] == 282
    assert report["datasets"]["begin-test"]["consistent"] == 2762
    cal = report["calibration"]
    assert (cal["dev"], cal["test"]) == ("begin-dev", "begin-test")
    for m in ("overlap", "bleu"):
        (dev, ydev), (test, ytest) = (
            (mine["begin-dev"][0][m], mine["begin-dev"][1]),
            (mine["begin-test"][0][m], mine["begin-test"][1]),
        )
        t = my_threshold(dev, ydev)
        got = cal["metrics"][m]
        assert got["threshold"] == pytest.approx(t, abs=1e-12)
        assert got["dev"]["balanced_accuracy"] == pytest.approx(my_balanced_accuracy(dev, ydev, t), abs=1e-12)
        assert got["test"]["balanced_accuracy"] == pytest.approx(
            my_balanced_accuracy(test, ytest, t), abs=1e-12
        )
        p, r = my_precision_recall(test, ytest, t)
        assert (got["test"]["precision"], got["test"]["recall"]) == (pytest.approx(p), pytest.approx(r))


def test_begin_outputs(begin_run):
    out, report = begin_run
    names = {p.name for p in out.iterdir()}
    assert {"benchmark.json", "benchmark.md", "benchmark.tex", "leaderboard.csv"} <= names
    for ds in ("begin-dev", "begin-test", "begin-wow-dev"):
        assert {f"roc_{ds}.png", f"scores_{ds}.png"} <= names
        assert (out / f"roc_{ds}.png").read_bytes()[:4] == b"\x89PNG"
    with open(out / "leaderboard.csv", newline="") as f:
        board = list(csv.DictReader(f))
    assert [(r["dataset"], r["metric"]) for r in board] == [
        (d, m) for d in ("begin-dev", "begin-test", "begin-wow-dev") for m in ("overlap", "bleu")
    ]
    test_overlap = next(r for r in board if r["dataset"] == "begin-test" and r["metric"] == "overlap")
    assert (
        float(test_overlap["balanced_accuracy"])
        == report["calibration"]["metrics"]["overlap"]["test"]["balanced_accuracy"]
    )
    md, tex = (out / "benchmark.md").read_text(), (out / "benchmark.tex").read_text()
    r = report["results"]["begin-test"]["metrics"]["overlap"]
    cell = f"{r['roc_auc']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
    assert cell in md and cell in tex
    # each baseline against the best one (Overlap here): BLEU has a p-value, Overlap none
    assert report["results"]["begin-dev"]["best_baseline"] == "overlap"
    assert report["results"]["begin-dev"]["metrics"]["bleu"]["p_vs_best_baseline"] is not None
    assert (
        report["results"]["begin-dev"]["metrics"]["overlap"]["p_vs_q2"] is None
    )  # no Q² with --baselines-only


def test_intervals_and_paired_p_value_from_the_documented_resamples(begin_run, tokenizer):
    """The resamples are documented (numpy's default_rng(seed).integers(0, n, (draws, n)), one
    matrix per dataset shared by the metrics); interval and p-value recomputed from them here."""
    _, report = begin_run
    df = read_tsv(BEGIN / "wow" / "begin_dev_wow.tsv")
    y = np.array((df["begin_label"] == "Fully attributable").astype(int))
    sc = {
        m: np.array(v)
        for m, v in my_scores(tokenizer, df["response"].tolist(), df["knowledge"].tolist()).items()
    }
    idx = np.random.default_rng(0).integers(0, len(y), size=(DRAWS, len(y)))
    boot = {m: np.array([my_auc(sc[m][i], y[i]) for i in idx]) for m in sc}
    got = report["results"]["begin-wow-dev"]["metrics"]
    for m in sc:
        assert (got[m]["low"], got[m]["high"]) == (
            pytest.approx(np.percentile(boot[m], 2.5)),
            pytest.approx(np.percentile(boot[m], 97.5)),
        )
    diff = boot["bleu"] - boot["overlap"]
    p = min(1.0, 2 * min(np.mean(diff <= 0), np.mean(diff >= 0)))
    assert got["bleu"]["p_vs_best_baseline"] == pytest.approx(p)


def test_the_papers_folder_is_a_dataset(tmp_path, tokenizer):
    out = tmp_path / "out"
    assert (
        main(
            [
                "meta-eval",
                "--baselines-only",
                "--no-bertscore",
                "--dataset",
                f"paper={ANNOTATED}",
                "--bootstrap",
                "10",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "benchmark.json").read_text())
    parts = [
        pd.read_csv(ANNOTATED / f"{s}.csv", keep_default_na=False).assign(y=int(s.endswith("_consistent")))
        for s in ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
    ]
    df = pd.concat(parts)
    sc = my_scores(tokenizer, df["response"].tolist(), df["knowledge"].tolist())
    assert report["datasets"]["paper"]["n"] == 600 and report["datasets"]["paper"]["consistent"] == 300
    for m in ("overlap", "bleu"):
        assert report["results"]["paper"]["metrics"][m]["roc_auc"] == pytest.approx(
            my_auc(sc[m], df["y"]), abs=1e-12
        )


# -- an unseen TRUE-format file and a mapped JSONL ----------------------------------------------
RESPONSES = [
    "the eiffel tower is in paris and was built in 1889.",
    "it is in rome.",
    "i love towers!",
    "paris has the eiffel tower.",
    "it was built in 1920 in london.",
    "gustave eiffel's company built it.",
    "no idea, sorry.",
    "the tower is made of wrought iron.",
    "it is made of wood.",
    "it was the tallest structure in the world until 1930.",
]
KNOWLEDGE = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, built in 1889 by Gustave Eiffel's "
    "company; it was the tallest man-made structure in the world until 1930."
)
LABELS = [1, 0, 0, 1, 0, 1, 0, 1, 0, 1]


def test_unseen_true_format_csv_matches_the_released_definitions(tmp_path, tokenizer):
    src = tmp_path / "mine.csv"
    pd.DataFrame(
        {
            "grounding": [KNOWLEDGE] * len(RESPONSES),
            "generated_text": RESPONSES,
            "label": LABELS,
            "other": range(len(RESPONSES)),
        }
    ).to_csv(src, index=False)
    # the same responses, relabelled, as a JSONL with its own column names and label values
    jsonl = tmp_path / "mapped.jsonl"
    with open(jsonl, "w") as f:
        for r, y in zip(RESPONSES, LABELS):
            f.write(json.dumps({"doc": KNOWLEDGE, "reply": r, "verdict": "ok" if y else "bad"}) + "\n")
    out = tmp_path / "out"
    assert (
        main(
            [
                "meta-eval",
                "--baselines-only",
                "--no-bertscore",
                "--dataset",
                f"mine={src}",
                "--dataset",
                f"mapped={jsonl}",
                "--response-col",
                "reply",
                "--knowledge-col",
                "doc",
                "--label-col",
                "verdict",
                "--consistent-label",
                "ok",
                "--calibrate",
                "mine:mapped",
                "--bootstrap",
                "30",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "benchmark.json").read_text())
    assert (
        report["datasets"]["mine"]["format"] == "true" and report["datasets"]["mapped"]["format"] == "custom"
    )
    sc = my_scores(tokenizer, RESPONSES, [KNOWLEDGE] * len(RESPONSES))
    for name in ("mine", "mapped"):
        for m in ("overlap", "bleu"):
            assert report["results"][name]["metrics"][m]["roc_auc"] == pytest.approx(
                my_auc(sc[m], LABELS), abs=1e-12
            )
    for m in ("overlap", "bleu"):
        t = my_threshold(sc[m], LABELS)
        assert report["calibration"]["metrics"][m]["threshold"] == pytest.approx(t)
        assert report["calibration"]["metrics"][m]["test"]["balanced_accuracy"] == pytest.approx(
            my_balanced_accuracy(sc[m], LABELS, t)
        )


def test_mapped_parquet_and_tsv(tmp_path, tokenizer):
    frame = pd.DataFrame(
        {
            "passage": [KNOWLEDGE] * 10,
            "answer": RESPONSES,
            "human": ["faithful" if y else "made up" for y in LABELS],
        }
    )
    frame.to_parquet(tmp_path / "mine.parquet")
    frame.to_csv(tmp_path / "mine.tsv", sep="\t", index=False)
    out = tmp_path / "out"
    assert (
        main(
            [
                "meta-eval",
                "--baselines-only",
                "--no-bertscore",
                "--dataset",
                f"pq={tmp_path / 'mine.parquet'}",
                "--dataset",
                f"tsv={tmp_path / 'mine.tsv'}",
                "--response-col",
                "answer",
                "--knowledge-col",
                "passage",
                "--label-col",
                "human",
                "--consistent-label",
                "faithful",
                "--bootstrap",
                "10",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "benchmark.json").read_text())
    want = my_auc(my_scores(tokenizer, RESPONSES, [KNOWLEDGE] * 10)["overlap"], LABELS)
    for name in ("pq", "tsv"):
        assert report["datasets"][name]["consistent"] == sum(LABELS)
        assert report["results"][name]["metrics"]["overlap"]["roc_auc"] == pytest.approx(want, abs=1e-12)


def test_supplied_scores_join_the_benchmark(tmp_path):
    src = tmp_path / "mine.csv"
    pd.DataFrame({"grounding": [KNOWLEDGE] * 10, "generated_text": RESPONSES, "label": LABELS}).to_csv(
        src, index=False
    )
    judge = [5, 1, 2, 4, 1, 3, 2, 5, 1, 4]  # on 1..5
    scores = tmp_path / "judge.csv"
    pd.DataFrame({"response": RESPONSES, "knowledge": [KNOWLEDGE] * 10, "rating": judge}).to_csv(
        scores, index=False
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "meta-eval",
                "--baselines-only",
                "--no-bertscore",
                "--dataset",
                f"mine={src}",
                "--scores",
                f"judge={scores}:rating:1..5",
                "--bootstrap",
                "20",
                "--out-dir",
                str(out),
            ]
        )
        == 0
    )
    got = json.loads((out / "benchmark.json").read_text())["results"]["mine"]["metrics"]["judge"]
    assert got["roc_auc"] == pytest.approx(my_auc(judge, LABELS))


# -- checks before any work ---------------------------------------------------------------------
def test_every_problem_of_every_dataset_is_one_sentence_and_nothing_is_written(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame(
        {
            "grounding": [KNOWLEDGE] * 3,
            "generated_text": ["fine.", " ", "also fine."],
            "label": [1, "maybe", 0],
        }
    ).to_csv(bad, index=False)
    odd = tmp_path / "odd.csv"
    pd.DataFrame({"text": ["a"], "y": [1]}).to_csv(odd, index=False)
    one = tmp_path / "one.csv"
    pd.DataFrame({"grounding": ["k", "k"], "generated_text": ["a", "b"], "label": [1, 1]}).to_csv(
        one, index=False
    )
    out = tmp_path / "out"
    code = main(
        [
            "meta-eval",
            "--baselines-only",
            "--dataset",
            f"bad={bad}",
            "--dataset",
            f"odd={odd}",
            "--dataset",
            f"one={one}",
            "--dataset",
            f"gone={tmp_path / 'missing.tsv'}",
            "--out-dir",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "column 'generated_text' is empty or not text at row 2" in err
    assert "column 'label' holds 'maybe'" in err and "at row 2" in err
    assert "match no known format" in err and "--response-col" in err
    assert "every one of its 2 responses is consistent" in err
    assert "missing.tsv): no such file." in err
    assert len([line for line in err.splitlines() if line.strip()]) == 5


@pytest.mark.parametrize(
    "args, message",
    [
        (["--calibrate", "a:nope"], "'nope' is not a --dataset name"),
        (["--calibrate", "a"], "expected DEV:TEST"),
        (["--dataset", "a=x.csv"], "the name 'a' is given twice"),
    ],
)
def test_bad_benchmark_arguments(tmp_path, capsys, args, message):
    src = tmp_path / "a.csv"
    pd.DataFrame({"grounding": ["k", "k"], "generated_text": ["a", "b"], "label": [1, 0]}).to_csv(
        src, index=False
    )
    assert (
        main(
            [
                "meta-eval",
                "--baselines-only",
                "--dataset",
                f"a={src}",
                *args,
                "--out-dir",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err


def test_out_dir_inside_an_input_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "wow"
    folder.mkdir()
    for split, _y in (
        ("dodeca_inconsistent", 0),
        ("dodeca_consistent", 1),
        ("memnet_inconsistent", 0),
        ("memnet_consistent", 1),
    ):
        pd.DataFrame({"response": [f"{split} a", f"{split} b"], "knowledge": ["k", "k"]}).to_csv(
            folder / f"{split}.csv", index=False
        )
    code = main(
        ["meta-eval", "--baselines-only", "--dataset", f"wow={folder}", "--out-dir", str(folder / "out")]
    )
    assert code == 2 and "lies inside the input" in capsys.readouterr().err and not (folder / "out").exists()


# -- the calibration rule on hand-made cases ----------------------------------------------------
def test_best_threshold_by_hand():
    # dev: consistent scores 0.3 and 0.8, inconsistent 0.1 and 0.3; a score <= T is inconsistent.
    # Candidates 0 (TPR 1, TNR 0: BA 0.5), 0.1 (TPR 1, TNR 1/2: 0.75), 0.3 (TPR 1/2, TNR 1: 0.75),
    # 0.8 (TPR 0, TNR 1: 0.5): the lowest of the tie, 0.1.
    assert best_threshold([0.3, 0.8, 0.1, 0.3], [1, 1, 0, 0]) == (0.1, 0.75)
    r = decision_report([0.3, 0.8, 0.1, 0.3], [1, 1, 0, 0], 0.1)
    assert (r["tp"], r["fp"], r["tn"], r["fn"]) == (2, 1, 1, 0)
    assert (r["precision"], r["recall"], r["balanced_accuracy"]) == (2 / 3, 1.0, 0.75)
