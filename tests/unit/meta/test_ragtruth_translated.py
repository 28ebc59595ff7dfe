"""The machine-translated RAGTruth in its released layout (`ragtruth.read_translated`), on
tests/data/ragtruth_translated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from q2_metric.meta.ragtruth import RagTruthError, read_translated, translated_files

DATA = Path(__file__).resolve().parents[2] / "data" / "ragtruth_translated"


def test_every_language_file_of_the_folder_is_read_with_its_split():
    rows = read_translated(DATA)
    assert rows.ids == ["de-1", "de-2", "zh-1", "zh-2"]  # de-3 is of split train
    assert rows.lang == ["de", "de", "zh", "zh"] and rows.task == ["QA", "Summary", "QA", "Summary"]
    # the gold spans slice the answers exactly, in both scripts
    assert rows.response[0][rows.gold[0][0][0] : rows.gold[0][0][1]] == "3 Millionen"
    assert rows.response[2][3:6] == "三百万" and rows.gold[2] == [(3, 6)]
    assert rows.knowledge[2].startswith("根据段落回答问题。")  # the prompt is the knowledge
    assert rows.selection["left_out_by_split"] == {"train": 1} and rows.selection["kept"] == 4
    assert read_translated(DATA, split="all", langs=("de",)).ids == ["de-1", "de-2", "de-3"]


def test_one_file_a_missing_language_and_bad_samples(tmp_path):
    assert list(translated_files(DATA / "ragtruth_data_zh.json")) == ["zh"]
    with pytest.raises(RagTruthError, match=r"no file for language\(s\) fr \(found: de, zh\)"):
        read_translated(DATA, langs=("fr",))
    bad = tmp_path / "ragtruth_data_it.json"
    bad.write_text(
        json.dumps(
            [
                {"prompt": "P", "answer": "Ciao.", "labels": [{"start": 0, "end": 40}], "split": "test"},
                "not an object",
                {"prompt": "", "answer": "Ciao.", "labels": [], "split": "test"},
            ]
        ),
        encoding="utf-8",
    )
    rows = read_translated(bad)
    assert rows.ids == [] and len(rows.bad) == 3
    assert rows.bad[0].startswith("ragtruth_data_it.json sample 1 (id it-1): field 'labels' item 0 must have")
    assert rows.bad[1] == "ragtruth_data_it.json sample 2 (id it-2): is not a JSON object."
    (tmp_path / "ragtruth_data_fr.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(RagTruthError, match="is not a JSON array"):
        read_translated(tmp_path / "ragtruth_data_fr.json")
