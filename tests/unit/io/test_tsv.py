"""Reading a TSV (`q2_metric.io.tsv`): BEGIN's unquoted kind stays unquoted when one of its texts
begins with a double quote; a file a quoting writer wrote is still read as CSV with tabs."""

from __future__ import annotations

import csv

from q2_metric.io import read_rows, read_table

HEADER = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"


def _begin(tmp_path, responses):
    """A file in BEGIN's published layout (data/begin/wow): six tab-separated columns,
    no quoting, one line a row."""
    path = tmp_path / "begin_dev_wow.tsv"
    body = "".join(
        f"t5\twow\tthe knowledge {i}\tthe message {i}\t{r}\tFully attributable\n"
        for i, r in enumerate(responses)
    )
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_one_unquoted_text_beginning_with_a_quote_keeps_the_file_unquoted(tmp_path):
    """Before, any field beginning with a quote made the whole file CSV: the quote ran on over the
    next lines and 3 of these 5 rows were lost."""
    responses = ["one", '"Titanic" is a film, she said', "three", 'he said "no"', "five"]
    rows, columns = read_table(_begin(tmp_path, responses))
    assert columns == HEADER.strip().split("\t")
    assert [r.fields["response"] for r in rows] == responses  # every row, its text as written
    assert [r.error for r in rows] == [None] * 5
    assert [r.line for r in rows] == [2, 3, 4, 5, 6]


def test_an_unclosed_quote_at_a_fields_start_loses_no_row(tmp_path):
    responses = ["one", '"well, I never', "three", "four", "five"]
    rows = read_rows(_begin(tmp_path, responses))
    assert [r.fields["response"] for r in rows] == responses and all(r.error is None for r in rows)


def test_a_file_a_quoting_writer_wrote_is_still_read_as_csv(tmp_path):
    texts = ['"Titanic" is a film', "a\ttab", "two\nlines", "plain"]
    path = tmp_path / "pandas.tsv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["response", "knowledge"])
        writer.writerows([[t, "k"] for t in texts])
    rows = read_rows(path)
    assert [r.fields["response"] for r in rows] == texts and all(r.error is None for r in rows)


def test_line_separators_inside_a_field_are_data(tmp_path):
    """U+2028, U+0085 and a form feed end no row (`str.splitlines` would split at each)."""
    responses = ["a\u2028b", "c\x85d", "e\x0cf", "g\u2029h\x1ci", "last"]
    path = _begin(tmp_path, responses)
    rows = read_rows(path)
    assert [r.fields["response"] for r in rows] == responses
    assert [r.line for r in rows] == [2, 3, 4, 5, 6] and all(r.error is None for r in rows)
    bad = tmp_path / "bad.tsv"  # a bad row after them is named by its line in the file
    bad.write_text("response\tknowledge\na\u2028b\tk\nc\x85d\tk\nno tab here\n", encoding="utf-8")
    rows = read_rows(bad)
    assert rows[2].error.startswith("line 4: ") and len(rows) == 3
