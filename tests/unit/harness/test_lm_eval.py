"""lm-eval's Q² tasks (q2_metric.harness.lm_eval) on scripted components: documents, prompts,
options and file errors in lm-eval's words, the models checked when the documents are built, and
the aggregation (counts, the full signature, the per-reply results in the sample records).

The yardstick is `Q2Scorer.score` called directly on the same pairs (the engine itself)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from q2_metric.display import reason_line
from q2_metric.errors import ModelNotAvailable, Q2InputError, Q2OptionError
from q2_metric.harness import lm_eval as L
from q2_metric.runtime import cache
from q2_metric.testing.scripted import scripted_scorer

PAIRS = [
    ("Bob Ross hosted The Joy of Painting on PBS.", "Bob Ross hosted The Joy of Painting on PBS."),
    (
        "The show aired in Canada and Europe.",
        "The show aired on PBS in the United States and also in Canada.",
    ),
    ("", "Knowledge with no reply."),
    ("i like it", "The Micro-pigs are small pigs."),
    ("   ", "Paris is the capital and most populous city of France."),
    ("Ross died in Orlando.", "Ross died of lymphoma in Orlando, Florida."),
]
OPTIONS = json.dumps({"tiny": False})


def records(pairs=PAIRS, unread="[]"):
    docs = [
        {"knowledge": k, "q2_key": f"doc {i}", "q2_options": OPTIONS, "q2_unread": unread}
        for i, (_, k) in enumerate(pairs)
    ]
    return [L.process_results(d, [f" {r}\n"]) for d, (r, _) in zip(docs, pairs)]


def test_documents_and_prompts(tmp_path, scripted):
    wow = L.wow_dataset(q2_options={"tiny": False}, limit_contexts=3)["test"]
    assert len(wow) == 3 and set(wow.column_names) >= {
        "topic",
        "message",
        "knowledge",
        "q2_options",
        "q2_key",
    }
    assert wow[2]["q2_key"] == "doc 2"
    prompt = L.wow_doc_to_text(wow[0])
    assert prompt.startswith("Topic: ") and wow[0]["message"] in prompt and prompt.endswith("Wizard:")
    path = tmp_path / "dialogues.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["knowledge", "history"])
        w.writerow(["Bob Ross hosted a show.", "Hi! ||| Hello, what do you like? ||| I like Bob Ross."])
        w.writerow(["Paris is in France.", "Where is Paris?"])
    docs = L.dialogue_dataset(path=str(path), q2_options=OPTIONS)["test"]
    assert docs[0]["history"] == ["Hi!", "Hello, what do you like?", "I like Bob Ross."]
    assert [d["q2_key"] for d in docs] == ["row 1", "row 2"]
    assert L.dialogue_doc_to_text(docs[0]).splitlines() == [
        "Knowledge: Bob Ross hosted a show.",
        "User: Hi!",
        "Assistant: Hello, what do you like?",
        "User: I like Bob Ross.",
        "Assistant:",
    ]
    item = L.process_results(docs[1], [" Paris is in France.\n"])
    assert item["q2"]["reply"] == "Paris is in France." and item["q2"]["knowledge"] == "Paris is in France."
    assert set(item) == set(L.FIGURES)


def test_unreadable_rows_are_reported_with_their_row_and_counted_as_bad(tmp_path, scripted, capsys):
    path = tmp_path / "dialogues.jsonl"
    lines = [
        {"knowledge": "Paris is in France.", "history": "Where is Paris?"},
        {"knowledge": 5, "history": "Hi"},
        {"knowledge": "Bob Ross hosted a show.", "history": "Hi! ||| I like Bob Ross."},
        {"knowledge": "Gardening is relaxing.", "history": {"turn": "x"}},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    docs = L.dialogue_dataset(path=str(path), q2_options=OPTIONS)["test"]
    assert [d["q2_key"] for d in docs] == ["row 1", "row 3"]
    assert docs[1]["history"] == ["Hi!", "I like Bob Ross."]
    err = capsys.readouterr().err
    assert "q2_dialogue: row 2 (line 2: field 'knowledge'" in err and "row 4 (line 4: field 'history'" in err
    assert "row 1" not in err and "row 3" not in err
    recs = [L.process_results(d, [" A reply."]) for d in docs]
    items = [r["bad"] for r in recs]
    assert L.agg_bad(items) == 2 and L.agg_scored(items) == 2 and L.agg_empty(items) == 0


def test_aggregation_scores_the_run_once_and_reports_counts_signature_and_each_reply(scripted, capsys):
    recs = records()
    figures = {name: getattr(L, f"agg_{name}")([r[name] for r in recs]) for name in L.FIGURES}
    assert scripted.engine_calls == 1 and scripted.replies == len(PAIRS)
    want = scripted_scorer().score([r for r, _ in PAIRS], [k for _, k in PAIRS])
    assert figures["q2"] == want.q2 and figures["q2_no_nli"] == want.q2_no_nli
    assert figures["coverage"] == want.coverage
    # two empty replies: counted, unscored, never hidden behind the coverage
    assert (figures["scored"], figures["empty"], figures["bad"]) == (4, 2, 0)
    # the results (lm-eval's table) hold the short form; each record the full signature
    assert figures["signature"] == want.signature.short()
    assert {r["q2"]["signature"] for r in recs} == {str(want.signature)}
    # each reply's result is in its record (which lm-eval writes to the --log_samples file)
    for rec, r in zip(recs, want.responses):
        got = rec["q2"]
        assert (got["q2"] is None) if math.isnan(r.q2) else got["q2"] == r.q2
        assert got["status"] == ("empty" if math.isnan(r.q2) else "scored")
        assert got["reason"] == reason_line(r)
        json.dumps(got)  # lm-eval writes it as JSON
    err = capsys.readouterr().err
    assert "Q²: 4 scored, 2 empty (unscored), 0 bad" in err and f"Q² signature: {want.signature}" in err
    assert "1/6 candidates" in err and "all 6 stages done" in err  # a line per stage while it aggregates
    assert "meaningless" not in err  # the scripted components are no tiny random models


def test_max_batch_splits_the_run_and_one_set_of_options_per_run(scripted):
    three = json.dumps({"tiny": False, "max_batch": 4})
    recs = records(PAIRS * 3)
    for r in recs:
        r["q2"]["options"] = three
    want = scripted_scorer().score([r for r, _ in PAIRS * 3], [k for _, k in PAIRS * 3])
    assert L.agg_q2([r["q2"] for r in recs]) == want.q2
    assert cache.engines() == [scripted] and scripted.engine_calls == math.ceil(18 / 4)
    mixed = [r["q2"] for r in records()[:2]] + [recs[0]["q2"]]
    with pytest.raises(Q2OptionError, match="sets of q2_options"):
        L.agg_q2(mixed)


def test_option_errors_are_one_sentence_in_lm_evals_words(scripted):
    cases = [
        ({"decoding": "x", "tiny": False}, "Invalid Q² option q2_options[\"decoding\"]='x'"),
        ({"qg_batchsize": 3, "tiny": False}, 'q2_options["qg_batchsize"]\' is not a Q² option'),
        ("{not json", "Invalid q2_options in --metadata"),
        ([1, 2], "Invalid q2_options in --metadata"),
    ]
    for options, start in cases:
        with pytest.raises(Q2OptionError) as err:
            L.wow_dataset(q2_options=options)
        text = str(err.value)
        assert start in text and "\n" not in text and "--qg" not in text and "--decoding" not in text, text
    with pytest.raises(Q2InputError, match="--metadata"):
        L.dialogue_dataset(q2_options=OPTIONS)


def test_file_errors_name_the_metadata_keys_not_q2_score_flags(tmp_path, scripted):
    path = tmp_path / "d.csv"
    path.write_text("knowledge,turns\nParis is in France.,Where is Paris?\n", encoding="utf-8")
    with pytest.raises(Q2InputError) as err:
        L.dialogue_dataset(path=str(path), q2_options=OPTIONS)
    assert '"history_col" in --metadata' in str(err.value) and "--response-col" not in str(err.value)
    empty = tmp_path / "e.csv"
    empty.write_text("knowledge,history\n", encoding="utf-8")
    with pytest.raises(Q2InputError) as err:
        L.dialogue_dataset(path=str(empty), q2_options=OPTIONS)
    assert "--allow-empty" not in str(err.value) and "no data rows" in str(err.value)


def test_a_missing_model_is_found_when_the_documents_are_built(tmp_path, monkeypatch):
    """Before lm-eval generates anything: the documents are built first, and they check the models."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache.reset()
    missing = str(tmp_path / "nothing-here")
    with pytest.raises(ModelNotAvailable) as err:
        L.wow_dataset(q2_options={"tiny": True, "qg_model": missing}, limit_contexts=2)
    text = str(err.value)
    assert missing in text and 'q2_options["qg_model"]' in text and "--qg-model" not in text
    cache.reset()


def test_evaluate_route_aggregation():
    """What lm-eval keeps of the `evaluate` module's per-reply outputs, aggregated by key."""
    per_reply = [
        {"q2": 1.0, "num_responses": 1, "scores": [1.0], "signature": "S"},
        {"q2": None, "num_responses": 1, "scores": [None], "signature": "S"},
        {"q2": 0.5, "num_responses": 1, "scores": [0.5], "signature": "S"},
    ]
    assert L.evaluate_figure([d["q2"] for d in per_reply]) == 0.75
    assert L.evaluate_figure([d["num_responses"] for d in per_reply]) == 3
    assert L.evaluate_figure([d["scores"] for d in per_reply]) == 0.75
    assert L.evaluate_figure([d["signature"] for d in per_reply]) == "S"
    assert L.evaluate_figure([None, None]) == "n/a"


def _metric_directions(yaml_name: str) -> dict[str, object]:
    """metric name -> higher_is_better, as lm-eval reads a task YAML of the package (a callable
    metric `!function utils.NAME` is named NAME)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    config = yaml.load((Path(L.__file__).parent / "lm_eval_tasks" / yaml_name).read_text(), Loader=Loader)
    return {m["metric"].removeprefix("utils."): m.get("higher_is_better") for m in config["metric_list"]}


def test_the_table_is_narrow_and_marks_each_figure_by_its_direction(scripted):
    """lm-eval's table was 441 characters wide (the full signature in its row) and marked
    lower-is-better figures with an up arrow: the signature row holds the short form, and every
    figure has its own direction (none for the signature and plain counts)."""
    from lm_eval.utils import make_table

    recs = records()
    directions = _metric_directions("_q2_default_template_yaml")
    results = {f"{name},none": getattr(L, f"agg_{name}")([r[name] for r in recs]) for name in L.FIGURES}
    table = make_table(
        {
            "results": {"q2_wow": results},
            "versions": {"q2_wow": 1.0},
            "higher_is_better": {"q2_wow": directions},
        }
    )
    rows = {line.split("|")[5].strip(): line for line in table.splitlines()[2:]}
    assert max(len(line) for line in table.splitlines()) < 160, table  # 441 with the full signature
    assert "↓" in rows["empty"] and "↓" in rows["bad"] and "↑" in rows["q2"]
    assert "↑" not in rows["signature"] and "↓" not in rows["signature"]

    # the `evaluate` route: lm-eval gives each key of `compute`'s result q2's direction unless the
    # YAML declares it (by a metric that computes nothing under the key's name)
    import evaluate

    import q2_metric

    declared = _metric_directions("q2_wow_evaluate.yaml")
    for name in set(declared) - {"q2"}:
        assert (
            getattr(L, name).__name__ == name and getattr(L, name)(references=["k"], predictions=["r"]) == {}
        )
    out = evaluate.load(q2_metric.module_path()).compute(
        predictions=["it aired"], references=["It aired."], tiny=True
    )
    direction = {key: declared.get(key, declared["q2"]) for key in out}
    assert direction["no_answer_share"] is False and direction["num_skipped"] is False
    assert direction["signature"] is None and direction["num_responses"] is None
    assert direction["q2"] is True and direction["q2_no_nli"] is True


def test_lm_evals_git_lookup_is_quiet_outside_a_repository(tmp_path, monkeypatch, capfd):
    """lm-eval logs the git commit of the folder it runs in: from a folder that is no repository,
    git printed "fatal: not a git repository" at every run with Q²'s tasks. The lookup lm-eval's
    evaluator makes is now quiet, and gives lm-eval's own fallback (None here)."""
    import lm_eval.evaluator

    import q2_metric.harness.lm_eval  # noqa: F401 (loading Q²'s tasks imports it)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # no repository above either
    assert lm_eval.evaluator.get_git_commit_hash() is None
    assert "fatal" not in capfd.readouterr().err
