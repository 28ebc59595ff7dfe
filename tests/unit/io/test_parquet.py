"""Folder inputs (`q2_metric.io.parquet`): the size limit covers every file reading opens, whatever its
name, and a datasets folder is read only from its own files.

The tables are written here by pyarrow / `datasets`; the sizes are the ones pyarrow reports for them."""

from __future__ import annotations

import json

import pytest

from q2_metric import io
from q2_metric.errors import Q2InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

LIMIT = 1_000_000


def _bomb(n: int = 20_000) -> pa.Table:
    """20 MB of text once decoded (one 1,000-character string repeated), a few kB on disk."""
    return pa.table(
        {
            "response": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), ["x" * 1000]),
            "knowledge": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), ["k"]),
        }
    )


@pytest.mark.parametrize("name", ["part-1", "part-1.dat", "part-1.PARQUET.bak", "sub/part-1"])
def test_every_file_of_a_parquet_folder_counts_whatever_its_name(tmp_path, monkeypatch, name):
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"response": ["a"], "knowledge": ["b"]}), folder / "part-0.parquet")
    (folder / name).parent.mkdir(exist_ok=True)
    pq.write_table(_bomb(), folder / name, compression="zstd")
    on_disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert on_disk < LIMIT < 20_000 * 1000  # small on disk; its text alone is 20 MB once decoded
    monkeypatch.setenv("Q2_MAX_INPUT_BYTES", str(LIMIT))
    with pytest.raises(
        Q2InputError, match=f"'{folder}' is a Parquet table of at least .* above the limit of 1,000,000 bytes"
    ):
        io.read_table(folder)
    monkeypatch.setenv("Q2_MAX_INPUT_BYTES", str(100 * LIMIT))  # within the limit: every file is read
    rows, columns = io.read_table(folder)
    assert len(rows) == 1 + 20_000 and columns == ["response", "knowledge"]


def test_hidden_files_are_neither_read_nor_measured_as_tables(tmp_path, monkeypatch):
    """pyarrow skips names starting with '.' or '_' (e.g. `_SUCCESS`): they are not opened as tables."""
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"response": ["a"], "knowledge": ["b"]}), folder / "part-0.parquet")
    (folder / "_SUCCESS").write_text("")
    (folder / ".crc").write_text("not parquet")
    rows, _ = io.read_table(folder)
    assert [r.fields for r in rows] == [{"response": "a", "knowledge": "b"}]


def _saved(tmp_path):
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "ds"
    datasets.Dataset.from_list([{"response": "a", "knowledge": "b"}]).save_to_disk(str(folder))
    return folder, datasets


def test_a_datasets_folder_naming_a_file_outside_itself_is_refused(tmp_path):
    folder, _ = _saved(tmp_path)
    assert [r.fields for r in io.read_table(folder)[0]] == [{"response": "a", "knowledge": "b"}]
    state = json.loads((folder / "state.json").read_text())
    inside = state["_data_files"][0]["filename"]
    for outside in (str(tmp_path / "elsewhere.arrow"), "../elsewhere.arrow"):
        (folder / inside).rename(tmp_path / "elsewhere.arrow")
        state["_data_files"][0]["filename"] = outside
        (folder / "state.json").write_text(json.dumps(state))
        with pytest.raises(Q2InputError, match=f"'{folder}' names a data file outside itself \\('{outside}'"):
            io.read_table(folder)
        (tmp_path / "elsewhere.arrow").rename(folder / inside)


def test_a_datasets_folder_of_several_splits_is_refused_before_loading(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "dd"
    one = datasets.Dataset.from_list([{"response": "a", "knowledge": "b"}])
    datasets.DatasetDict({"train": one, "test": one}).save_to_disk(str(folder))

    def never(*args, **kwargs):
        raise AssertionError("loaded")

    monkeypatch.setattr(datasets, "load_from_disk", never)
    with pytest.raises(
        Q2InputError, match="holds several splits \\(train, test\\); point at one split's folder"
    ):
        io.read_table(folder)
