"""Tiny models, the coreference one included, from every front-end, all through the one provision
path (`q2_metric.models.provision.provide_models`), built once under a lock.

Each front-end is run with an empty Q2_TINY_MODELS; what is checked is what a user sees: the run
works offline and its signature names tiny random models (`tiny-random-...`), the coreference
model included when `--coref` is on.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from q2_metric.config import Q2Config

BUILD = (
    "import sys; from q2_metric.config import Q2Config; from q2_metric.models.provision import provide_models; "
    "c = provide_models(Q2Config(tiny=True, coref=True), say=lambda m: print(m, file=sys.stderr)); "
    "print(c.qg_model, c.coref_model)"
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-everywhere")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("Q2_TINY_MODELS", str(folder))
        mp.delenv("Q2_TINY", raising=False)
        yield folder


def test_first_runs_at_once_build_the_models_once(tmp_path):
    env = {**os.environ, "Q2_TINY_MODELS": str(tmp_path / "tiny"), "HF_HUB_OFFLINE": "1"}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err for _, err in outs]
    assert sum(err.count("Building small random models") for _, err in outs) == 1
    assert {out.strip() for out, _ in outs} == {f"{tmp_path / 'tiny' / 'qg'} {tmp_path / 'tiny' / 'coref'}"}
    assert sorted(p.name for p in (tmp_path / "tiny").iterdir()) == [".lock", "coref", "nli", "qa", "qg"]


def test_q2_score_tiny_coref(tiny_dir, tmp_path, capsys):
    from q2_metric.cli import main

    data = tmp_path / "in.csv"
    data.write_text(
        "response,knowledge,history\nHe hosted it.,Bob Ross hosted The Joy of Painting.,"
        "Who was Bob Ross? ||| A painter.\n"
    )
    assert (
        main(
            [
                "score",
                str(data),
                "-o",
                str(tmp_path / "out.csv"),
                "--tiny",
                "--coref",
                "--history-col",
                "history",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "coref:tiny-random-" in out and "qg:tiny-random-" in out
    with open(tmp_path / "out.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 1


def test_evaluate_compute_tiny_coref(tiny_dir):
    evaluate = pytest.importorskip("evaluate")
    import q2_metric

    q2 = evaluate.load(q2_metric.module_path())
    results = q2.compute(
        predictions=["He hosted it."],
        references=["Bob Ross hosted The Joy of Painting."],
        tiny=True,
        coref=True,
        histories=[["Who was Bob Ross?"]],
    )
    assert "coref:tiny-random-" in results["signature"]


def test_space_with_q2_tiny_and_coref_options(tiny_dir, monkeypatch):
    from q2_metric.hub.space import space_config

    monkeypatch.setenv("Q2_TINY", "1")
    monkeypatch.setenv("Q2_SPACE_OPTIONS", '{"coref": true}')
    config = space_config()
    assert (config.qg_model, config.coref_model) == (str(tiny_dir / "qg"), str(tiny_dir / "coref"))


def test_parlai_q2_tiny_and_q2_coref(tiny_dir):
    pytest.importorskip("parlai")
    from parlai_ext.options import config_from_opt

    config = config_from_opt({"q2_tiny": True, "q2_coref": True, "q2_coref_model": Q2Config().coref_model})
    assert (config.nli_model, config.coref_model) == (str(tiny_dir / "nli"), str(tiny_dir / "coref"))


def test_meta_eval_dataset_tiny(tiny_dir, tmp_path, capsys):
    """Offline, without --tiny this run stops at the missing paper models; with it, it scores."""
    from q2_metric.cli import main

    data = tmp_path / "set.csv"
    data.write_text(
        "response,knowledge,label\nBob Ross hosted it.,Bob Ross hosted The Joy of Painting.,1\n"
        "It aired in 1950.,The Joy of Painting aired from 1983 to 1994.,0\n"
    )
    base = [
        "meta-eval",
        "--dataset",
        f"mine={data}",
        "--no-bertscore",
        "--no-progress",
        "--out-dir",
        str(tmp_path / "bench"),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main(base) == 2
    assert "hf download" in capsys.readouterr().err
    assert main(base + ["--tiny"]) == 0
    assert Path(tmp_path / "bench" / "benchmark.json").is_file()
