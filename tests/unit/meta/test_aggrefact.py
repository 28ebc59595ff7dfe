"""LLM-AggreFact's protocol on three datasets: a threshold tuned per dataset on its dev rows (its test
rows where it has none), balanced accuracy on test, the unweighted mean. Every figure is counted by
hand below (supported iff score > threshold; the threshold is the lowest of 0 and the tuning scores
with the best balanced accuracy)."""

import csv
import json

import pytest

from q2_metric.cli import main
from q2_metric.meta.aggrefact import per_dataset
from q2_metric.meta.datasets import DatasetError, load_datasets

# (dataset, split, score, label)
ROWS = [
    # A, dev: 0.1/0, 0.3/0, 0.6/1, 0.8/1 -> t = 0.3 separates them (BA 1; t = 0.1 gives 0.75)
    ("A", "dev", 0.1, 0),
    ("A", "dev", 0.3, 0),
    ("A", "dev", 0.6, 1),
    ("A", "dev", 0.8, 1),
    # A, test at 0.3: supported 0.4, 0.9 > 0.3 (2/2); unsupported 0.2 <= 0.3 yes, 0.35 no (1/2) -> 0.75
    ("A", "test", 0.2, 0),
    ("A", "test", 0.4, 1),
    ("A", "test", 0.35, 0),
    ("A", "test", 0.9, 1),
    # B, dev: 0.5/1, 0.4/0 -> t = 0.4 (BA 1; t = 0 gives 0.5)
    ("B", "dev", 0.5, 1),
    ("B", "dev", 0.4, 0),
    # B, test at 0.4: supported 0.7 (1/1); unsupported 0.45 no, 0.3 yes, 0.2 yes (2/3) -> 5/6
    ("B", "test", 0.45, 0),
    ("B", "test", 0.7, 1),
    ("B", "test", 0.3, 0),
    ("B", "test", 0.2, 0),
    # C, no dev rows: tuned on test. t=0: (1 + 0)/2; t=0.1: (1 + 1/2)/2 = 0.75; t=0.2: (1/2 + 1/2)/2;
    # t=0.6: (1/2 + 1)/2 = 0.75; t=0.9: (0 + 1)/2 -> the lowest best, 0.1, BA 0.75
    ("C", "test", 0.2, 1),
    ("C", "test", 0.6, 0),
    ("C", "test", 0.9, 1),
    ("C", "test", 0.1, 0),
]
# mean = (3/4 + 5/6 + 3/4) / 3 = 7/9
EXPECTED = {"A": (0.3, "dev", 0.75), "B": (0.4, "dev", 5 / 6), "C": (0.1, "test", 0.75)}


def test_per_dataset_thresholds_and_mean():
    out = per_dataset([r[2] for r in ROWS], [r[3] for r in ROWS], [r[0] for r in ROWS], [r[1] for r in ROWS])
    for name, (threshold, tuned_on, ba) in EXPECTED.items():
        d = out["datasets"][name]
        assert d["threshold"] == threshold and d["tuned_on"] == tuned_on
        assert d["balanced_accuracy"] == pytest.approx(ba)
    assert out["mean_balanced_accuracy"] == pytest.approx(7 / 9)


def write_set(path, rows=ROWS, split=True):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "doc", "claim", "label"] + (["split"] if split else []))
        for i, (name, part, _score, label) in enumerate(rows):
            w.writerow([name, f"Document {i} of {name}.", f"Claim {i}.", label] + ([part] if split else []))
    return path


def test_layout_recognised_and_bad_split_refused(tmp_path):
    (ds,) = load_datasets([f"agg={write_set(tmp_path / 'agg.csv')}"])
    assert ds.format == "llm-aggrefact" and ds.groups[:5] == ["A"] * 5 and ds.splits[:4] == ["dev"] * 4
    bad = list(ROWS)
    bad[0] = ("A", "train", 0.1, 0)
    with pytest.raises(
        DatasetError, match="column 'split' holds a value other than 'dev' or 'test' at row 1"
    ):
        load_datasets([f"agg={write_set(tmp_path / 'bad.csv', bad)}"])


def test_cli_protocol_with_a_score_column(tmp_path, capsys):
    """`q2 meta-eval --dataset agg=FILE --scores judge=...`: the per-dataset thresholds are shown."""
    data = write_set(tmp_path / "agg.csv")
    judge = tmp_path / "judge.csv"
    with open(judge, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "score"])
        for i, r in enumerate(ROWS, 1):
            w.writerow([f"agg:{i}", r[2]])
    out = tmp_path / "bench"
    code = main(
        ["meta-eval", "--baselines-only", "--no-bertscore", "--dataset", f"agg={data}",
         "--scores", f"judge={judge}", "--bootstrap", "20", "--out-dir", str(out)]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "benchmark.json").read_text())
    judged = report["aggrefact"]["agg"]["judge"]
    for name, (threshold, tuned_on, ba) in EXPECTED.items():
        d = judged["datasets"][name]
        assert (d["threshold"], d["tuned_on"]) == (threshold, tuned_on)
        assert d["balanced_accuracy"] == pytest.approx(ba)
        assert f"| judge | {name} | {tuned_on} | {threshold:.4g} | {ba:.3f} |" in printed
    assert judged["mean_balanced_accuracy"] == pytest.approx(7 / 9)
    assert "| judge | **mean** | | | 0.778 |" in printed
    # the published figure of the benchmark is printed (Q² was not scored: n/a beside it)
    assert "| agg | mean balanced accuracy | 0.774 | Bespoke-MiniCheck-7B (" in printed


def test_a_source_dataset_of_one_class_or_one_row_has_no_balanced_accuracy():
    """Before, a source dataset of one class (D) or one row (E) got balanced accuracy 1.000 at
    threshold 0, and it entered the mean printed beside MiniCheck's."""
    rows = ROWS + [("D", "test", 0.2, 1), ("D", "test", 0.9, 1), ("E", "test", 0.4, 0)]
    rows += [("F", "dev", 0.3, 1), ("F", "dev", 0.5, 1), ("F", "test", 0.1, 0), ("F", "test", 0.8, 1)]
    out = per_dataset([r[2] for r in rows], [r[3] for r in rows], [r[0] for r in rows], [r[1] for r in rows])
    for name, why in (
        ("D", "its 2 test row(s) are all supported"),
        ("E", "its 1 test row(s) are all unsupported"),
        ("F", "its 2 dev row(s) are all supported"),  # its threshold would be tuned on one class
    ):
        d = out["datasets"][name]
        assert (d["balanced_accuracy"], d["threshold"], d["undefined"]) == (None, None, why)
    assert out["left_out"] == ["D", "E", "F"]
    assert out["mean_balanced_accuracy"] == pytest.approx(7 / 9)  # A, B and C only, as above


def test_cli_says_which_source_datasets_are_left_out_of_the_mean(tmp_path, capsys):
    rows = ROWS + [("D", "test", 0.2, 1), ("D", "test", 0.9, 1)]
    data = write_set(tmp_path / "agg.csv", rows)
    judge = tmp_path / "judge.csv"
    judge.write_text("id,score\n" + "".join(f"agg:{i},{r[2]}\n" for i, r in enumerate(rows, 1)))
    out = tmp_path / "bench"
    code = main(
        ["meta-eval", "--baselines-only", "--no-bertscore", "--dataset", f"agg={data}",
         "--scores", f"judge={judge}", "--bootstrap", "20", "--out-dir", str(out)]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "| judge | D | test | n/a | not defined |" in printed
    assert "| judge | **mean** of 3 of 4 | | | 0.778 |" in printed
    assert "- D: its 2 test row(s) are all supported, so no balanced accuracy is defined." in printed
    judged = json.loads((out / "benchmark.json").read_text())["aggrefact"]["agg"]["judge"]
    assert judged["left_out"] == ["D"] and judged["datasets"]["D"]["balanced_accuracy"] is None


# The same test rows at the fixed threshold 0.5 (supported iff score > 0.5), counted by hand:
# A: supported 0.9 yes, 0.4 no (1/2); unsupported 0.2, 0.35 yes (2/2) -> 0.75
# B: supported 0.7 yes (1/1); unsupported 0.45, 0.3, 0.2 yes (3/3) -> 1.0
# C: supported 0.2 no, 0.9 yes (1/2); unsupported 0.6 no, 0.1 yes (1/2) -> 0.5; mean 0.75
FIXED = {"A": 0.75, "B": 1.0, "C": 0.5}


def test_balanced_accuracy_at_the_fixed_half_beside_the_tuned_one():
    out = per_dataset([r[2] for r in ROWS], [r[3] for r in ROWS], [r[0] for r in ROWS], [r[1] for r in ROWS])
    for name, ba in FIXED.items():
        d = out["datasets"][name]
        assert d["fixed_threshold"] == 0.5 and d["fixed_balanced_accuracy"] == pytest.approx(ba)
        assert d["balanced_accuracy"] == pytest.approx(EXPECTED[name][2])  # the tuned one, untouched
    assert out["mean_fixed_balanced_accuracy"] == pytest.approx(0.75)
    assert out["mean_balanced_accuracy"] == pytest.approx(7 / 9)


def test_cli_report_labels_both_in_their_own_columns(tmp_path, capsys):
    data = write_set(tmp_path / "agg.csv")
    judge = tmp_path / "judge.csv"
    with open(judge, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "score"])
        for i, r in enumerate(ROWS, 1):
            w.writerow([f"agg:{i}", r[2]])
    out = tmp_path / "bench"
    code = main(
        ["meta-eval", "--baselines-only", "--no-bertscore", "--dataset", f"agg={data}",
         "--scores", f"judge={judge}", "--bootstrap", "20", "--out-dir", str(out)]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.startswith("| metric | dataset | tuned on"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert "balanced accuracy, tuned threshold" in cells and "balanced accuracy, fixed 0.5" in cells
    for name, ba in FIXED.items():
        threshold, tuned_on, tuned = EXPECTED[name]
        assert f"| judge | {name} | {tuned_on} | {threshold:.4g} | {tuned:.3f} | {ba:.3f} |" in printed
    assert "| judge | **mean** | | | 0.778 | 0.750 |" in printed
    judged = json.loads((out / "benchmark.json").read_text())["aggrefact"]["agg"]["judge"]
    assert judged["mean_fixed_balanced_accuracy"] == pytest.approx(0.75)
    assert judged["datasets"]["B"]["fixed_balanced_accuracy"] == pytest.approx(1.0)
