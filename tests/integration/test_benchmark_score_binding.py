"""`q2 meta-eval --dataset ... --scores`: a perfect judge gets ROC AUC 1.0 whatever the order of the
--dataset arguments and of its file's rows; a file that cannot say which row it scores, and a name
given twice, are one sentence (exit 2) with nothing written. Expected values by hand: a judge
whose score is the label separates the classes perfectly (AUC 1.0)."""

import csv
import json

import pytest

from q2_metric.cli import main

pytestmark = pytest.mark.slow
K = "The Eiffel Tower, in Paris, was finished in 1889."
A = [
    ("it was finished in 1889.", 1),
    ("it was finished in 1925.", 0),
    ("it is in paris.", 1),
    ("it is in lyon.", 0),
]
B = [("it is in lyon.", 0), ("the tower is in paris.", 1), ("it was built in rome.", 0)]


def write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture()
def files(tmp_path):
    a = write(tmp_path / "a.csv", ["grounding", "generated_text", "label"], [(K, r, y) for r, y in A])
    b = write(tmp_path / "b.csv", ["grounding", "generated_text", "label"], [(K, r, y) for r, y in B])
    return tmp_path, a, b


def template(tmp_path, datasets):
    assert (
        main(
            [
                "meta-eval",
                "--baselines-only",
                "--no-bertscore",
                *datasets,
                "--write-template",
                str(tmp_path / "tmpl"),
            ]
        )
        == 0
    )
    with open(tmp_path / "tmpl" / "meta_eval_template.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def run(tmp_path, datasets, scores, out="out"):
    args = [
        "meta-eval",
        "--baselines-only",
        "--no-bertscore",
        *datasets,
        "--bootstrap",
        "5",
        "--out-dir",
        str(tmp_path / out),
    ]
    for s in scores:
        args += ["--scores", s]
    return main(args)


@pytest.mark.parametrize("columns", [["id"], ["response"], ["id", "response", "knowledge"]])
def test_a_perfect_judge_gets_auc_1_in_any_order(files, columns):
    tmp_path, a, b = files
    label = dict(A + B)
    rows = template(tmp_path, ["--dataset", f"a={a}", "--dataset", f"b={b}"])
    assert [r["id"] for r in rows] == ["a:1", "a:2", "a:3", "a:4", "b:2", "b:3"]
    judge = write(
        tmp_path / "judge.csv",
        [*columns, "score"],
        [[r[c] for c in columns] + [label[r["response"]]] for r in reversed(rows)],
    )
    # read with the datasets in the other order
    assert run(tmp_path, ["--dataset", f"b={b}", "--dataset", f"a={a}"], [f"judge={judge}"]) == 0
    results = json.loads((tmp_path / "out" / "benchmark.json").read_text())["results"]
    assert results["a"]["metrics"]["judge"]["roc_auc"] == 1.0
    assert results["b"]["metrics"]["judge"]["roc_auc"] == 1.0


def test_unidentifiable_and_twice_named_files_are_refused(files, capsys):
    tmp_path, a, b = files
    datasets = ["--dataset", f"a={a}", "--dataset", f"b={b}"]
    bare = write(tmp_path / "bare.csv", ["score"], [[1]] * 6)
    assert run(tmp_path, datasets, [f"judge={bare}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"q2: {bare}: no column says which response each row scores (column 'score'); keep the "
        "template's 'id' column, or its 'response' and 'knowledge' columns, since rows are never "
        "matched by their order."
    ]
    good = write(tmp_path / "good.csv", ["response", "score"], [[r, y] for r, y in A + B[1:]])
    assert run(tmp_path, datasets, [f"judge={bare}", f"judge={good}"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["q2: --scores: the name 'judge' is given twice."]
    assert not (tmp_path / "out").exists()
    before = {p: p.read_bytes() for p in (a, b, bare, good)}
    assert run(tmp_path, datasets, [f"judge={good}"]) == 0
    assert {p: p.read_bytes() for p in before} == before
