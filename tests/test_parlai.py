"""ParlAI: the real `parlai eval_model` with --metrics q2 (subprocess, offline, --datapath in tmp)."""

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("parlai")

from parlai_data import ANNOTATIONS, make_wow_datapath  # noqa: E402

PARLAI = [str(Path(sys.executable).with_name("parlai"))]


@pytest.fixture(scope="module")
def wow(tmp_path_factory):
    return make_wow_datapath(tmp_path_factory.mktemp("wow"))


@pytest.fixture(scope="module")
def q2_flags(tiny_config):
    return ["--q2-qg-model", tiny_config.qg_model, "--q2-qa-model", tiny_config.qa_model,
            "--q2-nli-model", tiny_config.nli_model, "--q2-decoding", "greedy",
            "--q2-max-question-length", "8", "--q2-device", "cpu"]


def parlai(*args, cwd=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*PARLAI, *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


def eval_report(tmp_path, *args):
    out = tmp_path / f"report{len(list(tmp_path.glob('report*')))}.json"
    res = parlai("eval_model", *args, "--report-filename", str(out), "--log-every-n-secs", "-1")
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(out.read_text())["report"]


def test_repeat_label_on_local_wow(wow, q2_flags, tmp_path):
    base = ["-t", "parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher", "-m", "repeat_label",
            "--datapath", str(wow)]
    report = eval_report(tmp_path, *base, "--metrics", "q2", *q2_flags)
    assert isinstance(report["q2"], float) and 0 <= report["q2"] <= 1
    assert isinstance(report["q2_no_nli"], float)
    assert report["q2_scored"] == 5 and report["q2_skipped"] == 1  # one no_passages_used turn
    plain = eval_report(tmp_path, *base, *q2_flags)
    assert "q2" not in plain and "q2_scored" not in plain


@pytest.fixture(scope="module")
def tiny_generator(wow):
    model_file = wow / "gen" / "model"
    res = parlai("train_model", "-t", "parlai_ext.teachers:Q2GeneratorTeacher", "-m", "transformer/generator",
                 "--model-file", str(model_file), "--datapath", str(wow), "--n-layers", "1", "--n-heads", "2",
                 "--embedding-size", "16", "--ffn-size", "32", "--max-train-steps", "3", "--batchsize", "2",
                 "--dict-tokenizer", "re", "--skip-generation", "true", "--no-cuda", "--truncate", "64",
                 "--label-truncate", "16", "--validation-every-n-steps", "100",
                 # ParlAI 1.7.2's plateau scheduler passes `verbose`, which torch 2.13 removed
                 "--lr-scheduler", "none")
    assert res.returncode == 0, res.stderr[-3000:]
    return model_file


def test_trained_tiny_generator(wow, tiny_generator, q2_flags, tmp_path):
    base = ["-mf", str(tiny_generator), "-t", "parlai_ext.teachers:Q2GeneratorTeacher", "--datapath", str(wow),
            "--skip-generation", "false", "--inference", "greedy", "--no-cuda"]
    report = eval_report(tmp_path, *base, "--metrics", "q2", *q2_flags)
    assert isinstance(report["q2"], float) and 0 <= report["q2"] <= 1 and report["q2_scored"] == 5
    assert "q2" not in eval_report(tmp_path, *base, *q2_flags)


@pytest.mark.parametrize("system", ["dodeca", "memnet"])
def test_replay_annotated_systems(system, q2_flags, tmp_path):
    base = ["-t", "parlai_ext.teachers:CrossAnnotationTeacher", "-m", "parlai_ext.agents:ReplayAgent",
            "--replay-system", system, "--datapath", str(tmp_path / "data"), "--num-examples", "24"]
    explain = tmp_path / "explain.jsonl"
    report = eval_report(tmp_path, *base, "--metrics", "q2", *q2_flags, "--q2-batch-size", "8",
                         "--q2-explain-file", str(explain))
    assert isinstance(report["q2"], float) and report["q2_scored"] == 24
    turns = [json.loads(line) for line in explain.read_text().splitlines()]
    assert len(turns) == 24 and {"response", "knowledge", "q2", "questions", "candidates"} <= set(turns[0])
    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        first = next(csv.DictReader(f))
    assert turns[0]["response"] == first[f"{system}_response"] and turns[0]["knowledge"] == first["knowledge"]
    assert "q2" not in eval_report(tmp_path, *base, "--metrics", "default", *q2_flags)


def test_data_without_checked_sentence_is_a_clear_error(tmp_path, q2_flags):
    data = make_wow_datapath(tmp_path, checked=False)
    res = parlai("eval_model", "-t", "parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher", "-m", "repeat_label",
                 "--datapath", str(data), "--metrics", "q2", *q2_flags)
    assert res.returncode != 0
    assert "Q2DataError" in res.stderr and "no Wizard turn has a checked_sentence" in res.stderr


def test_teacher_q2_equals_engine_score_in_batches(tmp_path, monkeypatch):
    """In-process with scripted components: ParlAI's q2 is the engine's system score, and the
    engine is called once per buffer, not once per example."""
    from parlai.scripts.eval_model import EvalModel

    import parlai_ext.q2_eval as q2_eval
    from q2_metric.testing import scripted_scorer

    scorers = []

    def factory(config):
        scorers.append(scripted_scorer(config))
        return scorers[-1]

    monkeypatch.setattr(q2_eval, "SCORER_FACTORY", factory)
    n, batch = 20, 8
    report = EvalModel.main(task="parlai_ext.teachers:CrossAnnotationTeacher", model="parlai_ext.agents:ReplayAgent",
                            replay_system="memnet", metrics="q2", datapath=str(tmp_path), num_examples=n,
                            q2_batch_size=batch, log_every_n_secs=-1)
    value = report["q2"].value() if hasattr(report["q2"], "value") else report["q2"]
    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:n]
    expected = scripted_scorer().score([r["memnet_response"] for r in rows], [r["knowledge"] for r in rows])
    assert value == pytest.approx(expected.q2)
    assert len(scorers) == math.ceil(n / batch)  # one engine call per full buffer, plus the last
    assert all(len(s._qg.calls) <= 1 for s in scorers)
