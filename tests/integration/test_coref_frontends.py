"""`--coref` from every front-end on tiny models: Python, evaluate, `q2 score --history-col`, ParlAI
(with the teacher's episode so far as the history), the Space and `q2 score --ray` (no history there:
each response resolved alone)."""

import csv
import json

import pytest

pytest.importorskip("fastcoref")

from support.files import read_jsonl

from q2_metric.display import history_separator


@pytest.fixture(scope="module")
def tiny_coref(tmp_path_factory, rows):
    from q2_metric.models.hf_coref import build_tiny_coref_model

    texts = [r[c] for r in rows for c in ("message", "response", "knowledge", "gold")]
    return build_tiny_coref_model(tmp_path_factory.mktemp("fcoref"), texts)


@pytest.fixture(scope="module")
def coref_config(tiny_config, tiny_coref):
    return tiny_config.replace(coref=True, coref_model=tiny_coref, decoding="greedy", max_question_length=8)


def test_python_api_with_histories(coref_config, rows):
    from q2_metric import Q2Scorer

    result = Q2Scorer(coref_config).score(
        [r["response"] for r in rows[:3]],
        [r["knowledge"] for r in rows[:3]],
        histories=[[r["message"]] for r in rows[:3]],
    )
    assert all(res.coref is not None and res.coref.history_turns == 1 for res in result.responses)
    assert "coref" in result.signature.to_dict()


def test_evaluate_compute_histories(coref_config, rows):
    import evaluate

    import q2_metric

    q2 = evaluate.load(q2_metric.module_path())
    opts = dict(
        qg_model=coref_config.qg_model,
        qa_model=coref_config.qa_model,
        nli_model=coref_config.nli_model,
        device="cpu",
        decoding="greedy",
        max_question_length=8,
        coref=True,
        coref_model=coref_config.coref_model,
    )
    some = rows[:2]
    out = q2.compute(
        predictions=[r["response"] for r in some],
        references=[r["knowledge"] for r in some],
        histories=[[r["topic"], r["message"]] for r in some],
        return_details=True,
        **opts,
    )
    assert [d["coref"]["history_turns"] for d in out["details"]] == [2, 2]
    assert "|coref:local-" in out["signature"]
    with pytest.raises(Exception, match="field 'histories' must hold one list of turns per response"):
        q2.compute(predictions=["a"], references=["b"], histories=[["x"], ["y"]], **opts)


def test_cli_score_coref_history_col(coref_config, rows, tmp_path, capsys):
    from q2_metric.cli import main

    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["response", "knowledge", "history"])
        w.writeheader()
        for r in rows[:3]:
            w.writerow(
                {
                    "response": r["response"],
                    "knowledge": r["knowledge"],
                    "history": f"{r['topic']}{history_separator()}{r['message']}",
                }
            )
    before = data.read_bytes()
    models = [
        "--qg-model",
        coref_config.qg_model,
        "--qa-model",
        coref_config.qa_model,
        "--nli-model",
        coref_config.nli_model,
        "--device",
        "cpu",
        "--decoding",
        "greedy",
        "--max-question-length",
        "8",
    ]
    summary = tmp_path / "summary.json"
    steps = tmp_path / "steps.csv"
    cache = tmp_path / "cache"
    code = main(
        [
            "score",
            str(data),
            "-o",
            str(tmp_path / "out.csv"),
            "--summary",
            str(summary),
            "--cache-dir",
            str(cache),
            "--no-progress",
            "--coref",
            "--coref-model",
            coref_config.coref_model,
            "--history-col",
            "history",
            "--steps",
            str(steps),
            *models,
        ]
    )
    assert code == 0 and data.read_bytes() == before
    assert "|coref:local-" in json.loads(summary.read_text())["signature"]
    # each response was resolved with its two history turns (the cache keeps what the engine returned)
    [cached] = list(cache.glob("*/responses.jsonl"))
    entries = [json.loads(line)["result"] for line in cached.read_text().splitlines()]
    assert sorted(e["coref"]["original"] for e in entries) == sorted(r["response"] for r in rows[:3])
    assert all(e["coref"]["history_turns"] == 2 for e in entries)
    # --history-col without --coref is refused in one sentence
    assert (
        main(["score", str(data), "-o", str(tmp_path / "o2.csv"), "--history-col", "history", *models]) != 0
    )
    assert "--history-col is read by --coref only" in capsys.readouterr().err
    # a missing history column names the flag
    code = main(
        [
            "score",
            str(data),
            "-o",
            str(tmp_path / "o3.csv"),
            "--no-cache",
            "--coref",
            "--coref-model",
            coref_config.coref_model,
            "--history-col",
            "turns",
            *models,
        ]
    )
    assert code != 0 and "has no column 'turns'" in capsys.readouterr().err


def _multi_turn_wow(root, rows):
    """Two WoW episodes of two Wizard turns each (the knowledge of each turn checked)."""
    data = []
    for e in range(2):
        dialog = []
        for t in range(2):
            row = rows[2 * e + t]
            topic, sentence = row["topic"], row["knowledge"]
            dialog += [
                {
                    "speaker": "0_Apprentice",
                    "text": row["message"],
                    "retrieved_topics": [topic],
                    "retrieved_passages": [{topic: [sentence]}],
                },
                {
                    "speaker": "1_Wizard",
                    "text": row["gold"],
                    "retrieved_topics": [],
                    "retrieved_passages": [],
                    "checked_sentence": {f"chosen_{topic.replace(' ', '_')}_0": sentence},
                    "checked_passage": {f"chosen_{topic.replace(' ', '_')}": topic},
                },
            ]
        data.append(
            {
                "chosen_topic": rows[2 * e]["topic"],
                "chosen_topic_passage": [rows[2 * e]["knowledge"]],
                "wizard_eval": 5,
                "persona": "",
                "dialog": dialog,
            }
        )
    folder = root / "wizard_of_wikipedia"
    folder.mkdir(parents=True)
    (folder / ".built").write_text("2026-01-01\n1.0")
    for name in ("data.json", "train.json", "valid_random_split.json", "test_random_split.json"):
        (folder / name).write_text(json.dumps(data))
    return root


def test_parlai_q2_coref_uses_the_episode_so_far(monkeypatch, tmp_path, rows, coref_config):
    pytest.importorskip("parlai")
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    from q2_metric.scorer import cached_scorer

    histories = []

    def factory(config):
        scorer = cached_scorer(config)
        if not hasattr(scorer, "unwrapped_score"):  # the same scorer comes back on every call
            scorer.unwrapped_score = scorer.score_checked  # the engine's door of the contract's items
            scorer.score_checked = lambda r, k, h=None, **kw: (
                histories.extend(h) or scorer.unwrapped_score(r, k, h, **kw)
            )
        return scorer

    monkeypatch.setattr("parlai_ext.report.SCORER_FACTORY", factory)
    wow = _multi_turn_wow(tmp_path / "data", rows)
    explain = tmp_path / "explain.jsonl"
    c = coref_config
    report = dict_report(
        EvalModel.main(
            task="parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher",
            datatype="valid",
            metrics="q2",
            model="repeat_label",
            datapath=str(wow),
            log_every_n_secs=-1,
            q2_qg_model=c.qg_model,
            q2_qa_model=c.qa_model,
            q2_nli_model=c.nli_model,
            q2_decoding="greedy",
            q2_max_question_length=8,
            q2_device="cpu",
            q2_coref=True,
            q2_coref_model=c.coref_model,
            q2_explain_file=str(explain),
        )
    )
    assert report["q2_scored"] == 4
    # turn 1: the apprentice's message; turn 2: that, the wizard's (gold) reply, the next message;
    # a new episode starts afresh
    assert [len(h) for h in histories] == [1, 3, 1, 3]
    assert histories[0][0].endswith(rows[0]["message"]) and histories[1][1] == rows[0]["gold"]
    assert histories[1][2].endswith(rows[1]["message"]) and histories[2][0].endswith(rows[2]["message"])
    lines = [json.loads(line) for line in explain.read_text().splitlines()]
    assert all(line["coref"]["history_turns"] in (1, 3) and "resolved" in line["coref"] for line in lines)


def test_space_coref_from_its_options(monkeypatch, coref_config, rows):
    """The Space takes `coref` through Q2_SPACE_OPTIONS; it has no history field, so the response is
    resolved alone, and its reason line and signature say so."""
    from q2_metric import Q2Scorer
    from q2_metric.hub.space import explain, space_config

    monkeypatch.setenv(
        "Q2_SPACE_OPTIONS",
        json.dumps(
            {
                "qg_model": coref_config.qg_model,
                "qa_model": coref_config.qa_model,
                "nli_model": coref_config.nli_model,
                "device": "cpu",
                "decoding": "greedy",
                "max_question_length": 8,
                "coref": True,
                "coref_model": coref_config.coref_model,
            }
        ),
    )
    config = space_config()
    assert config.coref and config.coref_model == coref_config.coref_model
    score, _reason, _, _, signature = explain(rows[0]["response"], rows[0]["knowledge"], Q2Scorer(config))
    assert "|coref:local-" in signature
    direct = Q2Scorer(coref_config).score([rows[0]["response"]], [rows[0]["knowledge"]]).responses[0]
    assert direct.coref is not None and direct.coref.history_turns == 0  # no history: the response alone
    assert score == (f"{direct.q2:.3f}" if direct.scored else "")


def test_ray_coref_matches_the_local_command(coref_config, rows, tmp_path):
    """`q2 score --ray --coref` (without history: each response resolved alone) gives the local
    command's rows."""
    import os
    import subprocess
    import sys

    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # never join another cluster

    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["response", "knowledge"])
        w.writeheader()
        w.writerows({"response": r["response"], "knowledge": r["knowledge"]} for r in rows[:3])
    models = [
        "--qg-model",
        coref_config.qg_model,
        "--qa-model",
        coref_config.qa_model,
        "--nli-model",
        coref_config.nli_model,
        "--device",
        "cpu",
        "--decoding",
        "greedy",
        "--max-question-length",
        "8",
        "--coref",
        "--coref-model",
        coref_config.coref_model,
        "--no-cache",
        "--no-progress",
    ]

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "q2_metric.cli", "score", str(data), *args, *models],
            capture_output=True,
            text=True,
            timeout=400,
            env=env,
        )

    local = run("-o", str(tmp_path / "local.jsonl"))
    remote = run(
        "-o", str(tmp_path / "ray.jsonl"), "--summary", str(tmp_path / "ray.json"), "--ray", "--workers", "1"
    )
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    want = read_jsonl(tmp_path / "local.jsonl")
    got = read_jsonl(tmp_path / "ray.jsonl")
    assert got == want and len(got) == 3
    assert (
        "|coref:local-" in json.loads((tmp_path / "ray.json").read_text())["signature"]
    )  # the workers resolved
