"""`q2 demo` says what it is doing and passes a progress bar to the engine (`--no-progress`: none)."""

import csv

import pytest

from q2_metric.cli import main
from q2_metric.scorer import Q2Scorer


@pytest.mark.parametrize("flags, shown", [([], True), (["--no-progress"], False)])
def test_demo_progress(flags, shown, rows, tiny_models, tmp_path, monkeypatch, capsys):
    sample = tmp_path / "sample.csv"
    with open(sample, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[:2])
    seen = []
    real_score = Q2Scorer.score

    def spy(self, responses, knowledge, *, progress=None):
        seen.append(progress)
        if progress is not None:
            progress("questions", 1, 2)  # as the engine reports a stage
        return real_score(self, responses, knowledge, progress=progress)

    monkeypatch.setattr(Q2Scorer, "score", spy)
    code = main(["demo", "--input", str(sample), "--qg-model", tiny_models["qg"], "--qa-model", tiny_models["qa"],
                 "--nli-model", tiny_models["nli"], "--device", "cpu", "--decoding", "greedy", "--explain", "0",
                 *flags])
    out = capsys.readouterr()
    assert code == 0 and "Scored 2 responses" in out.out
    assert (seen[0] is not None) == shown
    assert ("Loading the models, then scoring 2 responses" in out.err) == shown
    assert ("Q² 2/6 questions" in out.err) == shown
    assert "Loading weights" not in out.err
