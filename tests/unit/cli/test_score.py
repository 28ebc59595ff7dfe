"""`q2 score` before any model runs: input errors, the user's columns, option values, the help and the
line that says what was scored."""

from __future__ import annotations

import pytest
from support.cli import refused
from support.files import HEADER, ROWS, read_csv, snapshot, write

from q2_metric.cli import main
from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer


def test_done_line_accounts_for_every_row():
    from q2_metric.cli.score import done_line
    from q2_metric.corpus.files import ScoreReport
    from q2_metric.steps.system_score import SystemScore

    system = SystemScore(0.5, 0.5, 1.0, 0.0, 149, 149, 0, 10)
    report = ScoreReport(
        system, num_rows=151, num_bad=1, num_cached=0, num_scored_now=149, bad_rows=[], signature="s"
    )
    # 151 rows: 1 malformed, 149 distinct pairs scored, so 1 repeats another row's pair
    assert done_line(report, "o.csv") == (
        "Scored 150/151 rows (149 now, 0 from the cache) -> o.csv\n1 row repeats the (response, knowledge) pair "
        "of an earlier row and gets its score (each pair is scored once)."
    )


def test_score_help_names_the_default_columns(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: response)" in text and "(default: knowledge)" in text and "--tiny" in text


def test_score_help_leads_with_a_description_three_examples_and_tiny(capsys, monkeypatch):
    """`q2 score --help` was 135 lines with no example at the top and `--tiny` last."""
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("usage: q2 score INPUT -o OUTPUT") and lines[1] == ""
    assert lines[2].startswith("Score each response") and lines[2].endswith(".")  # one line
    examples = [x for x in lines[:10] if x.startswith("  q2 score ")]
    assert len(examples) == 3 and "--tiny" in examples[0]
    assert all(len(x) <= 80 for x in lines[:10])
    flags = [x.split()[0] for x in lines if x.startswith("  -")]
    assert flags.index("--tiny") <= 3, flags  # after -h and -o


@pytest.mark.parametrize(
    "column, prefix",
    [
        ("q2", ""),
        ("reason", ""),
        ("error", ""),
        ("num_questions", ""),
        ("dodeca_q2", "dodeca_"),
        ("dodeca_error", "dodeca_"),
    ],
)
def test_input_columns_the_output_writes_are_refused(tmp_path, capsys, column, prefix):
    data = tmp_path / "in.csv"
    data.write_text(f"response,knowledge,{column}\nParis is big.,Paris is big.,mine\n")
    before = snapshot(data)
    argv = ["score", str(data), "-o", str(tmp_path / "o.csv"), "--no-cache"] + (
        ["--prefix", prefix] if prefix else []
    )
    refused(capsys, argv, f"already has the column '{column}'", "--prefix")
    assert snapshot(data) == before and not (tmp_path / "o.csv").exists()
    # with another prefix the column is kept as it was
    score_file(scripted_scorer(), data, tmp_path / "o.csv", cache_dir=None, prefix="new_")
    [row] = read_csv(tmp_path / "o.csv")
    assert row[column] == "mine" and row["new_q2"] != ""


def test_same_column_as_response_and_knowledge_is_refused(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text(HEADER + ROWS)
    refused(
        capsys,
        ["score", str(data), "-o", str(tmp_path / "o.csv"), "--knowledge-col", "response", "--no-cache"],
        "both 'response'",
    )


def test_cli_batch_size_zero_is_one_sentence(tmp_path, capsys):
    from q2_metric.cli import main

    (tmp_path / "in.csv").write_text(HEADER + "a,b\n")
    assert (
        main(
            [
                "score",
                str(tmp_path / "in.csv"),
                "-o",
                str(tmp_path / "o.csv"),
                "--batch-size",
                "0",
                "--no-cache",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err == "q2: Invalid Q² option --batch-size=0: use an integer >= 1.\n"


def test_cli_input_errors_exit_2_before_models(tmp_path, capsys):
    """The paper's default models are not available here: each input error must come first."""
    from q2_metric.cli import main

    latin = write(tmp_path, HEADER + "Café.,Café.\n", "latin.csv", encoding="latin-1")
    nocol = write(tmp_path, "reply,knowledge\n" + "a,b\n" * 300, "nocol.csv")
    empty = write(tmp_path, HEADER, "empty.csv")
    cases = [
        (
            [str(latin), "-o", str(tmp_path / "o.csv")],
            f"q2: The input file '{latin}' is not valid utf-8: byte 0xe9 "
            "at offset 22 (line 2) cannot be decoded; pass the file's encoding with --encoding (e.g. --encoding "
            "latin-1).\n",
        ),
        (
            [str(tmp_path / "missing.csv"), "-o", str(tmp_path / "o.csv")],
            f"q2: The input file '{tmp_path / 'missing.csv'}' does not exist; check the path.\n",
        ),
        (
            [str(nocol), "-o", str(tmp_path / "o.csv")],
            f"q2: The input file '{nocol}' has no column 'response' "
            "(its columns: 'reply', 'knowledge'); name the right one with --response-col.\n",
        ),
        (
            [str(empty), "-o", str(tmp_path / "o.csv")],
            f"q2: The input file '{empty}' has no data rows; pass "
            "--allow-empty (allow_empty=True) to write an empty output anyway.\n",
        ),
        (
            [str(empty), "-o", str(tmp_path)],
            f"q2: The output '{tmp_path}' (-o/--output) contains the input '{empty}'; write the output "
            "somewhere else, so that the input is kept as it is.\n",
        ),
        (
            [str(empty), "-o", str(empty)],
            f"q2: The output '{empty}' (-o/--output) is the input '{empty}'; write the output somewhere "
            "else, so that the input is kept as it is.\n",
        ),
    ]
    for args, stderr in cases:
        assert main(["score", *args, "--no-cache"]) == 2
        assert capsys.readouterr().err == stderr
    assert not (tmp_path / "o.csv").exists() and empty.read_text() == HEADER
    assert main(["demo", "--input", str(latin)]) == 2  # the demo reads its input the same way
    assert capsys.readouterr().err == cases[0][1]
