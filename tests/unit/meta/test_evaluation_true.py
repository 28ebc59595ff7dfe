"""`q2 meta-eval`'s TRUE protocol, user-supplied metrics (--scores), the template, the plots and the
LaTeX report.

Expected values come from hand computation (small examples below) or from an independent source:
scikit-learn's `roc_auc_score`, and, for a metric equal to the human label, the definitions (a
perfect metric has ROC AUC 1, accuracy 1, a system-level Spearman of 1 in every repetition).
"""

import csv
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from support.data import ANNOTATED

from q2_metric.meta.evaluation import SPLITS, AnnotatedSet
from q2_metric.meta.report import _tex
from q2_metric.meta.scores import ScoreFileError, ScoreSpec, parse_score_spec, read_scores
from q2_metric.meta.stats import resample_indices, roc_auc, roc_auc_interval, roc_auc_ranks

CLI = [sys.executable, "-m", "q2_metric.cli", "meta-eval"]


# -- statistics --------------------------------------------------------------------------------
def test_rank_auc_hand_computed():
    # consistent {0.9, 0.5} vs inconsistent {0.5, 0.1}: 0.9 beats both, 0.5 ties 0.5 (1/2) and
    # beats 0.1 -> 3.5 / 4
    assert roc_auc_ranks([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0])[0] == pytest.approx(0.875)
    # one row per resample; a row with one class only has no AUC
    rows = roc_auc_ranks(np.array([[0.1, 0.9, 0.4], [0.3, 0.2, 0.1]]), np.array([[0, 1, 1], [1, 1, 1]]))
    assert rows[0] == pytest.approx(1.0) and np.isnan(rows[1])


def test_rank_auc_matches_sklearn_and_pairwise():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.normal(size=300) + 0.7 * y, 1)  # rounded: many ties
    assert roc_auc_ranks(s, y)[0] == pytest.approx(roc_auc_score(y, s))
    assert roc_auc(list(s), list(y)) == pytest.approx(roc_auc_score(y, s))


def test_auc_interval_is_the_percentile_bootstrap():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 80)
    s = rng.normal(size=80) + y
    draws = resample_indices(80, 200, seed=4)
    assert draws.shape == (200, 80) and (draws == resample_indices(80, 200, seed=4)).all()
    res = roc_auc_interval(s, y, draws)
    # the same resamples scored one by one with scikit-learn
    boot = [roc_auc_score(y[i], s[i]) for i in draws if 0 < y[i].sum() < len(i)]
    assert res.draws == len(boot)
    assert res.low == pytest.approx(np.percentile(boot, 2.5)) and res.high == pytest.approx(
        np.percentile(boot, 97.5)
    )
    assert res.auc == pytest.approx(roc_auc_score(y, s)) and res.low < res.auc < res.high
    assert res.n == 80 and res.inconsistent == int((y == 0).sum())
    perfect = roc_auc_interval(y.astype(float), y, draws)
    assert (perfect.auc, perfect.low, perfect.high) == (1.0, 1.0, 1.0)


# -- --scores specs ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("judge=j.csv", ("judge", "j.csv", "score", False, 0.0, 1.0)),
        ("judge=out/j.jsonl:p_consistent", ("judge", "out/j.jsonl", "p_consistent", False, 0.0, 1.0)),
        ("err=e.parquet:p_error:lower", ("err", "e.parquet", "p_error", True, 0.0, 1.0)),
        ("llm=l.csv:rating:1..5", ("llm", "l.csv", "rating", False, 1.0, 5.0)),
        ("nll=n.csv:loss:lower:0..20", ("nll", "n.csv", "loss", True, 0.0, 20.0)),
        ("x=dir/a.csv:lower", ("x", "dir/a.csv", "score", True, 0.0, 1.0)),
    ],
)
def test_parse_score_spec(text, expected):
    spec = parse_score_spec(text)
    assert (spec.name, str(spec.path), spec.column, spec.lower, spec.low, spec.high) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("judge", "expected NAME=FILE[:COLUMN][:lower][:LO..HI]"),
        ("1bad=x.csv", "the name '1bad' must start with a letter"),
        ("q2=x.csv", "'q2' is a built-in metric"),
        ("coverage=x.csv", "'coverage' is a built-in metric or row"),
        ("x=a.csv:s:5..1", "the range 5..1 is empty"),
    ],
)
def test_bad_score_spec(text, message):
    with pytest.raises(
        ScoreFileError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parse_score_spec(text)


def test_oriented_scale():
    assert list(ScoreSpec("a", "f", lower=True).oriented(np.array([0.0, 0.25]))) == [1.0, 0.75]
    assert list(ScoreSpec("a", "f", low=1, high=5).oriented(np.array([1.0, 2.0, 5.0]))) == [0.0, 0.25, 1.0]


def test_latex_escape():
    assert _tex("my_metric 50% Q²") == r"my\_metric 50\% Q$^2$"


# -- bad score files ---------------------------------------------------------------------------
def write_csv(path, rows, fields=None):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields or list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture
def small_set(tmp_path):
    """Four splits of two responses and a cross annotation of two contexts: 6 distinct pairs."""
    d = tmp_path / "data"
    d.mkdir()
    for n, split in enumerate(SPLITS):
        write_csv(
            d / f"{split}.csv", [{"response": f"r{n}{i}", "knowledge": "k", "message": "m"} for i in range(2)]
        )
    write_csv(
        d / "cross_annotation.csv",
        [
            {
                "knowledge": "k",
                "message": "m",
                "dodeca_response": "r00",
                "memnet_response": "x1",
                "dodeca_label": 1,
                "memnet_label": 0,
            },
            {
                "knowledge": "k",
                "message": "m",
                "dodeca_response": "r01",
                "memnet_response": "r21",
                "dodeca_label": 1,
                "memnet_label": 1,
            },
        ],
    )
    return AnnotatedSet.from_dir(d)


def test_template_keys(small_set):
    keys, where, records = small_set.template()
    # the 8 split responses, then the cross annotation's one new response (x1): r00, r01 and r21
    # are split responses already
    assert keys == [(f"r{n}{i}", "k") for n in range(4) for i in range(2)] + [("x1", "k")]
    assert where[("x1", "k")].endswith("cross_annotation.csv row 1 (memnet)")
    assert [r["response"] for r in records] == [k[0] for k in keys]


def key_rows(keys, score=0.5):
    return [{"response": r, "knowledge": k, "score": score} for r, k in keys]


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda rows: rows.pop(3),
            "column 'score' has no score for 1 of the 9 annotated responses, the first 'r11' "
            "(.*dodeca_consistent.csv row 2)",
        ),
        (
            lambda rows: rows.append(dict(rows[2])),
            "rows 3 and 10 both score the response 'r10' with the same knowledge",
        ),
        (
            lambda rows: rows[4].update(score="high"),
            "column 'score' holds 'high', not a number, at row 5 .line 6.\\.",
        ),
        (lambda rows: rows[1].update(score=""), "column 'score' is empty at row 2 .line 3.\\."),
        (
            lambda rows: rows[0].update(score="1.5"),
            "column 'score' holds 1.5, outside \\[0, 1\\], at row 1 .line 2.; "
            "declare the metric's range with m=FILE:COLUMN:LO..HI",
        ),
        (lambda rows: rows[6].update(score="nan"), "column 'score' holds nan, outside \\[0, 1\\], at row 7"),
        (lambda rows: rows[6].update(score="-inf"), "column 'score' holds -inf, outside"),
    ],
)
def test_bad_key_files(tmp_path, small_set, edit, message):
    keys, where, _ = small_set.template()
    rows = key_rows(keys)
    edit(rows)
    path = write_csv(tmp_path / "m.csv", rows)
    with pytest.raises(ScoreFileError, match=f"^{re.escape(str(tmp_path / 'm.csv'))}: {message}"):
        read_scores(ScoreSpec("m", path), keys, where)


def test_key_file_formats_and_extra_rows(tmp_path, small_set):
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys, where, _ = small_set.template()
    rows = [dict(r, score=i / 10) for i, r in enumerate(key_rows(keys))]
    rows.insert(2, {"response": "not annotated", "knowledge": "k", "score": 0.3})  # ignored
    expected = [i / 10 for i in range(len(keys))]
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))
    assert list(read_scores(ScoreSpec("m", jsonl), keys, where)) == expected
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "m.parquet")
    assert list(read_scores(ScoreSpec("m", tmp_path / "m.parquet"), keys, where)) == expected
    rows[0]["score"] = None
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bad.parquet")
    with pytest.raises(ScoreFileError, match=r"bad.parquet: column 'score' is empty at row 1\.$"):
        read_scores(ScoreSpec("m", tmp_path / "bad.parquet"), keys, where)
    # a declared range accepts what the default one refuses
    write_csv(tmp_path / "r.csv", key_rows(keys, score=4))
    assert set(read_scores(ScoreSpec("m", tmp_path / "r.csv", low=1, high=5), keys, where)) == {4.0}


def test_bad_row_order_files(tmp_path, small_set):
    keys, where, _ = small_set.template()
    spec = ScoreSpec("m", tmp_path / "m.csv", column="p")
    write_csv(spec.path, [{"id": i, "p": 0.5} for i in range(1, len(keys) + 1)])
    assert list(read_scores(spec, keys, where)) == [0.5] * len(keys)
    write_csv(spec.path, [{"p": 0.5}] * (len(keys) - 1))
    with pytest.raises(ScoreFileError, match=r"m.csv: no column says which response each row scores"):
        read_scores(spec, keys, where)
    # rows bound by their id, not their place (issue 36): a file in another order reads the same
    write_csv(spec.path, [{"id": i, "p": i / 10} for i in (1, 2, 4, 3, 5, 6, 7, 8, 9)])
    assert list(read_scores(spec, keys, where)) == [i / 10 for i in range(1, 10)]
    write_csv(spec.path, [{"q": 0.5}] * len(keys))
    with pytest.raises(
        ScoreFileError, match=r"m.csv: column 'p' is missing .its columns: 'q'.; name the right one"
    ):
        read_scores(spec, keys, where)
    spec.path.write_text('p\n0.5\n"0.5\n')
    with pytest.raises(ScoreFileError, match=r"m.csv: line 3: "):
        read_scores(spec, keys, where)
    with pytest.raises(ScoreFileError, match=r"nothing.csv: no such file"):
        read_scores(ScoreSpec("m", tmp_path / "nothing.csv"), keys, where)


@pytest.mark.slow  # a subprocess
def test_cli_bad_score_file_exits_2_and_writes_nothing(tmp_path, small_set):
    keys, _, _ = small_set.template()
    rows = key_rows(keys)
    rows[5]["score"] = "0,7"
    path = write_csv(tmp_path / "m.csv", rows)
    data_dir = tmp_path / "data"
    res = subprocess.run(
        CLI
        + [
            "--annotated-dir",
            str(data_dir),
            "--baselines-only",
            "--no-bertscore",
            "--scores",
            f"good={path}",
            "--out-dir",
            str(tmp_path / "me"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 2
    assert (
        res.stderr.strip().splitlines()[-1]
        == f"q2: {path}: column 'score' holds '0,7', not a number, at row 6 (line 7)."
    )
    assert not (tmp_path / "me").exists()
    res = subprocess.run(
        CLI
        + [
            "--annotated-dir",
            str(data_dir),
            "--baselines-only",
            "--scores",
            f"a={path}",
            "--scores",
            f"a={path}",
            "--out-dir",
            str(tmp_path / "me"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 2 and res.stderr.strip().endswith("--scores: the name 'a' is given twice.")


# -- the annotated set, end to end -------------------------------------------------------------
def human_labels() -> dict[tuple[str, str], int]:
    """(response, knowledge) -> 1 if consistent, read straight from the annotated files."""
    out = {}
    for split in SPLITS:
        with open(ANNOTATED / f"{split}.csv", newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                out[(r["response"], r["knowledge"])] = int(split.endswith("_consistent"))
    with open(ANNOTATED / "cross_annotation.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            for system in ("dodeca", "memnet"):
                out[(r[f"{system}_response"], r["knowledge"])] = 1 - int(r[f"{system}_label"])
    return out


@pytest.fixture(scope="module")
def annotated_run(tmp_path_factory):
    """Template, then --baselines-only with the human label as a metric (JSONL, by key) and its
    reverse declared `lower` (Parquet, by the template's row order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = tmp_path_factory.mktemp("true")
    res = subprocess.run(
        CLI + ["--annotated-dir", str(ANNOTATED), "--write-template", str(tmp)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    with open(tmp / "meta_eval_template.csv", newline="", encoding="utf-8") as f:
        template = list(csv.DictReader(f))
    labels = human_labels()
    (tmp / "label.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "response": r["response"],
                    "knowledge": r["knowledge"],
                    "human": labels[(r["response"], r["knowledge"])],
                }
            )
            + "\n"
            for r in template
        )
    )
    pq.write_table(
        pa.table(
            {
                "id": [r["id"] for r in template],
                "inconsistent": [1 - labels[(r["response"], r["knowledge"])] for r in template],
            }
        ),
        tmp / "reverse.parquet",
    )
    res = subprocess.run(
        CLI
        + [
            "--annotated-dir",
            str(ANNOTATED),
            "--baselines-only",
            "--no-bertscore",
            "--repetitions",
            "200",
            "--auc-draws",
            "300",
            "--scores",
            f"label={tmp / 'label.jsonl'}:human",
            "--scores",
            f"reverse={tmp / 'reverse.parquet'}:inconsistent:lower",
            "--out-dir",
            str(tmp / "me"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    return tmp, template, labels, json.load(open(tmp / "me" / "meta_eval.json"))


@pytest.mark.slow  # a subprocess
def test_template_has_every_distinct_response(annotated_run):
    _, template, labels, _ = annotated_run
    assert len(template) == len(labels) == len({(r["response"], r["knowledge"]) for r in template})
    assert [r["id"] for r in template[:3]] == ["1", "2", "3"] and set(template[0]) == {
        "id",
        "response",
        "knowledge",
        "message",
    }


@pytest.mark.slow  # a subprocess
@pytest.mark.parametrize("metric", ["label", "reverse"])
def test_known_metric_through_every_table(annotated_run, metric):
    _, _, _, report = annotated_run
    for split in SPLITS:  # Table 2: each metric on its own scale
        consistent = split.endswith("_consistent")
        assert report["table2"][split][metric] == (
            float(consistent) if metric == "label" else float(not consistent)
        )
    t3 = report["table3"][metric]
    assert t3["accuracy"] == 1.0 and t3["roc_auc"] == 1.0
    assert t3["consistent"] == t3["inconsistent"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    t4 = report["table4"][metric]  # a perfect metric ranks the five simulated systems right every time
    assert (t4["mean"], t4["low"], t4["high"]) == pytest.approx((1.0, 1.0, 1.0))  # float sums in the Spearman
    assert (t4["no_correlation"], t4["repetitions"], t4["contexts"]) == (0, 200, 244)
    for name, n, inconsistent in (("split", 600, 300), ("cross", 1088, 460)):
        true = report["true"]["metrics"][metric][name]
        assert (
            true["roc_auc"],
            true["low"],
            true["high"],
            true["n"],
            true["inconsistent"],
            true["draws"],
        ) == (1.0, 1.0, 1.0, n, inconsistent, 300)
    assert report["metrics"][metric]["lower"] == (metric == "reverse")


@pytest.mark.slow  # a subprocess
def test_baselines_true_table_and_outputs(annotated_run):
    tmp, _, _, report = annotated_run
    assert report["true"]["draws"] == 300 and report["true"]["sets"]["cross"]["n"] == 1088
    for metric in ("overlap", "bleu"):
        for name in ("split", "cross"):
            t = report["true"]["metrics"][metric][name]
            assert 0.5 < t["low"] < t["roc_auc"] < t["high"] < 1.0
        # the TRUE table's split AUC (rank sums) is Table 3's (pairwise count)
        assert report["true"]["metrics"][metric]["split"]["roc_auc"] == pytest.approx(
            report["table3"][metric]["roc_auc"]
        )
    out = tmp / "me"
    plots = [
        "pr_curve.png",
        "roc_curve.png",
        "hist_overlap.png",
        "hist_bleu.png",
        "hist_label.png",
        "hist_reverse.png",
    ]
    assert sorted(report["plots"]) == sorted(plots)
    markdown = (out / "meta_eval.md").read_text()
    for name in plots:
        assert (out / name).read_bytes().startswith(b"\x89PNG")
        assert f"]({name})" in markdown
    assert (
        "## TRUE protocol" in markdown
        and "| label | 1.000 | [1.000, 1.000] | 1.000 | [1.000, 1.000] |" in markdown
    )
    latex = (out / "meta_eval.tex").read_text()
    assert latex.count(r"\begin{tabular}") == 4 and latex.count(r"\end{table}") == 4
    assert r"label & 1.000 [1.000, 1.000] & 1.000 [1.000, 1.000] \\" in latex


def test_plots_with_a_one_label_set():
    """A set whose responses are all consistent has no PR/ROC curve; the figure says so instead
    of failing (scikit-learn's roc_auc_score raises on one class)."""
    from q2_metric.meta import plots as meta_plots

    curves = {
        "m": {
            "a": (np.array([0.1, 0.5, 0.9]), np.array([1, 1, 1])),
            "b": (np.array([0.1, 0.5, 0.9]), np.array([0, 1, 1])),
        }
    }
    titles = {"a": "A", "b": "B"}
    for png in (
        meta_plots.pr_curves_png(curves, titles),
        meta_plots.roc_curves_png(curves, titles),
        meta_plots.histogram_png("m", curves["m"], titles),
    ):
        assert png.startswith(b"\x89PNG")
