"""The one table reader (`q2_metric.io.read_table`) with nested columns, TSV spellings and size limits.

Expected values are the tables written here by pyarrow / by hand, read back as they were written.
"""

from __future__ import annotations

import json

import pytest

from q2_metric import io
from q2_metric.errors import Q2InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

NESTED = {
    "response": ["Bob Ross hosted it.", "It aired on PBS."],
    "knowledge": ["Bob Ross hosted The Joy of Painting on PBS."] * 2,
    "history": [["hi", "hello"], []],
    "meta": [{"a": 1, "b": "x"}, {"a": 2, "b": None}],
    "scores": [[0.5, 1.0], [0.25]],
}


def test_parquet_with_list_and_struct_columns_is_read(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table(NESTED), path)
    rows, columns = io.read_table(path)
    assert columns == list(NESTED)
    assert [r.fields for r in rows] == [{k: v[i] for k, v in NESTED.items()} for i in range(2)]
    assert all(r.error is None for r in rows)


def test_a_dictionary_encoded_text_column_beside_nested_ones(tmp_path):
    """The size check reads text columns still encoded: that must not trip over nested columns."""
    path = tmp_path / "in.parquet"
    table = pa.table({**NESTED, "response": pa.array(NESTED["response"]).dictionary_encode()})
    pq.write_table(table, path)
    rows, _ = io.read_table(path)
    assert [r.fields["response"] for r in rows] == NESTED["response"]


def test_read_rows_takes_the_texts_of_a_nested_file(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table(NESTED), path)
    rows = io.read_rows(path)
    assert [r.fields["history"] for r in rows] == [["hi", "hello"], []]


def test_nested_values_go_to_a_csv_output_as_json(tmp_path):
    out = tmp_path / "out.csv"
    io.write_table(out, [{"history": ["hi", "a, b"], "meta": {"a": 1}}], ["history", "meta"])
    rows, _ = io.read_table(out)
    assert [json.loads(rows[0].fields[c]) for c in ("history", "meta")] == [["hi", "a, b"], {"a": 1}]


@pytest.mark.parametrize("name, prefix", [("set.tsv", b""), ("SET.TSV", b""), ("bom.tsv", b"\xef\xbb\xbf")])
def test_tsv_in_any_case_and_with_a_bom(tmp_path, name, prefix):
    path = tmp_path / name
    path.write_bytes(prefix + b'response\tknowledge\tlabel\na "quoted" reply\tsome text\t1\n')
    rows, columns = io.read_table(path)
    assert columns == ["response", "knowledge", "label"]
    assert rows[0].fields == {"response": 'a "quoted" reply', "knowledge": "some text", "label": "1"}


def test_a_tsv_row_with_a_missing_field_is_named_by_its_line(tmp_path):
    path = tmp_path / "set.tsv"
    path.write_text("response\tknowledge\nfine\ttext\n\nshort\n")
    rows, _ = io.read_table(path)
    assert rows[0].error is None
    assert rows[1].error.startswith("line 4: 1 field(s) but the header has 2")


def test_tsv_and_folders_obey_the_size_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("Q2_MAX_INPUT_BYTES", "100")
    tsv = tmp_path / "big.tsv"
    tsv.write_text("response\tknowledge\n" + "x\ty\n" * 100)
    with pytest.raises(Q2InputError, match="above the limit of 100 bytes"):
        io.read_table(tsv)
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table(NESTED), folder / "part-0.parquet")
    with pytest.raises(Q2InputError, match=r"a folder of .* bytes, above the limit"):
        io.read_table(folder)
