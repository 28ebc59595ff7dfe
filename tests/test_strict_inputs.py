"""Strict input reading: malformed CSV quoting, real line numbers, one error for a missing column,
encodings, empty inputs, output paths, and the sequences the Python API accepts."""

import csv
import json

import pytest

from q2_metric import Q2InputError
from q2_metric.errors import OutputPathError
from q2_metric.io import read_rows
from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import ScriptedQG, scripted_scorer

HEADER = "response,knowledge\n"


def write(tmp_path, text, name="in.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def score(path, tmp_path, **kw):
    qg = ScriptedQG()
    report = score_file(scripted_scorer(qg=qg), path, tmp_path / "out.csv", cache_dir=None, **kw)
    with open(tmp_path / "out.csv", newline="") as f:
        return report, list(csv.DictReader(f)), qg


STRAY = "a quoted field opened on this line runs on to line {end} (a stray double quote?) while " \
        "--no-multiline says the rows of this file are one line each; fix the quote, or leave out " \
        "--no-multiline if fields really span lines"
BARE = "field 'response' holds a double quote without being quoted; quote the whole field and double the " \
       "quote inside it"


def test_stray_quote_closed_later_never_merges_rows_with_no_multiline(tmp_path):
    path = write(tmp_path, HEADER + 'Paris is big.,Paris is big.\n"Rome is old.,Rome is old.\n'
                                    'Berlin",Berlin is cold.\nOslo is far.,Oslo is far.\n')
    report, out, _ = score(path, tmp_path, multiline=False)
    assert report.bad_rows == [f"line 3: {STRAY.format(end=4)}", f"line 4: {BARE}"]
    assert (report.num_rows, report.num_bad) == (4, 2)  # four data lines, four rows
    assert [o["response"] for o in out] == ["Paris is big.", "", "", "Oslo is far."]
    assert [o["q2"] for o in out] == ["1.0", "", "", "1.0"]


def test_unclosed_quote_swallows_no_rows(tmp_path):
    path = write(tmp_path, HEADER + 'Paris.,Paris.\n"Rome.,Rome.\nBern.,Bern.\nOslo.,Oslo.\nLima.,Lima.\n')
    report, out, _ = score(path, tmp_path)
    assert report.bad_rows == ["line 3: a double quote opened on this line is never closed; quote the whole "
                               "field and double any quote inside it"]
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
    assert str(err.value) == (f"The input file '{path}' has no column 'response' (its columns: 'reply', "
                              "'knowledge'); name the right one with --response-col.")
    assert qg.calls == [] and not (tmp_path / "out.csv").exists()
    array = write(tmp_path, '[{"response": "a", "knowledge": "b"}]', "in.json")
    with pytest.raises(Q2InputError, match=r"holds a JSON array; write one JSON object per line \(JSONL\) instead"):
        read_rows(array)
    jsonl = write(tmp_path, '{"response": "a", "k": "b"}\n' * 3, "in.jsonl")
    with pytest.raises(Q2InputError, match=r"has no column 'knowledge' \(its columns: 'response', 'k'\); "
                                           r"name the right one with --knowledge-col\.$"):
        read_rows(jsonl)


def test_encoding(tmp_path):
    path = write(tmp_path, HEADER + "Café.,Café au lait.\n", encoding="latin-1")
    with pytest.raises(Q2InputError) as err:
        read_rows(path)
    assert str(err.value) == (f"The input file '{path}' is not valid utf-8: byte 0xe9 at offset 22 (line 2) "
                              "cannot be decoded; pass the file's encoding with --encoding (e.g. --encoding "
                              "latin-1).")
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
    assert str(err.value) == (f"The input file '{path}' has no data rows; pass --allow-empty "
                              "(allow_empty=True) to write an empty output anyway.")
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
    cases = [
        ({"output_path": tmp_path}, f"The output path '{tmp_path}' (-o/--output) is a directory; name a file in "
                                    f"it, e.g. {tmp_path / 'scores.csv'}."),
        ({"output_path": path}, f"The output path '{path}' (-o/--output) is the input file; write to another file "
                                "so that the input is kept."),
        ({"output_path": tmp_path / "o.csv", "steps_path": tmp_path / "o.csv"},
         f"-o/--output and --steps name the same file '{tmp_path / 'o.csv'}'; give each output its own file."),
        ({"output_path": path / "o.csv"}, f"The output path '{path / 'o.csv'}' (-o/--output) lies under '{path}', "
                                          "which is a file, not a folder; choose another path."),
    ]
    for kw, message in cases:
        with pytest.raises(OutputPathError) as err:
            score_file(scripted_scorer(qg=qg), path, cache_dir=None, **kw)
        assert str(err.value) == message
    assert qg.calls == [] and path.read_bytes() == before


def test_api_accepts_any_sequence_of_strings():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    from q2_metric.validation import validate_inputs

    responses, knowledge = ["Paris is big.", "Rome."], ["Paris is big.", "Rome."]
    expected = scripted_scorer().score(responses, knowledge).scores
    for r, k in [(tuple(responses), tuple(knowledge)), (np.array(responses), np.array(knowledge)),
                 (pd.Series(responses, index=[7, 3]), pd.Series(knowledge))]:
        assert scripted_scorer().score(r, k).scores == expected
        assert all(type(x) is str for x in validate_inputs(r, k)[0])  # numpy.str_ becomes str
    for bad, kind in [(set(responses), "set"), (dict.fromkeys(responses), "dict")]:
        with pytest.raises(Q2InputError) as err:
            scripted_scorer().score(bad, knowledge)
        assert str(err.value) == (f"response must be a sequence of strings (list, tuple, numpy array, pandas "
                                  f"Series), got {kind}, whose order is not the order of the items; pass a list")
    with pytest.raises(Q2InputError, match="must be one-dimensional .* got 2 dimensions"):
        scripted_scorer().score(np.array([responses]), knowledge)
    with pytest.raises(Q2InputError, match="item 1: field 'response' must be a string, got NoneType|got None"):
        scripted_scorer().score(np.array(["a", None], dtype=object), knowledge)


def test_cli_input_errors_exit_2_before_models(tmp_path, capsys):
    """The paper's default models are not available here: each input error must come first."""
    from q2_metric.cli import main

    latin = write(tmp_path, HEADER + "Café.,Café.\n", "latin.csv", encoding="latin-1")
    nocol = write(tmp_path, "reply,knowledge\n" + "a,b\n" * 300, "nocol.csv")
    empty = write(tmp_path, HEADER, "empty.csv")
    cases = [
        ([str(latin), "-o", str(tmp_path / "o.csv")], f"q2: The input file '{latin}' is not valid utf-8: byte 0xe9 "
         "at offset 22 (line 2) cannot be decoded; pass the file's encoding with --encoding (e.g. --encoding "
         "latin-1).\n"),
        ([str(tmp_path / "missing.csv"), "-o", str(tmp_path / "o.csv")],
         f"q2: The input file '{tmp_path / 'missing.csv'}' does not exist; check the path.\n"),
        ([str(nocol), "-o", str(tmp_path / "o.csv")], f"q2: The input file '{nocol}' has no column 'response' "
         "(its columns: 'reply', 'knowledge'); name the right one with --response-col.\n"),
        ([str(empty), "-o", str(tmp_path / "o.csv")], f"q2: The input file '{empty}' has no data rows; pass "
         "--allow-empty (allow_empty=True) to write an empty output anyway.\n"),
        ([str(empty), "-o", str(tmp_path)], f"q2: The output path '{tmp_path}' (-o/--output) is a directory; "
         f"name a file in it, e.g. {tmp_path / 'scores.csv'}.\n"),
        ([str(empty), "-o", str(empty)], f"q2: The output path '{empty}' (-o/--output) is the input file; write "
         "to another file so that the input is kept.\n"),
    ]
    for args, stderr in cases:
        assert main(["score", *args, "--no-cache"]) == 2
        assert capsys.readouterr().err == stderr
    assert not (tmp_path / "o.csv").exists() and empty.read_text() == HEADER
    assert main(["demo", "--input", str(latin)]) == 2  # the demo reads its input the same way
    assert capsys.readouterr().err == cases[0][1]


def test_cli_reports_bad_rows_by_line_and_exits_3(tmp_path, tiny_config, capsys):
    from q2_metric.cli import main

    path = write(tmp_path, HEADER + 'Paris is big.,Paris is big.\n"Rome is old.,Rome is old.\n'
                                    'Berlin",Berlin is cold.\nOslo is far.,Oslo is far.\n')
    rc = main(["score", str(path), "-o", str(tmp_path / "out.jsonl"), "--no-cache", "--no-progress",
               "--qg-model", tiny_config.qg_model, "--qa-model", tiny_config.qa_model,
               "--nli-model", tiny_config.nli_model, "--decoding", "greedy", "--device", "cpu",
               "--no-multiline"])
    captured = capsys.readouterr()
    assert rc == 3
    ours = [line for line in captured.err.splitlines() if line.startswith("q2: ")]  # not the loading bars
    assert ours == [f"q2: {path}: line 3: {STRAY.format(end=4)}; row skipped",
                    f"q2: {path}: line 4: {BARE}; row skipped"]
    assert captured.out.startswith(f"Scored 2/4 rows (2 now, 0 from the cache) -> {tmp_path / 'out.jsonl'}\n")
    out = [json.loads(line) for line in open(tmp_path / "out.jsonl")]
    assert [o["q2"] is None for o in out] == [False, True, True, False]
