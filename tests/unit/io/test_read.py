"""Reading inputs: CSV per RFC 4180 with the file's line numbers, strict quoting, encodings and byte-order
marks, formats told by their content, duplicate JSON keys, missing columns and empty inputs."""

from __future__ import annotations

import csv
import gzip
import io
import json
import random

import pytest
from support.cli import refused
from support.files import BARE, HEADER, PAIRS, ROWS, STRAY, write, write_parquet

from q2_metric.corpus.files import score_file
from q2_metric.errors import OutputPathError, Q2InputError
from q2_metric.io import read_rows
from q2_metric.testing.scripted import ScriptedQG, scripted_scorer


def test_duplicate_json_key_names_the_row_and_key(tmp_path):
    data = tmp_path / "in.jsonl"
    data.write_text(
        '{"response": "a", "knowledge": "b"}\n'
        '{"response": "a", "knowledge": "b", "knowledge": "c"}\n'
        '{"response": "a", "knowledge": {"x": 1, "x": 2}}\n'
    )
    rows = read_rows(data)
    assert [r.error for r in rows] == [
        None,
        "line 2: the key 'knowledge' appears twice in one JSON object (which value is meant?)",
        "line 3: the key 'x' appears twice in one JSON object (which value is meant?)",
    ]


@pytest.mark.parametrize("codec", ["utf-16", "utf-32", "utf-16-be"])
def test_utf16_and_utf32_with_a_bom_are_read(tmp_path, codec):
    data = tmp_path / "in.csv"
    bom = {"utf-16-be": b"\xfe\xff"}.get(codec, b"")
    data.write_bytes(bom + (HEADER + "Café.,Café ☕.\n").encode(codec))
    [row] = read_rows(data)
    assert row.fields == {"response": "Café.", "knowledge": "Café ☕."}


@pytest.mark.parametrize(
    "name, packer, what",
    [
        ("in.csv", gzip.compress, "gzip-compressed"),
        ("in.csv.gz", gzip.compress, "gzip-compressed"),
        ("in.csv", lambda b: __import__("bz2").compress(b), "bzip2-compressed"),
        ("in.xlsx", lambda b: b"PK\x03\x04" + b"\0" * 30, "a ZIP archive"),
    ],
)
def test_compressed_inputs_say_what_they_are(tmp_path, capsys, name, packer, what):
    data = tmp_path / name
    data.write_bytes(packer((HEADER + ROWS).encode()))
    line = refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--no-cache"], what)
    assert "latin-1" not in line


def test_utf16_without_bom_is_not_told_latin1(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_bytes((HEADER + ROWS).encode("utf-16-le"))
    line = refused(capsys, ["score", str(data), "-o", str(tmp_path / "o.csv"), "--no-cache"], "UTF-16")
    assert "utf-16-le" in line


def test_extensions_are_read_by_content_and_case_insensitively(tmp_path):
    jsonl = tmp_path / "IN.JSONL"
    jsonl.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    bare = tmp_path / "pairs"  # no extension: JSON objects
    bare.write_text(jsonl.read_text())
    parquet = write_parquet(tmp_path / "pairs.csv", PAIRS)  # Parquet under a wrong extension
    upper = write_parquet(tmp_path / "P.PARQUET", PAIRS)
    for path in (jsonl, bare, parquet, upper):
        assert [r.fields for r in read_rows(path)] == PAIRS, path


def test_bare_cr_is_data_not_a_phantom_row(tmp_path):
    """The issue's case: `\\r` inside an unquoted field of an LF file is data (before: a phantom row
    "the us" scored with the first half's knowledge, and every later line number off by one)."""
    path = tmp_path / "x.csv"
    path.write_bytes(b"response,knowledge\nbob,Bob.\nit aired in\rthe us,It aired in the US.\nlast,Last.\n")
    rows = read_rows(path)
    assert [(r.line, r.fields, r.error) for r in rows] == [
        (2, {"response": "bob", "knowledge": "Bob."}, None),
        (3, {"response": "it aired in\rthe us", "knowledge": "It aired in the US."}, None),
        (4, {"response": "last", "knowledge": "Last."}, None),
    ]


def test_quoted_cr_lf_crlf_are_data_and_lines_are_the_files(tmp_path):
    # CRLF line ends, as csv.writer writes them; fields with CR, LF and CRLF inside quotes
    text = (
        'response,knowledge\r\n"a\rb",K1\r\n"c\nd",K2\r\n"e\r\nf","K3, ""quoted"""\r\nonly-one\r\n"g",K5\r\n'
    )
    path = tmp_path / "x.csv"
    path.write_bytes(text.encode())
    rows = read_rows(path)
    assert [r.line for r in rows] == [2, 3, 5, 7, 8]  # the file's lines (LF-counted) where each starts
    assert [r.fields.get("response") for r in rows] == ["a\rb", "c\nd", "e\r\nf", "only-one", "g"]
    assert rows[2].fields["knowledge"] == 'K3, "quoted"'
    assert [r.error for r in rows] == [
        None,
        None,
        None,
        "line 7: 1 field(s) but the header has 2 (a comma in an unquoted field, or a missing one?)",
        None,
    ]


def test_property_csv_writer_rows_read_back_one_for_one(tmp_path):
    """Seeded random rows with CR, LF, CRLF, quotes, commas, NUL and non-ASCII text, written by
    `csv.writer`: every row reads back as exactly one row, equal to what was written, on the line
    the writer started it. (With `lineterminator="\n"` csv.writer leaves a field's CR unquoted, so
    a last field ending in CR gives `x,\r\n`, which every reader reads as a CRLF line end: that
    combination is written with QUOTE_ALL.)"""
    alphabet = [
        "a",
        "b",
        " ",
        ",",
        '"',
        "\r",
        "\n",
        "\r\n",
        "é",
        "€",
        "😀",
        "\u2028",
        "\x00",
        "'",
        ";",
        "x" * 5,
    ]
    rng = random.Random(19)
    for trial in range(60):
        records = [
            ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(2)]
            for _ in range(rng.randint(1, 25))
        ]
        records = [r for r in records if r != ["", ""]]  # csv.writer writes `""`-less empty rows as `,`
        terminator, quoting = rng.choice(
            [("\r\n", csv.QUOTE_MINIMAL), ("\r\n", csv.QUOTE_ALL), ("\n", csv.QUOTE_ALL)]
        )
        buf = io.StringIO(newline="")
        writer = csv.writer(buf, lineterminator=terminator, quoting=quoting)
        writer.writerow(["response", "knowledge"])
        starts = []
        for record in records:
            starts.append(buf.getvalue().count("\n") + 1)
            writer.writerow(record)
        path = tmp_path / f"p{trial}.csv"
        path.write_bytes(buf.getvalue().encode())
        rows = read_rows(path, allow_empty=True)
        assert [[r.fields.get("response"), r.fields.get("knowledge")] for r in rows] == records, trial
        assert [r.error for r in rows] == [None] * len(records)
        assert [r.line for r in rows] == starts


def score(path, tmp_path, **kw):
    qg = ScriptedQG()
    report = score_file(scripted_scorer(qg=qg), path, tmp_path / "out.csv", cache_dir=None, **kw)
    with open(tmp_path / "out.csv", newline="") as f:
        return report, list(csv.DictReader(f)), qg


def test_stray_quote_closed_later_never_merges_rows_with_no_multiline(tmp_path):
    path = write(
        tmp_path,
        HEADER + 'Paris is big.,Paris is big.\n"Rome is old.,Rome is old.\n'
        'Berlin",Berlin is cold.\nOslo is far.,Oslo is far.\n',
    )
    report, out, _ = score(path, tmp_path, multiline=False)
    assert report.bad_rows == [f"line 3: {STRAY.format(end=4)}", f"line 4: {BARE}"]
    assert (report.num_rows, report.num_bad) == (4, 2)  # four data lines, four rows
    assert [o["response"] for o in out] == ["Paris is big.", "", "", "Oslo is far."]
    assert [o["q2"] for o in out] == ["1.0", "", "", "1.0"]


def test_unclosed_quote_swallows_no_rows(tmp_path):
    path = write(tmp_path, HEADER + 'Paris.,Paris.\n"Rome.,Rome.\nBern.,Bern.\nOslo.,Oslo.\nLima.,Lima.\n')
    report, out, _ = score(path, tmp_path)
    assert report.bad_rows == [
        "line 3: a double quote opened on this line is never closed; quote the whole "
        "field and double any quote inside it"
    ]
    assert [o["response"] for o in out] == ["Paris.", "", "Bern.", "Oslo.", "Lima."]
    assert sum(o["q2"] == "1.0" for o in out) == 4


def test_field_count_and_quote_after_closing_quote(tmp_path):
    path = write(tmp_path, HEADER + 'Paris.,Paris.\nRome,old.,Rome.\n"Bern" is,Bern.\nOslo.\n')
    report, _, _ = score(path, tmp_path)
    assert report.bad_rows == [
        "line 3: 3 field(s) but the header has 2 (a comma in an unquoted field, or a missing one?)",
        "line 4: a closing double quote is followed by more text in the same field; quote the whole field "
        "and double any quote inside it",
        "line 5: 1 field(s) but the header has 2 (a comma in an unquoted field, or a missing one?)",
    ]


def test_multiline_fields_by_default_one_line_rows_when_asked(tmp_path):
    path = write(tmp_path, HEADER + '"two\nlines",Paris.\n"Rome ""the city"".",Rome.\n')
    report, _, _ = score(path, tmp_path, multiline=False)
    assert report.bad_rows[0] == f"line 2: {STRAY.format(end=3)}"
    report, out, _ = score(path, tmp_path)
    assert report.bad_rows == [] and [o["response"] for o in out] == ["two\nlines", 'Rome "the city".']
    assert [r.line for r in read_rows(path)] == [2, 4]


def test_first_data_row_is_line_2_and_blank_lines_count(tmp_path):
    path = write(tmp_path, HEADER + "Paris.\n\nRome.,Rome.\nBern.\n")
    report, _, _ = score(path, tmp_path)
    assert [e.split(":")[0] for e in report.bad_rows] == ["line 2", "line 5"]
    jsonl = write(tmp_path, '{"response": "a"}\n\n{"response": "b", "knowledge": "c"}\n', "in.jsonl")
    assert [r.line for r in read_rows(jsonl)] == [1, 3]


def test_missing_column_is_one_error_before_any_work(tmp_path):
    path = write(tmp_path, "reply,knowledge\n" + "Paris.,Paris.\n" * 300)
    qg = ScriptedQG()
    with pytest.raises(Q2InputError) as err:
        score_file(scripted_scorer(qg=qg), path, tmp_path / "out.csv", cache_dir=None)
    assert str(err.value) == (
        f"The input file '{path}' has no column 'response' (its columns: 'reply', "
        "'knowledge'); name the right one with --response-col."
    )
    assert qg.calls == [] and not (tmp_path / "out.csv").exists()
    array = write(tmp_path, '[{"response": "a", "knowledge": "b"}]', "in.json")
    with pytest.raises(
        Q2InputError, match=r"holds a JSON array; write one JSON object per line \(JSONL\) instead"
    ):
        read_rows(array)
    jsonl = write(tmp_path, '{"response": "a", "k": "b"}\n' * 3, "in.jsonl")
    with pytest.raises(
        Q2InputError,
        match=r"has no column 'knowledge' \(its columns: 'response', 'k'\); "
        r"name the right one with --knowledge-col\.$",
    ):
        read_rows(jsonl)


def test_encoding(tmp_path):
    path = write(tmp_path, HEADER + "Café.,Café au lait.\n", encoding="latin-1")
    with pytest.raises(Q2InputError) as err:
        read_rows(path)
    assert str(err.value) == (
        f"The input file '{path}' is not valid utf-8: byte 0xe9 at offset 22 (line 2) "
        "cannot be decoded; pass the file's encoding with --encoding (e.g. --encoding "
        "latin-1)."
    )
    assert read_rows(path, encoding="latin-1")[0].fields["response"] == "Café."
    bom = write(tmp_path, "\ufeff" + HEADER + "a,b\n", "bom.csv")
    assert read_rows(bom)[0].fields == {"response": "a", "knowledge": "b"}  # a UTF-8 BOM is not a column
    with pytest.raises(Q2InputError, match="Unknown encoding 'klingon'"):
        read_rows(path, encoding="klingon")


@pytest.mark.parametrize("text", ["", HEADER, "\n"])
def test_empty_input_is_an_error_unless_allowed(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(Q2InputError) as err:
        score(path, tmp_path)
    assert str(err.value) == (
        f"The input file '{path}' has no data rows; pass --allow-empty "
        "(allow_empty=True) to write an empty output anyway."
    )
    report, out, _ = score(path, tmp_path, allow_empty=True)
    assert report.num_rows == 0 and out == []
    assert (tmp_path / "out.csv").read_text().startswith("q2,q2_no_nli,fallback")


def test_missing_input_and_bad_output_paths(tmp_path):
    with pytest.raises(Q2InputError) as err:
        read_rows(tmp_path / "nope.csv")
    assert str(err.value) == f"The input file '{tmp_path / 'nope.csv'}' does not exist; check the path."

    path = write(tmp_path, HEADER + "Paris.,Paris.\n")
    before = path.read_bytes()
    qg = ScriptedQG()
    folder = tmp_path / "folder"
    folder.mkdir()
    note = tmp_path / "note.txt"
    note.write_text("a file, not a folder\n")
    # the sentences of the one output-path guard, io.paths.check_run (as every front-end's)
    cases = [
        (
            {"output_path": tmp_path},
            f"The output '{tmp_path}' (-o/--output) contains the input '{path}'; write the output "
            "somewhere else, so that the input is kept as it is.",
        ),
        (
            {"output_path": folder},
            f"The output path '{folder}' (-o/--output) is a folder, not a regular file; name a file in "
            f"it, e.g. {folder / 'scores.csv'}.",
        ),
        (
            {"output_path": path},
            f"The output '{path}' (-o/--output) is the input '{path}'; write the output somewhere else, "
            "so that the input is kept as it is.",
        ),
        (
            {"output_path": tmp_path / "o.csv", "steps_path": tmp_path / "o.csv"},
            f"-o/--output and --steps name the same path '{tmp_path / 'o.csv'}'; give each output its own path.",
        ),
        (
            {"output_path": path / "o.csv"},
            f"The output '{path / 'o.csv'}' (-o/--output) lies inside the input '{path}'; write the output "
            "somewhere else, so that the input is kept as it is.",
        ),
        (
            {"output_path": note / "o.csv"},
            f"The output path '{note / 'o.csv'}' (-o/--output) lies under '{note}', "
            "which is a file, not a folder; choose another path.",
        ),
    ]
    for kw, message in cases:
        with pytest.raises(OutputPathError) as err:
            score_file(scripted_scorer(qg=qg), path, cache_dir=None, **kw)
        assert str(err.value) == message
    assert qg.calls == [] and path.read_bytes() == before


def test_a_pipe_or_fifo_input_is_refused_in_one_sentence_before_it_is_opened(tmp_path):
    """A pipe can be read once (the format check and the reader each read it: a JSONL through
    `<(...)` lost its first rows), and a FIFO with no writer blocks its reader forever: both are
    refused by the reader's home before any open (issue 49)."""
    import os

    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)  # no writer: opening it would block
    with pytest.raises(
        Q2InputError, match=r"is a pipe .*, not a regular file.*write the rows to a file first"
    ):
        read_rows(fifo)
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"response": "a", "knowledge": "b"}\n' * 12)
        with pytest.raises(Q2InputError, match="is a pipe"):
            read_rows(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_tsv_that_quotes_its_fields_is_read_without_its_quotes(tmp_path):
    """pandas (`to_csv(sep="\\t")`), Excel and Python's csv module quote a field holding a quote,
    a tab or a line break; BEGIN's TSV never quotes. The file tells which (a field beginning with
    a quote): the text is never scored with the writer's quote characters in it."""
    texts = ['He said "hi" to me.', "a\ttab", "two\nlines", "plain"]
    quoted = tmp_path / "pandas.tsv"
    with open(quoted, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")  # pandas' quoting: QUOTE_MINIMAL
        writer.writerow(["response", "knowledge"])
        writer.writerows([[t, "k"] for t in texts])
    assert '"He said ""hi"" to me."' in quoted.read_text()  # what such a file holds
    rows = read_rows(quoted)
    assert [r.fields["response"] for r in rows] == texts and all(r.error is None for r in rows)
    unquoted = tmp_path / "begin.tsv"  # BEGIN's kind: quotes inside texts, none at a field's start
    unquoted.write_text('response\tknowledge\nHe said "hi" to me.\tk\n', encoding="utf-8")
    assert [r.fields["response"] for r in read_rows(unquoted)] == ['He said "hi" to me.']
    mixed = tmp_path / "mixed.tsv"  # quoted, with one field that is not: a bad row, named
    mixed.write_text('response\tknowledge\n"ok"\tk\nHe said "hi"\tk\n', encoding="utf-8")
    rows = read_rows(mixed)
    assert rows[0].fields["response"] == "ok" and rows[1].error.startswith("line 3: ")
