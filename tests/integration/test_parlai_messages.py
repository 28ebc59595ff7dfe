"""ParlAI: errors in one sentence spelled with ParlAI's flags, a log line per Q² stage, and the
explain file never written over an input."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.files import snapshot

from q2_metric.progress import STAGES
from q2_metric.testing.scripted import scripted_scorer


def test_parlai_logs_each_stage(tmp_path, monkeypatch):
    pytest.importorskip("parlai")
    from parlai.scripts.eval_model import EvalModel
    from parlai.utils import logging as parlai_logging

    monkeypatch.setattr("parlai_ext.report.SCORER_FACTORY", lambda config: scripted_scorer(config))
    lines = []
    real_info = parlai_logging.info
    monkeypatch.setattr(
        parlai_logging, "info", lambda msg, *a, **k: (lines.append(str(msg)), real_info(msg, *a, **k))
    )
    EvalModel.main(
        task="parlai_ext.teachers:CrossAnnotationTeacher",
        model="parlai_ext.agents:ReplayAgent",
        replay_system="memnet",
        metrics="q2",
        datapath=str(tmp_path),
        num_examples=4,
        q2_batch_size=4,
        log_every_n_secs=-1,
    )
    stage_lines = [x for x in lines if x.startswith("Q² ") and "model inputs" in x]
    assert "Q²: scoring 4 responses" in lines
    assert [x.split(":")[0] for x in stage_lines] == [f"Q² {i}/6 {s}" for i, s in enumerate(STAGES, 1)]
    assert any(x.startswith("Q²: all 6 stages done in ") for x in lines)


def _parlai(*args, cwd: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "parlai.scripts.eval_model", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=cwd,
    )


def test_parlai_missing_wow_is_a_sentence_without_download(tmp_path):
    pytest.importorskip("parlai")
    data = tmp_path / "data"
    res = _parlai(
        "-t",
        "parlai_ext.teachers:Q2GeneratorTeacher",
        "-m",
        "repeat_label",
        "--metrics",
        "q2",
        "--datapath",
        str(data),
        "--q2-tiny",
        "true",
        cwd=tmp_path,
    )
    assert res.returncode != 0 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("Wizard of Wikipedia (version 1.0) is not in ") and "--datapath" in last
    assert not (data / "wizard_of_wikipedia").exists() and "building data" not in res.stdout + res.stderr


def test_parlai_bad_engine_option_is_a_sentence(tmp_path):
    pytest.importorskip("parlai")
    res = _parlai(
        "-t",
        "parlai_ext.teachers:CrossAnnotationTeacher",
        "-m",
        "parlai_ext.agents:ReplayAgent",
        "--metrics",
        "q2",
        "--datapath",
        str(tmp_path),
        "--q2-spacy-model",
        " ",
        cwd=tmp_path,
    )
    assert res.returncode != 0 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]  # the flag as ParlAI spells it, in one sentence
    assert last.startswith("Invalid Q² option --q2-spacy-model=' ': use ") and last.endswith(".")


def test_parlai_tiny_logs_what_each_stage_scored(tiny_env, tmp_path):
    pytest.importorskip("parlai")
    res = _parlai(
        "-t",
        "parlai_ext.teachers:CrossAnnotationTeacher",
        "-m",
        "parlai_ext.agents:ReplayAgent",
        "--metrics",
        "q2",
        "--datapath",
        str(tmp_path),
        "--q2-tiny",
        "true",
        "--num-examples",
        "2",
        "--q2-device",
        "cpu",
        "--report-filename",
        str(tmp_path / "report.json"),
        cwd=tmp_path,
        env_extra={"Q2_TINY_MODELS": str(tiny_env)},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    log = res.stdout + res.stderr
    assert "0/0 model inputs" not in log and "meaningless" in log
    assert re.search(r"Q² 3/6 question filter: [1-9]\d* model inputs in \d+\.\d s", log), log[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())["report"]
    assert report["q2_scored"] == 2 and not math.isnan(report["q2"])


def test_parlai_explain_file_never_replaces_the_annotations(tmp_path, tiny_config):
    pytest.importorskip("parlai")
    from support.parlai_data import write_annotations

    data = write_annotations(tmp_path / "annotations.csv", 3)
    before = snapshot(data)
    flags = [
        "--q2-qg-model",
        tiny_config.qg_model,
        "--q2-qa-model",
        tiny_config.qa_model,
        "--q2-nli-model",
        tiny_config.nli_model,
        "--q2-decoding",
        "greedy",
        "--q2-max-question-length",
        "8",
        "--q2-device",
        "cpu",
    ]
    base = [
        sys.executable,
        "-m",
        "parlai.scripts.eval_model",
        "-t",
        "parlai_ext.teachers:CrossAnnotationTeacher",
        "-m",
        "parlai_ext.agents:ReplayAgent",
        "--q2-annotations",
        str(data),
        "--datapath",
        str(tmp_path / "datapath"),
        "--metrics",
        "q2",
        "--log-every-n-secs",
        "-1",
        *flags,
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for explain, how in ((data, "is the input"), (tmp_path, "contains the input")):
        run = subprocess.run(
            [*base, "--q2-explain-file", str(explain)], capture_output=True, text=True, env=env, timeout=600
        )
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert f"(--q2-explain-file) {how} '{data}' (--q2-annotations)" in run.stderr.strip().splitlines()[-1]
        assert snapshot(data) == before
    # a folder that does not exist yet is created
    explain = tmp_path / "new" / "deeper" / "explain.jsonl"
    run = subprocess.run(
        [*base, "--q2-explain-file", str(explain)], capture_output=True, text=True, env=env, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(explain.read_text().splitlines()) == 3 and snapshot(data) == before


def test_parlai_explain_file_against_every_input_and_output(tmp_path, capsys):
    pytest.importorskip("parlai")
    from parlai_ext.options import check_explain_file

    model = tmp_path / "model"
    model.write_text("weights")
    report = tmp_path / "report.json"
    opt = {
        "model_file": str(model),
        "report_filename": str(report),
        "world_logs": str(tmp_path / "logs.jsonl"),
    }
    for path, needle in (
        (model, "is the input"),
        (report, "name the same path"),
        (tmp_path / "logs.jsonl", "name the same path"),
        (model / "x.jsonl", "lies inside"),
    ):
        with pytest.raises(SystemExit) as exit_:
            check_explain_file(opt, str(path))
        assert exit_.value.code == 2 and needle in capsys.readouterr().err
    assert model.read_text() == "weights"


PY = sys.executable


def test_parlai_option_checks_name_the_parlai_flag():
    pytest.importorskip("parlai")
    from parlai_ext.options import config_from_opt
    from q2_metric.errors import Q2OptionError

    base = {"q2_qg_model": "qg", "q2_qa_model": "qa", "q2_nli_model": "nli", "q2_device": "cpu"}
    for key, value, message in [
        ("q2_batch_size", 0, "Invalid Q² option --q2-batch-size=0: use an integer >= 1."),
        ("q2_batch_size", -1, "Invalid Q² option --q2-batch-size=-1: use an integer >= 1."),
        ("q2_max_question_length", 0, "Invalid Q² option --q2-max-question-length=0: use an integer >= 1."),
    ]:
        with pytest.raises(Q2OptionError) as err:
            config_from_opt({**base, key: value})
        assert str(err.value) == message


def test_parlai_device_without_gpu_is_one_parse_error(tmp_path):
    pytest.importorskip("parlai")
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a GPU")
    res = subprocess.run(
        [
            PY,
            "-m",
            "parlai.scripts.eval_model",
            "-t",
            "parlai_ext.teachers:CrossAnnotationTeacher",
            "-m",
            "parlai_ext.agents:ReplayAgent",
            "--datapath",
            str(tmp_path),
            "--metrics",
            "q2",
            "--q2-device",
            "cuda",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert (
        "argument --q2-device: invalid value 'cuda': torch sees 0 CUDA device(s) here; use 'auto' or 'cpu'"
        in res.stdout + res.stderr
    )
    assert "--device cpu" not in res.stdout + res.stderr
