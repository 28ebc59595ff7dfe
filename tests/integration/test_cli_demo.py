"""`q2 demo` says what it is doing and passes a progress bar to the engine (`--no-progress`: none)."""

import csv
import os
import re
import subprocess
import sys

import pytest
from support.data import ROOT

from q2_metric.cli import main
from q2_metric.cli.demo import SAMPLE
from q2_metric.scorer import Q2Scorer


@pytest.mark.parametrize("flags, shown", [([], True), (["--no-progress"], False)])
def test_demo_progress(flags, shown, rows, tiny_models, tmp_path, monkeypatch, capsys):
    sample = tmp_path / "sample.csv"
    with open(sample, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[:2])
    seen = []
    real_score = Q2Scorer.score_checked  # the engine's door of every path

    def spy(self, responses, knowledge, histories=None, *, progress=None):
        seen.append(progress)
        if progress is not None:
            progress("questions", 1, 2)  # as the engine reports a stage
        return real_score(self, responses, knowledge, histories, progress=progress)

    monkeypatch.setattr(Q2Scorer, "score_checked", spy)
    code = main(
        [
            "demo",
            "--input",
            str(sample),
            "--qg-model",
            tiny_models["qg"],
            "--qa-model",
            tiny_models["qa"],
            "--nli-model",
            tiny_models["nli"],
            "--device",
            "cpu",
            "--decoding",
            "greedy",
            "--explain",
            "0",
            *flags,
        ]
    )
    out = capsys.readouterr()
    assert code == 0 and "Scored 2 responses" in out.out
    assert (seen[0] is not None) == shown
    assert ("Loading the models, then scoring 2 responses" in out.err) == shown
    assert ("Q² 2/6 questions" in out.err) == shown
    assert "Loading weights" not in out.err


def test_readme_quotes_the_offline_error(tmp_path):
    """What `q2 demo` prints without the paper's models, offline, is what the documentation quotes
    (docs/models.md since the README became a front page; tests/integration/test_docs.py checks the block itself)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_CACHE", None)
    run = subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", "demo"], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2 and run.stderr.startswith("q2: The question-generation model 'mrm8488/")
    assert run.stderr.strip() in (ROOT / "docs" / "models.md").read_text()


def test_demo_tiny_builds_once_and_explains(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path / "tiny"))
    assert main(["demo", "--tiny", "--device", "cpu"]) == 0
    out = capsys.readouterr()
    assert "Building small random models" in out.err and "Q² 2/6 questions" in out.err
    lines = out.out.splitlines()
    assert lines[0] == (  # how many of how many, and why
        f"Scored 6 of the 40 responses in {SAMPLE} (with the tiny models, 6 by default: a few of "
        "each system and label in turn; --limit N scores more)"
    )
    table = lines[lines.index(next(x for x in lines if x.strip().startswith("#  system"))) + 1 :][:6]
    # each row ends in its one-line reason; random weights usually leave no valid question, but a
    # tiny model can answer one ("The question was not answered by the knowledge.", seen in CI)
    reason = re.compile(
        r"\s(No valid question \(|The question |All \d+ questions |\d+ of \d+ questions? |Not scored: )"
    )
    assert len(table) == 6 and all(reason.search(x) for x in table), table
    assert any(x.startswith("q2:") and "|dec:beam5-ret5-nrng3-es1-max16-in512|" in x for x in lines)
    assert "These scores are meaningless" in out.out and "leave out --tiny / Q2_TINY" in out.out
    stamp = (tmp_path / "tiny" / "qg" / "config.json").stat().st_mtime_ns
    assert main(["demo", "--tiny", "--device", "cpu", "--quiet", "--short"]) == 0
    again = capsys.readouterr()
    assert again.err == "" and (tmp_path / "tiny" / "qg" / "config.json").stat().st_mtime_ns == stamp
    assert any(x.startswith("q2:") and "|sig:" in x and "|dec:" not in x for x in again.out.splitlines())


def test_demo_tiny_sections_once_no_nan(tiny_env, capsys):
    assert main(["demo", "--tiny", "--device", "cpu", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\bnan\b", out), out
    for heading in (
        "Mean Q2 per system and human label",
        "Each response, and why",
        "System figures:",
        "Signature (how these scores were made):",
    ):
        assert out.count(heading) == 1, heading
    assert "coverage = " in out and "share of scored responses with at least one valid question" in out


def test_demo_counts_only_the_responses_it_scored(rows, tiny_models, tmp_path, capsys):
    """Two of four responses empty: "Scored 2 of the 4 responses ...; 2 not scored (empty
    response)", and the table's n and mean are over the 2 scored (issue 49: it said "Scored 4")."""
    sample = tmp_path / "sample.csv"
    picked = [dict(rows[0], system="s", label="l"), dict(rows[1], system="s", label="l")]
    picked += [dict(r, response="", system="s", label="l") for r in rows[2:4]]
    with open(sample, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(picked[0]))
        writer.writeheader()
        writer.writerows(picked)
    args = ["demo", "--input", str(sample), "--device", "cpu", "--decoding", "greedy", "--quiet"]
    for role in ("qg", "qa", "nli"):
        args += [f"--{role}-model", tiny_models[role]]
    assert main([*args, "--explain", "0"]) == 0
    out = capsys.readouterr().out
    assert f"Scored 2 of the 4 responses from {sample}; 2 not scored (empty response)" in out
    table = out.split("mean Q2")[1].split("\n\n")[0]
    assert re.search(r"^s\s+l\s+2\s", table.strip(), re.M), table


def test_demo_wraps_at_word_boundaries_to_the_terminals_width(tiny_env, monkeypatch, capsys):
    """At 100 columns `q2 demo` ran past the terminal's width, which cut words in two: on a
    terminal every line fits, broken between words, a wrapped reason going on under its column."""
    from q2_metric import display

    monkeypatch.setattr(display, "terminal_width", lambda stream=None: 100)
    assert main(["demo", "--tiny", "--device", "cpu", "--quiet", "--limit", "6"]) == 0
    lines = capsys.readouterr().out.splitlines()
    long = [x for x in lines if len(x) > 100 and " " in x.strip()]  # a signature is one word
    assert long == [] and any(len(x) > 60 for x in lines), lines
    start = lines.index(next(x for x in lines if x.strip().startswith("#  system"))) + 1
    table = lines[start : lines.index("", start)]
    assert len(table) >= 6 and all(
        x[:3].strip().isdigit() or (x[:35] == " " * 35 and x[35] != " ") for x in table
    ), table
