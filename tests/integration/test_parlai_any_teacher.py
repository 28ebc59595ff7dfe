"""`--metrics q2` over a ParlAI task that is not the project's (issue 36): `Q2Teacher --q2-task TASK`
builds TASK's teacher, forwards its messages and adds Q² to its report; a task whose messages carry
no knowledge field stops the run with one sentence."""

import csv
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("parlai")

from support.parlai_data import ANNOTATIONS, make_wow_datapath

pytestmark = pytest.mark.slow

WRAPPER = "parlai_ext.teachers:Q2Teacher"


@pytest.fixture(scope="module")
def wow(tmp_path_factory):
    return make_wow_datapath(tmp_path_factory.mktemp("wow"))


def engine_scores(tmp_path, pairs: list[tuple[str, str]]) -> list[float]:
    """`q2 score --tiny` on (response, knowledge) pairs: the expected values, from the command line."""
    src, out = tmp_path / "pairs.csv", tmp_path / "scores.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge"])
        w.writerows(pairs)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "q2_metric.cli",
            "score",
            str(src),
            "-o",
            str(out),
            "--tiny",
            "--device",
            "cpu",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 0, res.stderr[-2000:]
    with open(out, newline="", encoding="utf-8") as f:
        return [float(r["q2"]) for r in csv.DictReader(f)]


def test_wrapper_adds_q2_to_parlai_wow_generator(wow, tmp_path):
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    explain = tmp_path / "explain.jsonl"
    report = dict_report(
        EvalModel.main(
            task=WRAPPER,
            q2_task="wizard_of_wikipedia:Generator",
            model="repeat_label",
            datatype="valid",
            metrics="q2,f1",
            q2_tiny=True,
            q2_device="cpu",
            q2_batch_size=2,
            q2_explain_file=str(explain),
            datapath=str(wow),
            log_every_n_secs=-1,
            batchsize=2,
        )
    )
    # the data: the first 6 annotated rows, the last grounded on nothing (tests/support/parlai_data.py)
    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:6]
    assert (report["q2_scored"], report["q2_skipped"], report["q2_empty"]) == (5, 1, 0)
    assert report["exs"] == 6 and report["f1"] == pytest.approx(1.0)  # the wrapped task's own metrics
    lines = [json.loads(line) for line in explain.read_text().splitlines()]
    assert {line["teacher"] for line in lines} == {"wizard_of_wikipedia:Generator"}
    scored = sorted(
        (line["response"], line["knowledge"], line["q2"]) for line in lines if line["status"] == "scored"
    )
    assert [(r, k) for r, k, _ in scored] == sorted((r["gold"], r["knowledge"]) for r in rows[:5])
    assert sorted((line["episode_idx"], line["turn_idx"]) for line in lines) == [(i, 0) for i in range(6)]
    expected = engine_scores(tmp_path, [(r, k) for r, k, _ in scored])
    assert [q for _, _, q in scored] == pytest.approx(expected, abs=1e-6)
    assert report["q2"] == pytest.approx(sum(expected) / len(expected), abs=1e-6)


def test_wrapper_streamed_in_batches(wow, tmp_path):
    """ParlAI's default WoW teacher, streamed, three batch copies: every turn counted once; a
    streamed task does not say its positions in the data."""
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    explain = tmp_path / "explain.jsonl"
    report = dict_report(
        EvalModel.main(
            task=WRAPPER,
            q2_task="wizard_of_wikipedia",
            model="repeat_label",
            datatype="valid:stream",
            metrics="q2",
            q2_tiny=True,
            q2_device="cpu",
            q2_explain_file=str(explain),
            datapath=str(wow),
            log_every_n_secs=-1,
            batchsize=3,
        )
    )
    assert (report["exs"], report["q2_scored"], report["q2_skipped"], report["q2_empty"]) == (6, 5, 1, 0)
    lines = [json.loads(line) for line in explain.read_text().splitlines()]
    assert len(lines) == 6 and {(line["episode_idx"], line["turn_idx"]) for line in lines} == {(None, None)}


def test_task_without_knowledge_gets_one_sentence(tmp_path):
    """ParlAI's `integration_tests` teacher (no data to download) carries no knowledge field: the
    command stops with exit status 1 and one sentence, no traceback."""
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "parlai.scripts.eval_model",
            "-t",
            WRAPPER,
            "--q2-task",
            "integration_tests",
            "-m",
            "repeat_label",
            "--metrics",
            "q2",
            "--q2-tiny",
            "true",
            "--q2-device",
            "cpu",
            "--datapath",
            str(tmp_path),
            "--num-examples",
            "3",
            "--log-every-n-secs",
            "-1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    message = res.stderr.strip().splitlines()[-1]
    assert (
        message.startswith("Q² needs") and message.count(". ") == 0 and message.endswith(".")
    )  # one sentence
    for needed in ("checked_sentence", "knowledge field", "integration_tests", "wizard_of_wikipedia"):
        assert needed in message
    assert (res.stdout + res.stderr).count("Q² needs") == 1  # said once


def test_wrapper_needs_a_task(tmp_path):
    from parlai.scripts.eval_model import EvalModel

    from parlai_ext.options import Q2OptionValueError

    with pytest.raises(Q2OptionValueError, match="needs --q2-task"):
        EvalModel.main(task=WRAPPER, model="repeat_label", metrics="q2", q2_tiny=True, datapath=str(tmp_path))


PASSAGES = ["Bob Ross hosted The Joy of Painting.", "It aired on PBS from 1983 to 1994."]
KNOWLEDGE_TURNS = [  # (the gold reply, which repeat_label gives, and the message's knowledge)
    ("Bob Ross hosted The Joy of Painting on PBS.", PASSAGES),
    ("It aired from 1983.", {"first": "It aired on PBS.", "second": "Bob Ross hosted it."}),
    ("It aired on PBS.", 1983),
    ("Bob Ross painted in Paris.", "Bob Ross painted landscapes."),
    ("It aired in 1994.", tuple(PASSAGES)),
]


def _knowledge_teacher(name: str, turns):
    from parlai.core.teachers import DialogTeacher, register_teacher

    @register_teacher(name)
    class KnowledgeTeacher(DialogTeacher):
        def __init__(self, opt, shared=None):
            opt = {**opt, "datafile": name}
            self.id = name
            super().__init__(opt, shared)

        def setup_data(self, datafile):
            for reply, knowledge in turns:
                yield {"text": "Tell me about Bob Ross.", "labels": [reply], "knowledge": knowledge}, True

    return KnowledgeTeacher


def _eval_knowledge_task(task: str, tmp_path, monkeypatch):
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    from q2_metric.testing.scripted import scripted_scorer

    monkeypatch.setattr("parlai_ext.report.SCORER_FACTORY", scripted_scorer)
    explain = tmp_path / f"{task}.jsonl"
    report = dict_report(
        EvalModel.main(
            task=WRAPPER,
            q2_task=task,
            model="repeat_label",
            metrics="q2",
            q2_explain_file=str(explain),
            datapath=str(tmp_path),
            log_every_n_secs=-1,
        )
    )
    return report, [json.loads(line) for line in explain.read_text().splitlines()]


def test_knowledge_as_passages_is_scored_and_knowledge_that_is_no_text_is_a_bad_turn(tmp_path, monkeypatch):
    """A list of passages is knowledge, joined as every front-end joins them (`validation.knowledge_text`);
    a dict of several passages or a number is a bad turn: one sentence naming the turn and the field,
    the contract's status `bad`, and the other turns scored (before: all three skipped as "no knowledge",
    exit 0)."""
    from q2_metric.frontend import STATUSES
    from q2_metric.testing.scripted import scripted_scorer

    _knowledge_teacher("q2_knowledge_types", KNOWLEDGE_TURNS)
    report, lines = _eval_knowledge_task("q2_knowledge_types", tmp_path, monkeypatch)
    assert [line["status"] for line in lines] == ["scored", "bad", "bad", "scored", "scored"]
    assert {line["status"] for line in lines} <= set(STATUSES)  # the contract's statuses
    assert [line["reason"] for line in lines[1:3]] == [
        "episode 1 turn 0: field 'knowledge' must be a string, got dict.",
        "episode 2 turn 0: field 'knowledge' must be a string, got int.",
    ]
    joined = " ".join(PASSAGES)
    assert [line["knowledge"] for line in lines if line["status"] == "scored"] == [
        joined,
        "Bob Ross painted landscapes.",
        joined,
    ]
    replies = [reply for (reply, _), line in zip(KNOWLEDGE_TURNS, lines) if line["status"] == "scored"]
    expected = scripted_scorer().score(replies, [joined, "Bob Ross painted landscapes.", joined])
    # by rows that differ (1, 0.5, 1; the first is 0.75 against its first passage alone)
    assert [line["q2"] for line in lines if line["status"] == "scored"] == pytest.approx(expected.scores)
    assert len(set(expected.scores)) == 2
    assert (report["q2_scored"], report["q2_bad"], report["q2_skipped"]) == (3, 2, 0)


def test_a_task_whose_knowledge_is_all_passages_is_scored(tmp_path, monkeypatch):
    """Before: exit 1 with "None: no Wizard turn has a checked_sentence"."""
    turns = [(reply, PASSAGES) for reply in ("Bob Ross hosted it.", "It aired on PBS.", "It aired in 1983.")]
    _knowledge_teacher("q2_knowledge_passages", turns)
    report, lines = _eval_knowledge_task("q2_knowledge_passages", tmp_path, monkeypatch)
    assert report["q2_scored"] == 3 and [line["status"] for line in lines] == ["scored"] * 3
