"""The FaithDial-format reader of `q2 meta-eval --dataset`: FaithDial's responses consistent, each
original response labelled by FaithCritic's rule (github.com/McGill-NLP/FaithDial,
models/critic_data.py: 'Hallucination' in BEGIN -> hallucination, else 'Entailment' -> faithful,
else left out); the fixture's labels are worked out by hand in tests/data/faithdial/README.md."""

import json
from pathlib import Path

import pytest

from q2_metric.meta.datasets import DatasetError, load_dataset, load_datasets

FIXTURE = Path(__file__).parents[2] / "data" / "faithdial" / "tiny.jsonl"


def test_faithdial_rows_and_labels():
    ds, problems = load_dataset("fd", FIXTURE)
    assert problems == [] and ds is not None and ds.format == "faithdial"
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    # rows 1-5: the response (consistent); originals of rows 1 (Hallucination), 2 (Entailment),
    # 3 (Hallucination and Entailment); row 4's (Generic) left out; row 5's is its response
    want = [
        (rows[0]["response"], 1, True),
        (rows[0]["original_response"], 0, False),
        (rows[1]["response"], 1, True),
        (rows[1]["original_response"], 1, False),
        (rows[2]["response"], 1, True),
        (rows[2]["original_response"], 0, False),
        (rows[3]["response"], 1, True),
        (rows[4]["response"], 1, True),
    ]
    assert list(zip(ds.response, ds.consistent, ds.faithdial)) == want
    assert ds.knowledge[1] == rows[0]["knowledge"]
    assert ds.where[1].endswith("row 1 (original_response)")
    assert ds.summary()["format"] == "faithdial"


def test_faithdial_csv_with_text_labels(tmp_path):
    import csv

    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    path = tmp_path / "fd.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["knowledge", "response", "original_response", "BEGIN"])
        w.writeheader()
        for r in rows:
            w.writerow(
                {
                    **{k: r[k] for k in ("knowledge", "response", "original_response")},
                    "BEGIN": str(r["BEGIN"]),
                }
            )
    ds, problems = load_dataset("fd", path)
    assert problems == [] and ds.consistent == [1, 0, 1, 1, 1, 0, 1, 1]


def test_faithdial_problems_are_one_sentence_each(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = {
        "knowledge": "K is k.",
        "response": "K is k.",
        "original_response": "K is j.",
        "BEGIN": ["Hallucination"],
    }
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in (good, {**good, "response": ""}, {**good, "BEGIN": 3}, {**good, "BEGIN": {"a": 1}})
        ),
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as err:
        load_datasets([f"fd={path}"])
    lines = str(err.value).splitlines()
    assert lines == [
        f"--dataset fd ({path}): column 'response' is empty or not text at row 2.",
        f"--dataset fd ({path}): column 'BEGIN' is not a list of labels at row 3 and 1 other row(s).",
    ]
    only_faithful = tmp_path / "faithful.jsonl"
    only_faithful.write_text(json.dumps({**good, "BEGIN": ["Entailment"]}), encoding="utf-8")
    with pytest.raises(DatasetError, match="every one of its 2 responses is consistent"):
        load_datasets([f"fd={only_faithful}"])
