"""The multilingual sets read through `meta-eval --dataset NAME=PATH` (`q2_metric.meta.multilingual`
via `datasets.load_dataset`): each known by its layout, with languages, --lang and --limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from q2_metric.meta.datasets import DatasetError, load_datasets
from q2_metric.meta.ragtruth import Selection

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize(
    "path, fmt, langs",
    [
        ("seahorse", "seahorse", ["de", "de", "en", "en", "es", "es", "de"]),
        ("seahorse/test.tsv", "seahorse", ["de", "de", "en", "en", "es", "es", "de"]),
        ("mushroom/mushroom.de-zh-val.v2.jsonl", "mu-shroom", ["de", "de", "zh"]),
        ("psiloqa/test.jsonl", "psiloqa", ["de", "de", "ar"]),
        ("ragtruth_translated", "ragtruth", ["de", "de", "zh", "zh"]),
    ],
)
def test_each_set_is_known_by_its_layout(path, fmt, langs):
    (ds,) = load_datasets([f"x={DATA / path}"])
    assert ds.format == fmt and ds.langs == langs and ds.multilingual is not None
    assert len(ds.response) == len(ds.knowledge) == len(ds.consistent) == len(langs)
    if ds.gold_spans is not None:  # every gold span slices its response
        assert all(0 <= s < e <= len(r) for r, g in zip(ds.response, ds.gold_spans) for s, e in g)
        assert ds.consistent == [int(not g) for g in ds.gold_spans]


def test_lang_and_limit_select_rows():
    (ds,) = load_datasets([f"x={DATA / 'psiloqa' / 'test.jsonl'}"], selection=Selection(langs=("ar",)))
    assert ds.ids == ["psilo-ar-1"] and ds.knowledge == ["ما هي عاصمة مصر؟\nعاصمة مصر هي القاهرة."]
    (ds,) = load_datasets([f"x={DATA / 'mushroom' / 'mushroom.de-zh-val.v2.jsonl'}"], limit=1)
    assert ds.ids == ["val-de-1"] and ds.soft_gold is not None and len(ds.soft_gold) == 1
    (ds,) = load_datasets([f"x={DATA / 'seahorse'}"], selection=Selection(langs=("en",)))
    assert ds.consistent == [1, 0] and ds.multilingual["kept_by_language"] == {"en": 2}


def test_a_seahorse_folder_without_the_split_or_articles_is_one_sentence(tmp_path):
    with pytest.raises(
        DatasetError, match=r"--dataset x \(.*seahorse\): SEAHORSE's folder has no validation.tsv\."
    ):
        load_datasets([f"x={DATA / 'seahorse'}"], selection=Selection(seahorse_split="validation"))
    articles = tmp_path / "none.jsonl"
    with pytest.raises(DatasetError, match=r"--seahorse-articles .*none.jsonl: no such file"):
        load_datasets([f"x={DATA / 'seahorse'}"], selection=Selection(seahorse_articles=str(articles)))


def test_an_unreadable_line_is_a_named_bad_row_and_the_rest_is_read(tmp_path):
    lines = (DATA / "psiloqa" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "test.jsonl"
    path.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    (ds,) = load_datasets([f"x={path}"])
    assert ds.ids == ["psilo-de-1", "psilo-de-2", "psilo-ar-1"]
    assert len(ds.bad) == 1 and "line 2" in ds.bad[0], ds.bad


def test_a_folder_of_other_tsv_files_is_not_taken_for_seahorse(tmp_path):
    (tmp_path / "test.tsv").write_text(
        "evidence\tresponse\tgold label\nK.\tR.\tentailment\n", encoding="utf-8"
    )
    with pytest.raises(DatasetError, match="a folder must be the paper's annotated set"):
        load_datasets([f"x={tmp_path}"])
