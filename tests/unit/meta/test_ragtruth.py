"""RAGTruth as released: its two files, the default selection, the knowledge per task type, bad rows
by id, and the figures under both definitions.

Expected figures are counted by hand in the comments. LettuceDetect's character definition is
re-typed from its `lettucedetect/models/evaluator.py` (`evaluate_detector_char_level`): per sample
the predicted lengths, the gold lengths and the overlap of every (predicted, gold) pair are summed;
precision = overlap / predicted if predicted > 0 else 0, recall likewise, F1 0 when P + R = 0.
"""

import json

import pytest
from support.ragtruth import QA_P, QA_Q, R1, SUMMARY, write_ragtruth

from q2_metric.meta.datasets import load_datasets
from q2_metric.meta.ragtruth import (
    RagTruthError,
    char_lettucedetect,
    char_ragtruth,
    read_ragtruth,
    read_span_predictions,
    response_level,
    score_figures,
    span_figures,
)


@pytest.fixture
def ragtruth(tmp_path):
    return write_ragtruth(tmp_path / "ragtruth")


def test_default_selection_counts_and_bad_rows(ragtruth):
    rows = read_ragtruth(ragtruth)
    assert rows.ids == ["1", "2", "3", "10"]
    sel = rows.selection
    # 10 rows: 1 train, 2 of other quality (truncated, incorrect_refusal), 3 bad (7, 8, 9), 4 kept
    assert (sel["rows"], sel["kept"], sel["bad"]) == (10, 4, 3)
    assert sel["left_out_by_split"] == {"train": 1}
    assert sel["left_out_by_quality"] == {"incorrect_refusal": 1, "truncated": 1}
    assert sel["kept_by_task"] == {"QA": 1, "Summary": 2, "Data2txt": 1}
    assert [b.split(": ")[0] for b in rows.bad] == [
        "response.jsonl line 7 (id 7)",
        "response.jsonl line 8 (id 8)",
        "response.jsonl line 9 (id 9)",
    ]
    assert "task_type 'Chat'" in rows.bad[0]
    assert "field 'labels' item 0" in rows.bad[1] and "4 characters" in rows.bad[1]
    assert "field 'source_id' s9 is not in source_info.jsonl" in rows.bad[2]
    assert rows.gold == [[(5, 15), (10, 20)], [], [(0, 4)], []]


def test_knowledge_per_task_type(ragtruth):
    rows = read_ragtruth(ragtruth)
    know = dict(zip(rows.ids, rows.knowledge))
    assert know["1"] == f"{QA_Q}\n{QA_P}"  # QA: the question, then the passages
    assert know["2"] == SUMMARY  # Summary: the source text
    assert know["3"] == "name: Cafe Uno\nattributes.WiFi: free\nreview_info.1.review_stars: 4"
    prompt = read_ragtruth(ragtruth, grounding="prompt")
    assert dict(zip(prompt.ids, prompt.knowledge)) == {"1": "P1", "2": "P2", "3": "P3", "10": "P2"}


def test_all_rows_when_asked(ragtruth):
    rows = read_ragtruth(ragtruth, split="all", quality="all")
    # every row but the 3 bad ones
    assert rows.ids == ["1", "2", "3", "4", "5", "6", "10"]
    assert rows.selection["left_out_by_split"] == {} and rows.selection["left_out_by_quality"] == {}


def test_dataset_by_layout(ragtruth):
    (ds,) = load_datasets([f"rt={ragtruth}"])
    assert ds.format == "ragtruth"
    assert ds.consistent == [0, 1, 0, 1]  # hallucinated iff at least one labelled span
    assert ds.summary()["selection"]["kept"] == 4 and len(ds.summary()["bad_rows"]) == 3


# gold spans of responses 1, 2, 3 and a metric's predicted spans
GOLD = [[(5, 15), (10, 20)], [], [(0, 4)]]
PRED = [[(8, 12)], [(0, 3)], []]


def test_character_level_ragtruth_sets():
    # response 1: G = 5..19 (15 chars), P = 8..11 (4), |P∩G| = 4; response 2: P 3 chars, G none;
    # response 3: G 4 chars, P none. tp 4, predicted 7, gold 19.
    f = char_ragtruth(GOLD, PRED)
    assert (f["tp"], f["predicted"], f["gold"]) == (4, 7, 19)
    assert f["precision"] == pytest.approx(4 / 7) and f["recall"] == pytest.approx(4 / 19)
    assert f["f1"] == pytest.approx(4 / 13)  # 2 * (4/7)(4/19) / (4/7 + 4/19) = 32/104


def test_character_level_lettucedetect_pairwise():
    # response 1: predicted 4, gold 10 + 10 = 20, overlaps (8,12)&(5,15) = 4 and (8,12)&(10,20) = 2;
    # response 2: predicted 3; response 3: gold 4. overlap 6, predicted 7, gold 24.
    f = char_lettucedetect(GOLD, PRED)
    assert (f["overlap"], f["predicted"], f["gold"]) == (6, 7, 24)
    assert f["precision"] == pytest.approx(6 / 7) and f["recall"] == pytest.approx(1 / 4)
    assert f["f1"] == pytest.approx(12 / 31)  # 2 * (6/7)(1/4) / (6/7 + 1/4) = (12/28) / (31/28)


def test_nothing_to_divide_by_none_in_ours_zero_in_theirs():
    ours, theirs = char_ragtruth([[]], [[]]), char_lettucedetect([[]], [[]])
    assert (ours["precision"], ours["recall"], ours["f1"]) == (None, None, None)
    assert (theirs["precision"], theirs["recall"], theirs["f1"]) == (0, 0, 0)


def test_response_level_of_spans_and_of_scores():
    # spans: hallucinated [T, F, T], flagged [T, T, F]: tp 1, flagged 2, hallucinated 2
    f = span_figures(["1", "2", "3"], GOLD, PRED)
    assert f["response"]["precision"] == 0.5 and f["response"]["recall"] == 0.5 and f["response"]["f1"] == 0.5
    assert response_level([True, False], [False, False])["precision"] is None  # nothing flagged
    # scores 0.2, 0.5, 0.9 and an unscored 4th: flagged iff <= 0.5: [T, T, F] against [T, F, T, F]
    s = score_figures(["1", "2", "3", "10"], GOLD + [[]], [0.2, 0.5, 0.9, None], 0.5)
    assert s["unscored"] == ["10"] and s["responses"] == 3
    assert (s["response"]["tp"], s["response"]["predicted"], s["response"]["gold"]) == (1, 2, 2)


def test_span_predictions_file(tmp_path):
    ids, responses = ["1", "2"], [R1, "The council approved the park."]
    good = tmp_path / "pred.jsonl"
    good.write_text(json.dumps({"id": "1", "spans": [{"start": 8, "end": 12}]}) + "\n")
    name, pred = read_span_predictions(f"lettuce={good}", ids, responses)
    assert name == "lettuce" and pred == [[(8, 12)], None]  # response 2 not in the file: unscored
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(json.dumps({"id": "99", "spans": []}) + "\n")
    with pytest.raises(RagTruthError, match="line 1: field 'id' '99' is no kept row"):
        read_span_predictions(f"x={unknown}", ids, responses)
    beyond = tmp_path / "beyond.jsonl"
    beyond.write_text(json.dumps({"id": "1", "spans": [{"start": 0, "end": 99}]}) + "\n")
    with pytest.raises(RagTruthError, match=r"line 1 \(id 1\): field 'spans' item 0"):
        read_span_predictions(f"x={beyond}", ids, responses)


def test_cli_prints_both_definitions_and_the_selection(ragtruth, tmp_path, capsys):
    """`q2 meta-eval --dataset ragtruth=DIR` with a metric's scores and its span predictions (no
    model): the selection's counts, the bad rows by id, both character definitions."""
    from q2_metric.cli import main

    judge = tmp_path / "judge.csv"  # kept rows 1, 2, 3, 10 are rt:1 .. rt:4
    judge.write_text("id,score\nrt:1,0.2\nrt:2,0.5\nrt:3,0.9\nrt:4,0.7\n")
    spans = tmp_path / "spans.jsonl"  # response 10 has no line: unscored by it
    spans.write_text(
        "".join(
            json.dumps({"id": rid, "spans": [{"start": s, "end": e} for s, e in p]}) + "\n"
            for rid, p in zip(["1", "2", "3"], PRED)
        )
    )
    out = tmp_path / "bench"
    code = main(
        ["meta-eval", "--baselines-only", "--no-bertscore", "--dataset", f"rt={ragtruth}",
         "--scores", f"judge={judge}", "--ragtruth-spans", f"lettuce={spans}", "--bootstrap", "20",
         "--out-dir", str(out)]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Of 10 rows, 4 kept (QA 1, Summary 2, Data2txt 1), 3 bad" in printed
    assert "left out by split: train 1; by quality: incorrect_refusal 1, truncated 1" in printed
    assert "- response.jsonl line 7 (id 7): its source s4 has task_type 'Chat'" in printed
    assert "**RAGTruth's** (character sets" in printed and "**LettuceDetect's** (pairwise overlaps" in printed
    report = json.loads((out / "benchmark.json").read_text())["ragtruth"]["rt"]
    lettuce = report["metrics"]["lettuce spans"]
    # response 10 (gold: none) is left out: the figures of test_character_level_* above
    assert lettuce["unscored"] == ["10"]
    assert lettuce["character_ragtruth"]["f1"] == pytest.approx(4 / 13)
    assert lettuce["character_lettucedetect"]["f1"] == pytest.approx(12 / 31)
    # judge: flagged iff <= 0.5: responses 1, 2 (0.2, 0.5); hallucinated 1, 3: tp 1 of 2, 1 of 2
    assert report["metrics"]["judge"]["response"]["f1"] == 0.5
    row = "| lettuce spans | 3 | 1 | 0.500 | 0.500 | 0.500 | 0.571 | 0.211 | 0.308 | 0.857 | 0.250 | 0.387 |"
    assert row in printed  # 4/7, 4/19, 4/13; 6/7, 1/4, 12/31
    assert "| rt | response-level F1 | 0.7922 | LettuceDetect-large-v1 (" in printed


# -- round seven: ids given twice, line separators, limits, depth, one file of two, null fields --


def test_a_response_id_given_twice_is_refused_naming_file_line_and_id(tmp_path):
    """Before, the second row's id bound the first's predictions to it: exit 0, F1 0.667 for 1.000."""
    from support.ragtruth import row

    responses = [row("1", "s1", R1, [(0, 3)]), row("2", "s2", "The council met."), row("1", "s2", "Other.")]
    folder = write_ragtruth(tmp_path / "rt", responses)
    with pytest.raises(
        RagTruthError, match=r"response\.jsonl line 3: id 1 is given twice \(first on line 1\)"
    ):
        read_ragtruth(folder)
    with pytest.raises(Exception, match=r"--dataset rt .*line 3: id 1 is given twice"):
        load_datasets([f"rt={folder}"])


def test_a_spans_row_given_twice_is_refused(tmp_path):
    ids, responses = ["1", "2"], [R1, "The council approved the park."]
    spans = tmp_path / "pred.jsonl"
    spans.write_text(
        json.dumps({"id": "1", "spans": [{"start": 0, "end": 3}]})
        + "\n"
        + json.dumps({"id": "2", "spans": []})
        + "\n"
        + json.dumps({"id": "1", "spans": []})
        + "\n"
    )
    with pytest.raises(RagTruthError, match=r"pred\.jsonl line 3: id 1 is given twice \(first on line 1\)"):
        read_span_predictions(f"x={spans}", ids, responses)


@pytest.mark.parametrize("sep", ["\u2028", "\x85", "\u2029"])
def test_a_line_separator_inside_a_response_is_part_of_it(tmp_path, sep):
    """str.splitlines split a response at these: extra bad rows, and bad rows on the wrong line."""
    from support.ragtruth import row

    text = f"Bob Ross{sep}painted it."
    responses = [row("1", "s1", text, [(0, 3)]), row("2", "s2", "The council met."), row("3", "s9", "Who.")]
    folder = write_ragtruth(tmp_path / "rt", responses=[])  # the sources
    (folder / "response.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in responses), encoding="utf-8"
    )
    rows = read_ragtruth(folder)
    assert rows.ids == ["1", "2"] and rows.response[0] == text and rows.selection["rows"] == 3
    assert [b.split(": ")[0] for b in rows.bad] == ["response.jsonl line 3 (id 3)"]


def test_the_size_limit_and_depth_apply_to_ragtruth_and_spans_files(ragtruth, tmp_path, monkeypatch):
    spans = tmp_path / "pred.jsonl"
    spans.write_text(json.dumps({"id": "1", "spans": []}) + "\n")
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"id": "1", "spans": ' + "[" * 5000 + "]" * 5000 + "}\n")
    with pytest.raises(RagTruthError, match=r"deep\.jsonl line 1: the JSON is nested more than 100 levels"):
        read_span_predictions(f"x={deep}", ["1"], [R1])
    (ragtruth / "response.jsonl").write_text(
        (ragtruth / "response.jsonl").read_text() + '{"id": ' + "[" * 5000 + "]" * 5000 + "}\n"
    )
    rows = read_ragtruth(ragtruth)  # one bad row naming its line, no RecursionError
    assert rows.bad[-1].startswith("response.jsonl line 11: the JSON is nested more than 100 levels")
    monkeypatch.setenv("Q2_MAX_INPUT_BYTES", "100")
    with pytest.raises(RagTruthError, match="above the limit of 100 bytes"):
        read_ragtruth(ragtruth)
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"id": "1", "spans": []}) * 10 + "\n")
    with pytest.raises(RagTruthError, match="above the limit of 100 bytes"):
        read_span_predictions(f"x={big}", ["1"], [R1])


@pytest.mark.parametrize("present", ["response.jsonl", "source_info.jsonl"])
def test_a_folder_with_one_of_the_two_files_names_the_missing_one(ragtruth, present):
    missing = next(f for f in ("response.jsonl", "source_info.jsonl") if f != present)
    (ragtruth / missing).unlink()
    with pytest.raises(
        Exception, match=f"holds RAGTruth's {present} but not its {missing}; add {missing}"
    ) as err:
        load_datasets([f"rt={ragtruth}"])
    assert "dodeca" not in str(err.value)


def test_data2txt_keeps_null_and_empty_fields(tmp_path):
    """RAGTruth's `due_to_null` labels mark claims about null fields: the knowledge shows them."""
    from support.ragtruth import SOURCES, row

    data = {"name": "Cafe Uno", "attributes": {"WiFi": None, "Parking": "", "Tags": []}, "hours": {}}
    sources = [*SOURCES[:2], {**SOURCES[2], "source_info": data}]
    folder = write_ragtruth(tmp_path / "rt", [row("3", "s3", "Cafe Uno has free WiFi.", [(13, 22)])], sources)
    (know,) = read_ragtruth(folder).knowledge
    assert (
        know
        == 'name: Cafe Uno\nattributes.WiFi: null\nattributes.Parking: ""\nattributes.Tags: []\nhours: {}'
    )
