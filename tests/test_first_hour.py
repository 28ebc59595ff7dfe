"""A new user's first hour (issue 20): fast start-up without torch, `q2 --version`, `--format json`,
`--short`, `-b`, `--quiet`, `--max-question-length`, strict JSON, path-independent and short
signatures, one offline error for every missing model, progress per stage with model-input counts,
a cache written early, `q2 demo --tiny`, evaluate's registration, ParlAI's progress lines, Ray's
logs hidden. Expected values come from the issue's wording, hand-built inputs or the scripted
components' rules (q2_metric/testing/scripted.py), never from the code under test."""

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from q2_metric import ModelNotAvailable, Q2Config, Q2Scorer
from q2_metric.cli import main
from q2_metric.corpus.files import score_file
from q2_metric.progress import DONE, STAGES
from q2_metric.signature import Signature
from q2_metric.testing.scripted import scripted_scorer

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers")


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def strict_json(text):
    """json.loads that refuses NaN and infinities, as a strict JSON reader does."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def tiny_flags(tiny_models):
    return ["--qg-model", tiny_models["qg"], "--qa-model", tiny_models["qa"], "--nli-model", tiny_models["nli"],
            "--device", "cpu", "--decoding", "greedy"]


# -- 12. start-up without torch or transformers ------------------------------------------------------

IMPORTS_AFTER = """
import json, runpy, sys
sys.argv = ["q2", *json.loads(sys.argv[1])]
try:
    runpy.run_module("q2_metric.cli", run_name="__main__")
except SystemExit as exit:
    code = exit.code
print("\\nMODULES", json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def imports_after(args, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    run = subprocess.run([sys.executable, "-c", IMPORTS_AFTER, json.dumps(args)], capture_output=True, text=True,
                         timeout=120, env=env, cwd=tmp_path)
    line = [x for x in run.stdout.splitlines() if x.startswith("MODULES ")][-1]
    return json.loads(line[len("MODULES "):]), run


@pytest.mark.parametrize("args, code", [
    (["--help"], 0),
    (["score", "--help"], 0),
    (["--version"], 0),
    (["register"], 0),
    (["score", "in.csv"], 2),  # argument error: -o missing
    (["score", "missing.csv", "-o", "out.csv"], 2),  # input check: no such file
    (["score", "bad.csv", "-o", "out.csv"], 2),  # input check: no response column
    (["demo", "--qg-model", "nobody/qg", "--qa-model", "nobody/qa", "--nli-model", "nobody/nli"], 2),  # offline
])
def test_no_torch_for_help_register_and_checks(args, code, tmp_path):
    (tmp_path / "bad.csv").write_text("reply,knowledge\nhi,there\n")
    seen, run = imports_after(args, tmp_path)
    assert seen["code"] in (code, None if code == 0 else code), run.stderr
    assert seen["heavy"] == [], f"{args} imported {seen['heavy']}"


# -- 11. --version, --format json, -b, --short, publish --dry-run -----------------------------------------

def test_version(capsys):
    import q2_metric

    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"q2-metric {q2_metric.__version__}"


@pytest.fixture()
def two_rows(rows, tmp_path):
    return write_csv(tmp_path / "in.csv", rows[:2])


def test_format_json_prints_only_strict_json(two_rows, tiny_models, tmp_path, capsys):
    code = main(["score", str(two_rows), "-o", str(tmp_path / "out.csv"), "--no-cache", "--format", "json",
                 *tiny_flags(tiny_models)])
    out = capsys.readouterr()
    assert code == 0
    figures = strict_json(out.out)  # stdout is the JSON object and nothing else
    assert {"q2", "q2_no_nli", "coverage", "no_answer_share", "signature", "signature_short", "num_rows"} <= set(figures)
    assert figures["num_rows"] == 2 and figures["signature"].startswith("q2:")
    assert figures["signature_short"].startswith("q2:") and len(figures["signature_short"]) < 100
    assert "Scored 2/2 rows" in out.err


def test_score_only_and_short_signature(two_rows, tiny_models, tmp_path, capsys):
    assert main(["score", str(two_rows), "-o", str(tmp_path / "a.csv"), "--no-cache", "-b", "--quiet",
                 *tiny_flags(tiny_models)]) == 0
    out = capsys.readouterr()
    assert out.err == ""  # --quiet: no progress bars, no status lines
    [line] = out.out.splitlines()
    assert 0.0 <= float(line) <= 1.0 and len(line) == 6  # one number, 4 decimals
    assert main(["score", str(two_rows), "-o", str(tmp_path / "b.csv"), "--no-cache", "--short", "--quiet",
                 *tiny_flags(tiny_models)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("q2:") and "|models:custom(qg,qa,nli)|rules:paper+dec|dtype:float32|sig:" in last


def test_publish_dry_run_prints_q2_not_an_escape(tmp_path, capsys):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"q2": 0.5, "q2_no_nli": 0.4, "coverage": 0.9, "signature": "q2:x"}))
    assert main(["publish", "--results", str(results), "--model-name", "m", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "name: Q²" in out and "\\xB2" not in out


# -- 3. --max-question-length for q2 score ------------------------------------------------------------

def test_max_question_length_flag(two_rows, tiny_models, tmp_path, capsys):
    assert main(["score", str(two_rows), "-o", str(tmp_path / "out.csv"), "--no-cache", "--format", "json",
                 "--quiet", "--max-question-length", "5", *tiny_flags(tiny_models)]) == 0
    figures = strict_json(capsys.readouterr().out)
    assert "|dec:greedy-max5-in512|" in figures["signature"]
    with open(tmp_path / "out.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 2
    code = main(["score", str(two_rows), "-o", str(tmp_path / "x.csv"), "--max-question-length", "0",
                 *tiny_flags(tiny_models)])
    err = capsys.readouterr().err
    assert code == 2 and "--max-question-length" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.csv").exists()


# -- 4. strict JSON in --summary ---------------------------------------------------------------------------

def test_summary_is_strict_json_without_valid_questions(tmp_path):
    """No response has a candidate (scripted parser: capitalised words), so no question is valid and
    the no-answer share is undefined: null, not NaN."""
    data = write_csv(tmp_path / "in.csv", [{"response": "it was nice.", "knowledge": "Bob Ross hosted it."}])
    score_file(scripted_scorer(), data, tmp_path / "out.csv", summary_path=tmp_path / "summary.json", cache_dir=None)
    summary = strict_json((tmp_path / "summary.json").read_text())
    assert summary["no_answer_share"] is None and summary["coverage"] == 0.0
    assert summary["signature_short"] == Signature.parse(summary["signature"]).short()


# -- 7. signatures: local models by digest, the short form -----------------------------------------------

def test_signature_does_not_depend_on_how_the_path_is_typed(tiny_models, tmp_path, monkeypatch):
    from q2_metric.corpus.cache import cache_key

    qg = Path(tiny_models["qg"])
    monkeypatch.chdir(qg.parent.parent)
    link = tmp_path / "link"
    link.symlink_to(qg.parent)
    spellings = [str(qg), os.path.relpath(qg), f"{qg.parent}/./qg", str(link / "qg")]
    signatures, keys = set(), set()
    for spelling in spellings:
        scorer = Q2Scorer(Q2Config(qg_model=spelling, qa_model=tiny_models["qa"], nli_model=tiny_models["nli"],
                                   device="cpu"))
        signature = str(scorer.signature())
        assert spelling not in signature and "|qg:local-" in signature
        signatures.add(signature)
        keys.add(cache_key(scorer))
    assert len(signatures) == 1 and len(keys) == 1  # same folder: same signature, same cache


def test_short_signature_names_departures():
    paper = Signature.create(Q2Config.paper())
    assert Signature.parse(str(paper)) == paper
    short = paper.short()
    assert short.startswith("q2:") and "|models:paper|rules:paper|dtype:auto|sig:" in short and len(short) < 80
    assert "|rules:dnli|" in Signature.create(Q2Config.dnli()).short()
    assert "|rules:paper+dec,mode|" in Signature.create(Q2Config(decoding="greedy", question_mode="multi")).short()
    assert "|models:custom(qa)|" in Signature.create(Q2Config(qa_model="me/qa")).short()
    # the hash tells apart signatures that differ only where the short form does not look
    assert Signature.create(Q2Config(num_beams=6)).short() != short


# -- 9. one offline error for every missing model ------------------------------------------------------------

def test_offline_error_names_every_missing_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = Q2Scorer(Q2Config(qg_model="nobody/qg-x", qa_model="nobody/qa-x", nli_model="nobody/nli-x"))
    with pytest.raises(ModelNotAvailable) as err:
        scorer.check_models()
    assert str(err.value) == (
        "The question-generation model 'nobody/qg-x', the question-answering model 'nobody/qa-x' and the NLI "
        "model 'nobody/nli-x' are not in the Hugging Face cache and the Hub cannot be reached (HF_HUB_OFFLINE "
        "is set): download them once where the Hub is reachable (`hf download nobody/qg-x`, `hf download "
        "nobody/qa-x`, `hf download nobody/nli-x`) or pass local model directories as qg_model (--qg-model), "
        "qa_model (--qa-model) and nli_model (--nli-model).")


def test_readme_quotes_the_offline_error(tmp_path):
    """What `q2 demo` prints without the paper's models, offline, is what the documentation quotes
    (docs/models.md since the README became a front page; tests/test_docs.py checks the block itself)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_CACHE", None)
    run = subprocess.run([sys.executable, "-m", "q2_metric.cli", "demo"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.startswith("q2: The question-generation model 'mrm8488/")
    assert run.stderr.strip() in (ROOT / "docs" / "models.md").read_text()


# -- 2. progress per stage with model-input counts; the cache written early -----------------------------------

def test_progress_counts_model_inputs_per_stage():
    """Scripted models on two responses: 'Bob Ross hosted PBS.' has candidates Bob Ross, PBS (capitalised
    words), 'Bob Ross hosted it.' has Bob Ross: 3 distinct (candidate, response) pairs for the question
    generator; the question filter parses the 2 distinct questions (personal filter) and asks the 3
    (question, response) pairs; the knowledge is asked 2 distinct (question, knowledge) pairs, answers
    Bob Ross the same way (no NLI) and has no PBS (no answer, no NLI); no fallback."""
    seen = []
    scripted_scorer().score(["Bob Ross hosted PBS.", "Bob Ross hosted it."], ["Bob Ross hosted it."] * 2,
                            progress=lambda *report: seen.append(report))
    final = {}
    for stage, done, total in seen:
        final[stage] = (done, total)
    assert [s for s in dict.fromkeys(s for s, _, _ in seen)] == [*STAGES, DONE]
    assert final["candidates"] == (2, 2) and final["questions"] == (3, 3)
    assert final["question filter"] == (5, 5) and final["knowledge answers"] == (2, 2)
    assert final["span scores"] == (0, 0) and final["response scores"] == (0, 0)
    assert all(done <= total for _, done, total in seen)


def test_progress_advances_batch_by_batch(tiny_config):
    """With one input per batch, the question stage reports each input as it is done."""
    seen = []
    scorer = Q2Scorer(tiny_config.replace(qg_batch_size=1, decoding="greedy", max_question_length=4))
    scorer.score(["bob ross hosted the joy of painting on pbs"], ["Bob Ross hosted it."],
                 progress=lambda *report: seen.append(report))
    done = [d for stage, d, total in seen if stage == "questions"]
    total = max(t for stage, _, t in seen if stage == "questions")
    # the stage starts (0 of 0), the model call is announced (0 of n), then 1, ..., n, then the call ends
    assert total >= 2 and done == [0] + list(range(total + 1)) + [total]


def test_cache_gets_the_first_response_before_the_rest(tmp_path):
    """Chunks grow 1, 2, 4, ...: a run stopped during its second engine call keeps the first response."""
    class Stop(Exception):
        pass

    calls = []
    scorer = scripted_scorer()
    real = scorer.score

    def score(responses, knowledge, **kw):
        calls.append(len(responses))
        if len(calls) == 2:
            raise Stop
        return real(responses, knowledge, **kw)

    scorer.score = score
    data = write_csv(tmp_path / "in.csv", [{"response": f"Person{i} left.", "knowledge": f"Person{i} left."}
                                           for i in range(10)])
    with pytest.raises(Stop):
        score_file(scorer, data, tmp_path / "out.csv", cache_dir=tmp_path / "cache", chunk_size=64)
    [cache] = (tmp_path / "cache").rglob("responses.jsonl")
    assert calls == [1, 2] and len(cache.read_text().splitlines()) == 1


def test_score_shows_stage_bars(two_rows, tiny_models, tmp_path, capsys):
    assert main(["score", str(two_rows), "-o", str(tmp_path / "out.csv"), "--no-cache",
                 *tiny_flags(tiny_models)]) == 0
    err = capsys.readouterr().err
    assert "Q² responses" in err and "Q² 2/6 questions" in err and "inputs" in err


# -- 1. q2 demo --tiny ----------------------------------------------------------------------------------------

def test_demo_tiny_builds_once_and_explains(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("Q2_TINY_MODELS", str(tmp_path / "tiny"))
    assert main(["demo", "--tiny", "--device", "cpu"]) == 0
    out = capsys.readouterr()
    assert "Building small random models" in out.err and "Q² 2/6 questions" in out.err
    lines = out.out.splitlines()
    assert "Scored 6 responses" in lines[0]
    table = lines[lines.index(next(x for x in lines if x.strip().startswith("#  system"))) + 1:][:6]
    # each row ends in its one-line reason; random weights usually leave no valid question, but a
    # tiny model can answer one ("The question not answered by the knowledge.", seen in CI)
    reason = re.compile(r"\s(No valid question \(|The question |All \d+ questions |\d+ of \d+ questions? |Not scored: )")
    assert len(table) == 6 and all(reason.search(x) for x in table), table
    assert any(x.startswith("q2:") and "|dec:beam5-ret5-nrng3-es1-max16-in512|" in x for x in lines)
    assert "These scores are meaningless" in out.out and "hf download mrm8488/" in out.out
    stamp = (tmp_path / "tiny" / "qg" / "config.json").stat().st_mtime_ns
    assert main(["demo", "--tiny", "--device", "cpu", "--quiet", "--short"]) == 0
    again = capsys.readouterr()
    assert again.err == "" and (tmp_path / "tiny" / "qg" / "config.json").stat().st_mtime_ns == stamp
    assert any(x.startswith("q2:") and "|sig:" in x and "|dec:" not in x for x in again.out.splitlines())


# -- 8. evaluate.load("q2"): no misleading warning, the installed version after an upgrade ----------------------

def test_registered_module_follows_upgrades_without_the_warning(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules")}
    reg = subprocess.run([sys.executable, "-m", "q2_metric.cli", "register"], env=env,
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert reg.returncode == 0, reg.stderr
    # "upgrade": another copy of the package, whose evaluate module says so, first on the path
    upgraded = tmp_path / "upgraded"
    shutil.copytree(ROOT / "q2_metric", upgraded / "q2_metric", ignore=shutil.ignore_patterns("__pycache__"))
    module = upgraded / "q2_metric" / "q2_metric.py"
    module.write_text(module.read_text().replace("Scores each prediction", "UPGRADED. Scores each prediction"))
    code = ("import q2_metric, evaluate; m = evaluate.load('q2'); "
            "print('UPGRADED' in m.inputs_description, type(m).__module__)")
    run = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(upgraded)}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "q2_metric.q2_metric"]
    assert "couldn't be found" not in run.stderr and "remotely" not in run.stderr


# -- 2. ParlAI: a log line per stage through ParlAI's logging ------------------------------------------------------

def test_parlai_logs_each_stage(tmp_path, monkeypatch):
    pytest.importorskip("parlai")
    from parlai.scripts.eval_model import EvalModel
    from parlai.utils import logging as parlai_logging

    monkeypatch.setattr("parlai_ext.report.SCORER_FACTORY", lambda config: scripted_scorer(config))
    lines = []
    real_info = parlai_logging.info
    monkeypatch.setattr(parlai_logging, "info", lambda msg, *a, **k: (lines.append(str(msg)), real_info(msg, *a, **k)))
    EvalModel.main(task="parlai_ext.teachers:CrossAnnotationTeacher", model="parlai_ext.agents:ReplayAgent",
                   replay_system="memnet", metrics="q2", datapath=str(tmp_path), num_examples=4, q2_batch_size=4,
                   log_every_n_secs=-1)
    stage_lines = [x for x in lines if x.startswith("Q² ") and "model inputs" in x]
    assert "Q²: scoring 4 responses" in lines
    assert [x.split(":")[0] for x in stage_lines] == [f"Q² {i}/6 {s}" for i, s in enumerate(STAGES, 1)]
    assert any(x.startswith("Q²: all 6 stages done in ") for x in lines)


# -- 10. Ray's own log lines hidden -------------------------------------------------------------------------------

def test_ray_run_prints_no_ray_log_lines(rows, tiny_models, tmp_path):
    pytest.importorskip("ray.data")
    data = write_csv(tmp_path / "in.csv", rows[:2])
    run = subprocess.run([sys.executable, "-m", "q2_metric.cli", "score", str(data), "-o",
                          str(tmp_path / "out.csv"), "--summary", str(tmp_path / "summary.json"), "--no-cache",
                          "--no-progress", "--ray", "--workers", "1", *tiny_flags(tiny_models),
                          "--max-question-length", "8"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr == "", run.stderr[-3000:]  # no "max_restarts > 0", no execution plan, no token notice
    summary = strict_json((tmp_path / "summary.json").read_text())
    assert summary["num_rows"] == 2 and not any(isinstance(v, float) and math.isnan(v) for v in summary.values())
