"""`q2 calibrate`: the operating point chosen on a labelled set, written as data, read back by
`q2 score --operating-point` and signed.

Expected values come from an independent computation written here: the scores are made here (a
word-overlap share, which differs row by row), the threshold by trying every candidate, the figures
by counting, the expected calibration error by binning by hand, the data set's hash by hashing the
files read."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path

import pytest
from support.cli import refused
from support.data import ANNOTATED, DATA, SAMPLE

from q2_metric.cli import main
from q2_metric.meta.calibrate import expected_calibration_error, reliability_table, threshold_by_rule
from q2_metric.options.operating_point import read_operating_point

BEGIN_DEV = DATA / "begin" / "v1" / "dev_05_24_21.tsv"
SPLITS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
SIGNATURE = "q2:0.5.0|qg:some-qg|qa:some-qa|nli:some-nli"


# -- the independent computation ----------------------------------------------------------------
def overlap(response: str, knowledge: str) -> float:
    """The share of the response's words found in the knowledge (a score in [0, 1] per row)."""
    words = re.findall(r"\w+", response.lower())
    known = set(re.findall(r"\w+", knowledge.lower()))
    return sum(w in known for w in words) / len(words) if words else 0.0


def counts(scores, labels, t):
    tp = sum(s > t and y == 1 for s, y in zip(scores, labels))
    fp = sum(s > t and y == 0 for s, y in zip(scores, labels))
    fn = sum(s <= t and y == 1 for s, y in zip(scores, labels))
    tn = sum(s <= t and y == 0 for s, y in zip(scores, labels))
    return tp, fp, fn, tn


def my_figures(scores, labels, t):
    tp, fp, fn, tn = counts(scores, labels, t)
    recall, specificity = tp / (tp + fn), tn / (tn + fp)
    return {
        "balanced_accuracy": (recall + specificity) / 2,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": recall,
    }


def my_threshold(scores, labels, rule, target=None):
    candidates = sorted(set(scores) | {0.0})
    if rule == "balanced_accuracy":
        best = max(my_figures(scores, labels, t)["balanced_accuracy"] for t in candidates)
        return min(t for t in candidates if my_figures(scores, labels, t)["balanced_accuracy"] == best)
    fits = [t for t in candidates if (my_figures(scores, labels, t)[rule] or 0) >= target]
    return min(fits) if rule == "precision" else max(fits)


def my_ece(scores, labels, bins=10):
    groups: dict[int, list] = {}
    for s, y in zip(scores, labels):
        groups.setdefault(min(int(s * bins), bins - 1), []).append((s, y))
    return sum(
        len(g) / len(scores) * abs(sum(s for s, _ in g) / len(g) - sum(y for _, y in g) / len(g))
        for g in groups.values()
    )


def write_scores(path: Path, pairs) -> Path:
    """A `q2 score` output's shape: the template's response and knowledge, and a q2 column."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge", "q2"])
        for r, k in dict.fromkeys(pairs):
            w.writerow([r, k, overlap(r, k)])
    return path


def write_summary(path: Path) -> Path:
    path.write_text(json.dumps({"q2": 0.5, "signature": SIGNATURE}))
    return path


# -- the rule and the reliability figures, by hand ------------------------------------------------
S, Y = [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]


def test_rules_on_a_small_case_counted_by_hand():
    # consistent iff score > t. t=0.1: 0.35, 0.8 pass (recall 1), 0.1 fails, 0.4 passes (spec. 1/2): BA 0.75,
    # the best (t=0.35: 1/2 and 1 -> 0.75 too, but 0.1 is lower); precision 1 first at t=0.4 (only 0.8
    # passes); recall >= 0.5 last at t=0.4 (0.8 of 0.35, 0.8 passes), recall 1 last at t=0.1
    assert threshold_by_rule(S, Y, "balanced_accuracy") == 0.1
    assert threshold_by_rule(S, Y, "precision", 1.0) == 0.4
    assert threshold_by_rule(S, Y, "precision", 0.6) == 0.1  # t=0.1: 2 of 3 passed are consistent
    assert threshold_by_rule(S, Y, "recall", 0.5) == 0.4
    assert threshold_by_rule(S, Y, "recall", 1.0) == 0.1


def test_an_unreachable_target_is_one_sentence():
    from q2_metric.errors import Q2InputError

    # t=0: both pass, precision 1/2; t=0.1: 0.9 (inconsistent) passes, 0; t=0.9: none passes
    with pytest.raises(Q2InputError, match=r"precision of at least 0.8 .* highest reachable is 0.5\.$"):
        threshold_by_rule([0.9, 0.1], [0, 1], "precision", 0.8)


def test_ece_and_reliability_table_by_hand():
    # 2 bins: [0, .5) holds 0.1, 0.4, 0.35 (mean 0.85/3, 1 of 3 consistent: gap 0.05); [.5, 1] holds 0.8
    # (1 of 1: gap 0.2) -> 3/4 * 0.05 + 1/4 * 0.2 = 0.0875
    assert expected_calibration_error(S, Y, 2) == pytest.approx(0.0875)
    # 10 bins: one score each in bins 1, 3, 4, 8: gaps 0.1, 0.65, 0.4, 0.2 -> mean 0.3375
    assert expected_calibration_error(S, Y, 10) == pytest.approx(0.3375)
    table = reliability_table(S, Y, 2)
    assert [(b["low"], b["high"], b["n"]) for b in table] == [(0.0, 0.5, 3), (0.5, 1.0, 1)]
    assert table[0]["mean_score"] == pytest.approx(0.85 / 3) and table[0][
        "consistent_share"
    ] == pytest.approx(1 / 3)
    assert reliability_table([1.0], [1], 10)[-1]["n"] == 1  # a score of 1 is in the last bin
    assert reliability_table(S, Y, 10)[0] == {
        "low": 0.0,
        "high": 0.1,
        "n": 0,
        "mean_score": None,
        "consistent_share": None,
    }


# -- q2 calibrate on the annotated WoW set and on BEGIN --------------------------------------------
def run_calibrate(tmp_path, dataset, pairs, *extra, name="op.json"):
    scores = write_scores(tmp_path / "scores.csv", pairs)
    summary = write_summary(tmp_path / "summary.json")
    out = tmp_path / name
    argv = ["calibrate", "--dataset", dataset, "--scores", str(scores), "--summary", str(summary)]
    assert main([*argv, "-o", str(out), "--bootstrap", "200", *extra]) == 0
    return json.loads(out.read_text()), out


def check_record(record, scores, labels, rule, target=None):
    t = my_threshold(scores, labels, rule, target)
    assert record["threshold"] == pytest.approx(t)
    mine = my_figures(scores, labels, t)
    for name, value in mine.items():
        fig = record["figures"][name]
        assert fig["value"] == pytest.approx(value)
        assert fig["low"] <= fig["value"] <= fig["high"]
    assert record["calibration"]["ece"] == pytest.approx(my_ece(scores, labels))
    assert sum(b["n"] for b in record["calibration"]["table"]) == len(scores)
    assert record["scores"]["signature"] == SIGNATURE
    assert record["dataset"]["responses"] == len(scores) and record["dataset"]["consistent"] == sum(labels)


def test_calibrate_on_the_annotated_wow_set(tmp_path, capsys):
    rows = []
    for split in SPLITS:
        with open(ANNOTATED / f"{split}.csv", newline="", encoding="utf-8") as f:
            rows += [
                (r["response"], r["knowledge"], int(split.endswith("_consistent"))) for r in csv.DictReader(f)
            ]
    record, out = run_calibrate(tmp_path, f"wow={ANNOTATED}", [(r, k) for r, k, _ in rows])
    printed = capsys.readouterr().out
    scores, labels = [overlap(r, k) for r, k, _ in rows], [y for *_, y in rows]
    check_record(record, scores, labels, "balanced_accuracy")
    digest = hashlib.sha256(b"".join((ANNOTATED / f"{s}.csv").read_bytes() for s in SPLITS)).hexdigest()
    assert record["dataset"] == {
        "name": "wow",
        "path": str(ANNOTATED),
        "format": "q2-wow",
        "sha256": digest,
        "responses": 600,
        "consistent": 300,
    }
    assert record["rule"] == {"name": "balanced_accuracy"}
    assert f"Threshold {record['threshold']:g}" in printed and "Expected calibration error" in printed
    assert "Reliability table" in printed and SIGNATURE in printed
    # seeded: the same run again gives the same intervals
    again, _ = run_calibrate(tmp_path, f"wow={ANNOTATED}", [(r, k) for r, k, _ in rows], name="op2.json")
    assert again["figures"] == record["figures"]
    op = read_operating_point(out)
    assert op.threshold == record["threshold"] and op.digest == hashlib.sha256(out.read_bytes()).hexdigest()


def test_calibrate_on_begin_to_a_target_recall(tmp_path):
    with open(BEGIN_DEV, newline="", encoding="utf-8") as f:
        rows = [
            (r["response"], r["evidence"], int(r["gold label"].strip() == "entailment"))
            for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        ]
    record, _ = run_calibrate(
        tmp_path, f"begin={BEGIN_DEV}", [(r, k) for r, k, _ in rows], "--rule", "recall", "--target", "0.9"
    )
    scores, labels = [overlap(r, k) for r, k, _ in rows], [y for *_, y in rows]
    assert sum(labels) == 282  # TRUE's count of BEGIN v1 dev (its README)
    check_record(record, scores, labels, "recall", 0.9)
    assert record["figures"]["recall"]["value"] >= 0.9
    assert record["rule"] == {"name": "recall", "target": 0.9}
    assert record["dataset"]["sha256"] == hashlib.sha256(BEGIN_DEV.read_bytes()).hexdigest()
    assert record["dataset"]["format"] == "begin-v1"


def test_calibrate_refusals(tmp_path, capsys):
    data = tmp_path / "set.csv"
    data.write_text("response,knowledge,label\nA b.,A b.,1\nC d.,E f.,0\n")
    scores = write_scores(tmp_path / "s.csv", [("A b.", "A b."), ("C d.", "E f.")])
    summary = write_summary(tmp_path / "summary.json")
    base = ["calibrate", "--dataset", f"d={data}", "--scores", str(scores), "--summary", str(summary)]
    refused(capsys, [*base, "-o", str(tmp_path / "op.json"), "--rule", "precision"], "--target")
    refused(capsys, [*base, "-o", str(tmp_path / "op.json"), "--target", "0.5"], "--target")
    refused(capsys, [*base, "-o", str(scores)], "-o/--output")  # never over an input
    (tmp_path / "bad.json").write_text("{}")
    refused(capsys, [*base[:-1], str(tmp_path / "bad.json"), "-o", str(tmp_path / "op.json")], "'signature'")
    assert not (tmp_path / "op.json").exists()


# -- the file read back by q2 score, and signed ----------------------------------------------------
def test_score_reads_the_operating_point_and_signs_it(tmp_path, tiny_env, capsys):
    data = tmp_path / "set.csv"
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        sample = list(csv.DictReader(f))[:4]
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge", "label"])
        for i, r in enumerate(sample):
            w.writerow([r["response"], r["knowledge"], i % 2])
    record, op_file = run_calibrate(tmp_path, f"d={data}", [(r["response"], r["knowledge"]) for r in sample])
    capsys.readouterr()
    digest = hashlib.sha256(op_file.read_bytes()).hexdigest()
    out, summary = tmp_path / "out.csv", tmp_path / "run.json"
    argv = ["score", str(data), "-o", str(out), "--summary", str(summary), "--tiny", "--no-cache"]
    assert main([*argv, "--operating-point", str(op_file)]) == 0
    printed = capsys.readouterr().out
    written = json.loads(summary.read_text())
    t = record["threshold"]
    assert written["threshold"] == t and written["operating_point"] == {
        "threshold": t,
        "rule": "balanced_accuracy",
        "dataset": "d",
        "sha256": digest,
        "signature": f"ba@{digest[:12]}",
    }
    fields = dict(part.split(":", 1) for part in written["signature"].split("|"))
    assert fields["thr"] == f"{t:g}" and fields["op"] == f"ba@{digest[:12]}"
    assert f"|thr:{t:g}|op:ba@{digest[:12]}|" in written["signature_short"]
    assert f"Operating point: balanced_accuracy on d ({op_file}, op:ba@{digest[:12]})" in printed
    with open(out, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            assert row["decision"] == ("consistent" if float(row["q2"]) > t else "inconsistent")


def test_score_refuses_a_bad_operating_point_before_any_model(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text("response,knowledge\nA b.,A b.\n")
    good = {
        "format": "q2-operating-point",
        "version": 1,
        "threshold": 1.5,
    }
    op = tmp_path / "op.json"
    op.write_text(json.dumps(good))
    argv = [
        "score",
        str(data),
        "-o",
        str(tmp_path / "o.csv"),
        "--no-cache",
        "--qg-model",
        str(tmp_path / "none"),
    ]
    refused(capsys, [*argv, "--operating-point", str(op)], "'threshold'", "[0, 1]")
    refused(capsys, [*argv, "--operating-point", str(op), "--threshold", "0.5"], "--operating-point")
    refused(
        capsys, [*argv, "--operating-point", str(tmp_path / "missing.json")], "no such operating-point file"
    )
    assert not (tmp_path / "o.csv").exists()
