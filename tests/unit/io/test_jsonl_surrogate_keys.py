"""JSONL keys that differ only in lone surrogates (JSON escapes such as \\ud800): both would be read
as the same column once the surrogates become U+FFFD, so the row is refused in one sentence naming
its line and both keys, and the other rows are scored."""

from q2_metric.corpus.files import score_file
from q2_metric.io import read_rows
from q2_metric.testing.scripted import scripted_scorer

GOOD = '{"response": "Rome is in Italy.", "knowledge": "Rome is the capital of Italy."}'
# Written as JSON escapes, as a file would hold them (a lone surrogate cannot be written as UTF-8).
COLLIDING = '{"response": "Paris.", "knowledge": "Paris is in France.", "\\ud800a": 1, "\\udc00a": 2}'
NESTED = '{"response": "Paris.", "knowledge": "Paris is in France.", "meta": {"\\ud800": 1, "\\ufffd": 2}}'
DISTINCT = '{"response": "Oslo.", "knowledge": "Oslo is in Norway.", "\\ud800a": 1, "\\ud800b": 2}'


def test_keys_equal_but_for_lone_surrogates_are_refused(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([GOOD, COLLIDING, NESTED, DISTINCT, GOOD]) + "\n", encoding="utf-8")
    rows = read_rows(path)
    assert [r.error is None for r in rows] == [True, False, False, True, True]
    assert rows[1].error == (
        "line 2: the keys '\\ud800a' and '\\udc00a' differ only in lone surrogates, which "
        "are read as U+FFFD, so both would be the column '\ufffda'; rename one"
    )
    assert rows[2].error.startswith("line 3: the keys '\\ud800' and '\ufffd' differ only in lone surrogates")
    for row in rows[1:3]:
        row.error.encode("utf-8")  # printable and writable: no lone surrogate in the message
    assert sorted(k for k in rows[3].fields if k.endswith(("a", "b")) and k[0] == "\ufffd") == [
        "\ufffda",
        "\ufffdb",
    ]


def test_the_rest_of_the_file_is_scored(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([GOOD, COLLIDING, GOOD.replace("Rome", "Bern")]) + "\n", encoding="utf-8")
    report = score_file(scripted_scorer(), path, tmp_path / "out.jsonl", cache_dir=None)
    assert report.num_bad == 1 and report.bad_rows[0].startswith("line 2: the keys '\\ud800a' and '\\udc00a'")
    assert report.num_rows == 3 and report.num_scored_now == 2
    out = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(out) == 3
