"""Progress per stage: model-input counts, batch by batch, lines off a terminal and bars on one."""

from __future__ import annotations

import sys

from q2_metric import Q2Scorer
from q2_metric.progress import DONE, STAGES
from q2_metric.testing.scripted import scripted_scorer


def test_progress_counts_model_inputs_per_stage():
    """Scripted models on two responses: 'Bob Ross hosted PBS.' has candidates Bob Ross, PBS (capitalised
    words), 'Bob Ross hosted it.' has Bob Ross: 3 distinct (candidate, response) pairs for the question
    generator; the question filter parses the 2 distinct questions (personal filter) and asks the 3
    (question, response) pairs; the knowledge is asked 2 distinct (question, knowledge) pairs, answers
    Bob Ross the same way (no NLI) and has no PBS (no answer, no NLI); no fallback."""
    seen = []
    scripted_scorer().score(
        ["Bob Ross hosted PBS.", "Bob Ross hosted it."],
        ["Bob Ross hosted it."] * 2,
        progress=lambda *report: seen.append(report),
    )
    final = {}
    for stage, done, total in seen:
        final[stage] = (done, total)
    assert list(dict.fromkeys(s for s, _, _ in seen)) == [*STAGES, DONE]
    assert final["candidates"] == (2, 2) and final["questions"] == (3, 3)
    assert final["question filter"] == (5, 5) and final["knowledge answers"] == (2, 2)
    assert final["span scores"] == (0, 0) and final["response scores"] == (0, 0)
    assert all(done <= total for _, done, total in seen)


def test_progress_advances_batch_by_batch(tiny_config):
    """With one input per batch, the question stage reports each input as it is done."""
    seen = []
    scorer = Q2Scorer(tiny_config.replace(qg_batch_size=1, decoding="greedy", max_question_length=4))
    scorer.score(
        ["bob ross hosted the joy of painting on pbs"],
        ["Bob Ross hosted it."],
        progress=lambda *report: seen.append(report),
    )
    done = [d for stage, d, total in seen if stage == "questions"]
    total = max(t for stage, _, t in seen if stage == "questions")
    # the stage starts (0 of 0), the model call is announced (0 of n), then 1, ..., n, then the call ends
    assert total >= 2 and done == [0] + list(range(total + 1)) + [total]


def test_progress_lines_off_a_terminal():
    from q2_metric import progress

    lines, clock = [], iter([0.0, 1.0, 1.0, 2.0, 3.5, 4.0])  # one reading per report
    report = progress.line_progress("Q²", lines.append)
    real = progress.time.monotonic
    progress.time.monotonic = lambda: next(clock)
    try:
        report("candidates", 0, 0)
        report("candidates", 2, 2)
        report("questions", 0, 0)
        report("questions", 3, 5)
        report("questions", 5, 5)
        report("done", 2, 2)
    finally:
        progress.time.monotonic = real
    # hand-computed from the clock above: candidates 0.0 -> 1.0 s, questions 1.0 -> 4.0 s
    assert lines == [
        "Q² 1/6 candidates: 2 model inputs in 1.0 s",
        "Q² 2/6 questions: 5 model inputs in 3.0 s",
        "Q²: all 6 stages done in 4.0 s",
    ]


def test_stage_progress_picks_bars_only_for_a_terminal(monkeypatch):
    from q2_metric import progress

    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.setattr(sys, "stderr", Stream(False))
    assert progress.stage_progress().__qualname__.startswith("line_progress")
    monkeypatch.setattr(sys, "stderr", Stream(True))
    assert progress.stage_progress().__qualname__.startswith("tqdm_progress")


def test_stage_count_with_and_without_coreference():
    """`all N stages done`: 6 stages without coreference, 7 with it (the coreference stage first);
    counted by hand from the scorer's stage list (scorer.py: "coreference" when coref=True, then
    candidates, questions, question filter, knowledge answers, span scores, response scores)."""
    from q2_metric import progress
    from q2_metric.config import Q2Config
    from q2_metric.testing.scripted import ScriptedCoref

    assert len(progress.stages()) == 6 and len(progress.stages(coref=True)) == 7
    for coref, count in ((False, 6), (True, 7)):
        seen, lines = [], []
        report = progress.line_progress("Q²", lines.append)
        scripted_scorer(Q2Config(coref=coref), coref=ScriptedCoref()).score(
            ["Bob Ross hosted PBS."],
            ["Bob Ross hosted it."],
            progress=lambda *r, seen=seen, report=report: (seen.append(r[0]), report(*r)),
        )
        ran = list(dict.fromkeys(seen))
        assert ran == [*(["coreference"] if coref else []), *STAGES, DONE]
        assert len(lines) == count + 1  # a line per stage, then the summary
        assert lines[-1].startswith(f"Q²: all {count} stages done in ")
        assert lines[0].startswith("Q² 1/7 coreference: " if coref else "Q² 1/6 candidates: ")
        assert lines[1].startswith("Q² 2/7 candidates: " if coref else "Q² 2/6 questions: ")
        assert lines[-2].startswith(f"Q² {count}/{count} response scores: ")


def test_stage_labels_and_totals_count_the_coreference_stage():
    from q2_metric import progress

    assert progress.stage_label("questions") == "2/6 questions"
    assert progress.stage_label("questions", coref=True) == "3/7 questions"
    assert progress.stage_label("coreference") == "1/7 coreference"
    assert progress.stage_label("done") == "done"
    lines = []
    totals = progress.StageTotals("Q²", lines.append)
    for _ in range(2):  # two engine calls, as `q2 score`'s chunks
        for name in progress.stages(coref=True):
            totals(name, 0, 0)
            totals(name, 1, 1)
        totals(DONE, 7, 7)
    totals.close()
    assert lines[0].startswith("Q² 1/7 coreference: 2 model inputs in ")
    assert lines[6].startswith("Q² 7/7 response scores: 2 model inputs in ")
    assert lines[7].startswith("Q²: all 7 stages done in ")
