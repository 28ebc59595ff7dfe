"""`--scores` files bind to their rows by identity (issue 36): never by position.

Expected values are by hand: a perfect judge scores each response by its label, so whatever the
file's order the scores read back must be the labels, in the template's order."""

import csv
import json
import re

import pytest

from q2_metric.meta.benchmark import distinct_pairs, row_ids, template_records
from q2_metric.meta.datasets import Dataset
from q2_metric.meta.scores import ScoreFileError, ScoreSpec, check_names, read_scores

K1, K2 = "The tower was finished in 1889.", "Lyon is in France."


def dataset(name: str, rows: list[tuple[str, str, int]]) -> Dataset:
    ds = Dataset(name, f"{name}.csv", "custom", "consistent iff 'label' is '1'")
    for i, (r, k, y) in enumerate(rows, 1):
        (
            ds.response.append(r),
            ds.knowledge.append(k),
            ds.consistent.append(y),
            ds.where.append(f"{name}.csv row {i}"),
        )
    return ds


A = dataset("a", [("built in 1889.", K1, 1), ("built in 1925.", K1, 0), ("it is in france.", K2, 1)])
# b shares "built in 1925." with a, and "same words." appears with two knowledges
B = dataset("b", [("same words.", K1, 1), ("built in 1925.", K1, 0), ("same words.", K2, 0)])
LABEL = {(r, k): y for ds in (A, B) for r, k, y in zip(ds.response, ds.knowledge, ds.consistent)}


def write(path, rows, columns):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns)
        w.writeheader()
        w.writerows(rows)
    return path


def test_template_ids_name_dataset_rows():
    assert [r["id"] for r in template_records([A, B])] == ["a:1", "a:2", "a:3", "b:1", "b:3"]
    # the other order gives other first rows for the shared pair, each id naming the same pair
    assert [r["id"] for r in template_records([B, A])] == ["b:1", "b:2", "b:3", "a:1", "a:3"]
    assert row_ids([A, B])["b:2"] == row_ids([A, B])["a:2"] == ("built in 1925.", K1)


@pytest.mark.parametrize("order", [[A, B], [B, A]])
@pytest.mark.parametrize("shuffle", [False, True])
def test_a_template_scored_for_one_order_reads_right_in_the_other(tmp_path, order, shuffle):
    rows = [dict(r, score=LABEL[(r["response"], r["knowledge"])]) for r in template_records([A, B])]
    if shuffle:
        rows = rows[::-1]
    ids_only = write(
        tmp_path / "ids.csv", [{"id": r["id"], "score": r["score"]} for r in rows], ["id", "score"]
    )
    full = write(tmp_path / "full.csv", rows, ["id", "response", "knowledge", "message", "score"])
    keys, where = distinct_pairs(order)
    for path in (ids_only, full):
        got = read_scores(ScoreSpec("judge", path), keys, where, row_ids(order))
        assert list(got) == [LABEL[k] for k in keys]


def test_response_only_file_resorted_binds_by_text_when_unambiguous(tmp_path):
    keys, where = distinct_pairs([A])
    rows = [{"response": r, "score": LABEL[(r, k)]} for r, k in reversed(keys)]
    got = read_scores(
        ScoreSpec("judge", write(tmp_path / "r.csv", rows, ["response", "score"])), keys, where, row_ids([A])
    )
    assert list(got) == [1, 0, 1]


def test_ambiguous_or_unidentifiable_files_are_refused(tmp_path):
    keys, where = distinct_pairs([A, B])
    ids = row_ids([A, B])
    spec = ScoreSpec(
        "judge",
        write(tmp_path / "r.csv", [{"response": r, "score": 1} for r, _ in keys], ["response", "score"]),
    )
    with pytest.raises(
        ScoreFileError,
        match=r"r\.csv: the response 'same words\.' at row 4 belongs to 2 annotated "
        r"responses, so the row's score is ambiguous; add the 'knowledge' column",
    ):
        read_scores(spec, keys, where, ids)
    spec = ScoreSpec("judge", write(tmp_path / "s.csv", [{"score": 1}] * len(keys), ["score"]))
    with pytest.raises(
        ScoreFileError,
        match=r"s\.csv: no column says which response each row scores .*rows are "
        r"never matched by their order\.$",
    ):
        read_scores(spec, keys, where, ids)
    spec = ScoreSpec(
        "judge", write(tmp_path / "o.csv", [{"id": i, "score": 1} for i in range(1, 6)], ["id", "score"])
    )
    with pytest.raises(
        ScoreFileError,
        match=r"o\.csv: column 'id' holds '1' at row 1, which is no id of the "
        r"template \(its ids look like 'a:1'\)",
    ):
        read_scores(spec, keys, where, ids)
    rows = [{"id": "a:1", "response": "built in 1925.", "score": 1}]
    spec = ScoreSpec("judge", write(tmp_path / "m.csv", rows, ["id", "response", "score"]))
    with pytest.raises(
        ScoreFileError,
        match=r"m\.csv: row 1 has id 'a:1', which is the response 'built in 1889\.', "
        r"but its 'response' column does not hold that text",
    ):
        read_scores(spec, keys, where, ids)


def test_the_annotated_sets_ids_bind_in_any_order(tmp_path):
    keys = [("r1", "k"), ("r2", "k"), ("r3", "k")]
    where = {k: f"row {i}" for i, k in enumerate(keys, 1)}
    path = tmp_path / "m.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "score": s}) + "\n" for i, s in [(3, 0.3), (1, 0.1), (2, 0.2)])
    )
    assert list(read_scores(ScoreSpec("m", path), keys, where)) == [0.1, 0.2, 0.3]


def test_a_name_given_twice_is_refused():
    with pytest.raises(ScoreFileError, match=re.escape("--scores: the name 'j' is given twice.")):
        check_names([ScoreSpec("j", "x.csv"), ScoreSpec("j", "y.csv")])
    check_names([ScoreSpec("j", "x.csv"), ScoreSpec("k", "x.csv")])
