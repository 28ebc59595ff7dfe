"""The first hour, second pass (issue 29): tiny models everywhere, errors in words, progress that
reads in a log, summaries that say what each count means. Expected texts come from the issue's
wording and from hand-built inputs, not from the code under test."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from q2_metric.cli import main

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    from q2_metric.models.tiny import ensure_tiny_models

    folder = tmp_path_factory.mktemp("newcomer") / "tiny-models"
    ensure_tiny_models(folder)
    return folder


@pytest.fixture
def tiny_env(tiny_dir, monkeypatch):
    monkeypatch.setenv("Q2_TINY_MODELS", str(tiny_dir))
    for name in ("Q2_TINY", "Q2_QG_MODEL", "Q2_QA_MODEL", "Q2_NLI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tiny_dir


def write_rows(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["response", "knowledge"])
        writer.writeheader()
        writer.writerows([{"response": r["response"], "knowledge": r["knowledge"]} for r in rows])
    return path


# -- tiny models: built once, documented subfolders, marked in the signature ------------------------------------

def test_tiny_cache_has_the_documented_subfolders_and_mark(tiny_dir):
    for role in ("qg", "qa", "nli"):
        config = json.loads((tiny_dir / role / "config.json").read_text())
        assert config["q2_tiny_random"] is True
        assert (tiny_dir / role / "tokenizer.json").is_file()
    stamp = (tiny_dir / "qg" / "config.json").stat().st_mtime_ns
    from q2_metric.models.tiny import ensure_tiny_models

    ensure_tiny_models(tiny_dir)  # built once: a second call reuses it
    assert (tiny_dir / "qg" / "config.json").stat().st_mtime_ns == stamp
    docs = (ROOT / "docs" / "models.md").read_text()
    assert all(f"| `{role}/` |" in docs for role in ("qg", "qa", "nli"))


def test_score_tiny_on_ones_own_file(tiny_env, rows, tmp_path, capsys):
    """`q2 score --tiny`: scores, a signature naming the tiny models, and the meaningless note; a
    repeated pair is accounted for in the 'Scored' line."""
    data = write_rows(tmp_path / "mine.csv", [rows[0], rows[1], rows[0]])
    assert main(["score", str(data), "-o", str(tmp_path / "out.csv"), "--tiny", "--no-cache", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert (f"Scored 3/3 rows (2 now, 0 from the cache) -> {tmp_path / 'out.csv'}\n1 row repeats the (response, "
            "knowledge) pair of an earlier row and gets its score (each pair is scored once).") in out
    assert "|qg:tiny-random-" in out and "|qa:tiny-random-" in out and "|nli:tiny-random-" in out
    assert "These scores are meaningless" in out and "nan" not in out.lower().split()
    assert main(["score", str(data), "-o", str(tmp_path / "out2.csv"), "--tiny", "--no-cache", "--quiet",
                 "--format", "json", "--short"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["signature_short"].split("|")[1] == "models:tiny-random"
    assert "meaningless" in summary["note"]


def test_q2_tiny_environment_variable_everywhere(tiny_env, monkeypatch):
    from q2_metric.options import build_config

    paper = build_config()
    assert not paper.qg_model.startswith(str(tiny_env))
    monkeypatch.setenv("Q2_TINY", "1")
    config = build_config()
    assert config.qg_model == str(tiny_env / "qg") and config.max_question_length == 16
    assert build_config(tiny=False).qg_model == paper.qg_model  # the switch wins over the variable
    # a model named explicitly is kept
    assert build_config(options={"nli_model": "/elsewhere"}).nli_model == "/elsewhere"


def test_compute_tiny(tiny_env):
    import evaluate

    import q2_metric

    q2 = evaluate.load(q2_metric.module_path())
    results = q2.compute(predictions=["he hosted the joy of painting on pbs"],
                         references=["Bob Ross hosted The Joy of Painting on PBS."], tiny=True, device="cpu")
    assert "|qg:tiny-random-" in results["signature"] and "|dec:beam5-ret5-nrng3-es1-max16-" in results["signature"]
    json.dumps(results, allow_nan=False)
    with pytest.raises(ValueError, match="tiny"):
        q2.compute(predictions=["a"], references=["b"], tiny="yes")


# -- make run without the paper's models -------------------------------------------------------------------------

def test_make_run_offline_ends_in_one_sentence_pointing_to_make_try(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("Q2_", "MAKE"))}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    res = subprocess.run(["make", "-s", "--no-print-directory", "run"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode != 0
    lines = [x for x in res.stderr.splitlines() if x.startswith("q2:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    sentence = lines[0]
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    assert "`make try`" in sentence and "`hf download mrm8488/t5-base-finetuned-question-generation-ap`" in sentence
    assert "cannot give it" not in sentence


# -- progress: bars on a terminal only ---------------------------------------------------------------------------

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
    assert lines == ["Q² 1/6 candidates: 2 model inputs in 1.0 s", "Q² 2/6 questions: 5 model inputs in 3.0 s",
                     "Q²: all 6 stages done in 4.0 s"]


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


def test_score_in_a_log_has_no_carriage_returns(tiny_env, rows, tmp_path):
    data = write_rows(tmp_path / "in.csv", rows[:2])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "Q2_TINY_MODELS": str(tiny_env)}
    res = subprocess.run([str(BIN / "q2"), "score", str(data), "-o", str(tmp_path / "out.csv"), "--tiny",
                          "--no-cache"], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stderr
    assert "Q² responses: 1/2 done" in res.stderr and "Q² responses: 2/2 done" in res.stderr
    assert re.search(r"^Q² 2/6 questions: \d+ model inputs in \d+\.\d s$", res.stderr, flags=re.M), res.stderr


def test_interrupt_message_starts_its_own_line_on_a_terminal(monkeypatch, capsys):
    from q2_metric import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.demo, "cmd_demo", interrupted)  # build_parser reads cmd_demo from cli.demo
    monkeypatch.setattr(cli, "on_terminal", lambda: True)
    assert cli.main(["demo"]) == 130
    assert capsys.readouterr().err == "\nq2: interrupted (SIGINT).\n"


# -- outputs: every count explained, no NaN ----------------------------------------------------------------------

def test_system_figures_in_words_without_nan():
    from q2_metric.steps.system_score import SystemScore, figures_text

    text = figures_text(SystemScore(q2=float("nan"), q2_no_nli=float("nan"), coverage=float("nan"),
                                no_answer_share=float("nan"), num_responses=2, num_scored=0, num_skipped=2,
                                num_valid_questions=0))
    assert "nan" not in text.lower()
    assert "Q2 = n/a (no response could be scored)" in text and "2 with an empty response or knowledge" in text
    assert "no-answer share = n/a (no valid question)" in text
    ok = figures_text(SystemScore(0.5, 0.25, 1.0, 0.5, 2, 2, 0, 4))
    assert ok.splitlines()[0].startswith("Q2 = 0.5000: mean response score over 2 of 2 responses")
    assert "share of the 4 valid questions that the knowledge does not answer" in ok


def test_demo_tiny_sections_once_no_nan(tiny_env, capsys):
    assert main(["demo", "--tiny", "--device", "cpu", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\bnan\b", out), out
    for heading in ("Mean Q2 per system and human label", "Each response, and why", "System figures:",
                    "Signature (how these scores were made):"):
        assert out.count(heading) == 1, heading
    assert "coverage = " in out and "share of scored responses with at least one valid question" in out


def test_done_line_accounts_for_every_row():
    from q2_metric.cli.score import done_line
    from q2_metric.corpus.files import ScoreReport
    from q2_metric.steps.system_score import SystemScore

    system = SystemScore(0.5, 0.5, 1.0, 0.0, 149, 149, 0, 10)
    report = ScoreReport(system, num_rows=151, num_bad=1, num_cached=0, num_scored_now=149, bad_rows=[],
                         signature="s")
    # 151 rows: 1 malformed, 149 distinct pairs scored, so 1 repeats another row's pair
    assert done_line(report, "o.csv") == (
        "Scored 150/151 rows (149 now, 0 from the cache) -> o.csv\n1 row repeats the (response, knowledge) pair "
        "of an earlier row and gets its score (each pair is scored once).")


def test_score_help_names_the_default_columns(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: response)" in text and "(default: knowledge)" in text and "--tiny" in text


def test_meta_eval_default_folder_is_ignored_by_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for path in ("meta_eval/meta_eval.md", "site/index.html"):  # q2 meta-eval's default folder, make docs'
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0, path


# -- the Space ---------------------------------------------------------------------------------------------------

def test_space_messages_name_the_space_variables():
    from q2_metric.hub.space import space_message
    from q2_metric.errors import ModelNotAvailable

    err = ModelNotAvailable("The question-generation model 'x' is not in the Hugging Face cache and the Hub "
                            "cannot be reached: download it or pass a local model directory as qg_model (--qg-model).")
    text = space_message(err)
    assert "Q2_QG_MODEL" in text and "--qg-model" not in text and "Q2_TINY=1" in text


def test_space_shows_one_message_not_error_badges(tmp_path):
    from q2_metric.config import Q2Config
    from q2_metric.hub.space import score_or_message
    from q2_metric.scorer import Q2Scorer

    scorer = Q2Scorer(Q2Config(qg_model=str(tmp_path / "missing"), device="cpu"))
    out = score_or_message("a response", "some knowledge", scorer)
    assert out[:5] == ("", "", "", [], "") and out[5].startswith("**Not scored:** ")
    assert "Q2_QG_MODEL" in out[5]
    long = score_or_message("x" * 1001, "k", scorer)
    assert "1,001 characters long" in long[5]


def test_space_status_legend_explains_every_status():
    from q2_metric.hub.space import STATUS_LEGEND
    from q2_metric.results import DISCARDED, NO_MATCH, PERSONAL, UNUSED, VALID

    for status in (VALID, NO_MATCH, PERSONAL, UNUSED, DISCARDED):
        assert f"**{status}**" in STATUS_LEGEND


def test_space_tiny_from_the_environment(tiny_env, monkeypatch):
    from q2_metric.hub.space import space_config
    from q2_metric.models.tiny import uses_tiny

    monkeypatch.setenv("Q2_TINY", "1")
    assert uses_tiny(space_config())


# -- ParlAI: failures are sentences, progress counts what it scores ----------------------------------------------

def _parlai(*args, cwd: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "parlai.scripts.eval_model", *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=cwd)


def test_parlai_missing_wow_is_a_sentence_without_download(tmp_path):
    pytest.importorskip("parlai")
    data = tmp_path / "data"
    res = _parlai("-t", "parlai_ext.teachers:Q2GeneratorTeacher", "-m", "repeat_label", "--metrics", "q2",
                  "--datapath", str(data), "--q2-tiny", "true", cwd=tmp_path)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("Wizard of Wikipedia (version 1.0) is not in ") and "--datapath" in last
    assert not (data / "wizard_of_wikipedia").exists() and "building data" not in res.stdout + res.stderr


def test_parlai_bad_engine_option_is_a_sentence(tmp_path):
    pytest.importorskip("parlai")
    res = _parlai("-t", "parlai_ext.teachers:CrossAnnotationTeacher", "-m", "parlai_ext.agents:ReplayAgent",
                  "--metrics", "q2", "--datapath", str(tmp_path), "--q2-spacy-model", " ", cwd=tmp_path)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]  # the flag as ParlAI spells it, in one sentence
    assert last.startswith("Invalid Q² option --q2-spacy-model=' ': use ") and last.endswith(".")


def test_parlai_tiny_logs_what_each_stage_scored(tiny_env, tmp_path):
    pytest.importorskip("parlai")
    res = _parlai("-t", "parlai_ext.teachers:CrossAnnotationTeacher", "-m", "parlai_ext.agents:ReplayAgent",
                  "--metrics", "q2", "--datapath", str(tmp_path), "--q2-tiny", "true", "--num-examples", "2",
                  "--q2-device", "cpu", "--report-filename", str(tmp_path / "report.json"),
                  cwd=tmp_path, env_extra={"Q2_TINY_MODELS": str(tiny_env)})
    assert res.returncode == 0, res.stderr[-3000:]
    log = res.stdout + res.stderr
    assert "0/0 model inputs" not in log and "meaningless" in log
    assert re.search(r"Q² 3/6 question filter: [1-9]\d* model inputs in \d+\.\d s", log), log[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())["report"]
    assert report["q2_scored"] == 2 and not math.isnan(report["q2"])


def test_tiny_folder_never_touches_what_it_did_not_build(tmp_path, tiny_dir):
    """Q2_TINY_MODELS pointed at a folder holding the user's files: they stay byte for byte; a qg/
    this package did not build is refused in one sentence; a damaged copy of ours is rebuilt alone."""
    import shutil

    from q2_metric.models.tiny import ensure_tiny_models
    from q2_metric.errors import Q2InputError

    folder = tmp_path / "mine"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "a.txt").write_bytes(b"keep me\n")
    (folder / "qg").mkdir()
    (folder / "qg" / "config.json").write_text('{"model_type": "t5"}')  # the user's own model
    with pytest.raises(Q2InputError, match="is not a tiny model this package built"):
        ensure_tiny_models(folder)
    assert (folder / "qg" / "config.json").read_text() == '{"model_type": "t5"}'
    shutil.rmtree(folder / "qg")
    shutil.copytree(tiny_dir / "qa", folder / "qa")  # one role of ours already there, the others missing
    ensure_tiny_models(folder)
    assert (folder / "notes" / "a.txt").read_bytes() == b"keep me\n"
    assert sorted(p.name for p in folder.iterdir()) == ["nli", "notes", "qa", "qg"]  # no temporary left
