"""ParlAI with --metrics q2: real ParlAI commands in subprocesses (offline, --datapath in tmp, tiny
random models), and in-process runs where only ParlAI's plumbing is under test."""

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("parlai")

from support.parlai_data import ANNOTATIONS, make_wow_datapath, write_annotations

PY = sys.executable
PARLAI = str(Path(sys.executable).with_name("parlai"))
# ParlAI 1.7.2 applies --seed only after the model is built: seed first, so that the tiny generator
# is the same model on every run (unseeded, 2.4% of them generate an empty response).
SEEDED_TRAIN_MODEL = (
    "import random, numpy, torch; random.seed(0); numpy.random.seed(0); torch.manual_seed(0); "
    "from parlai.scripts.train_model import TrainModel; TrainModel.main()"
)
EXPLAIN_FIELDS = {
    "teacher",
    "datatype",
    "system",
    "episode_idx",
    "turn_idx",
    "example_id",
    "pass",
    "batch",
    "status",
    "reason",
    "response",
    "knowledge",
    "q2",
    "q2_no_nli",
    "questions",
    "signature",
}
REPLAY = ["-t", "parlai_ext.teachers:CrossAnnotationTeacher", "-m", "parlai_ext.agents:ReplayAgent"]


def annotated_rows(n: int) -> list[dict]:
    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))[:n]


@pytest.fixture(scope="module")
def wow(tmp_path_factory):
    return make_wow_datapath(tmp_path_factory.mktemp("wow"))


@pytest.fixture(scope="module")
def q2_flags(tiny_config):
    return [
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


def run(*cmd):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=600, env=env)


def eval_model(*args, cli: bool = False):
    """`parlai eval_model` (cli) or `python -m parlai.scripts.eval_model`: the same script, without
    the super command importing every other script first (seconds per run)."""
    return run(PARLAI, "eval_model", *args) if cli else run(PY, "-m", "parlai.scripts.eval_model", *args)


def eval_report(tmp_path, *args, cli: bool = False) -> dict:
    out = tmp_path / f"report{len(list(tmp_path.glob('report*')))}.json"
    args = (*args, "--report-filename", str(out))
    if "--log-every-n-secs" not in args:
        args += ("--log-every-n-secs", "-1")
    res = eval_model(*args, cli=cli)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(out.read_text())["report"]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_explained(lines: list[dict], report: dict) -> None:
    """Every turn has its line with all fields; the lines add up to the report."""
    assert lines and all(set(line) >= EXPLAIN_FIELDS for line in lines)
    status = Counter(line["status"] for line in lines)
    assert set(status) <= {"scored", "empty", "bad"}  # the contract's statuses (frontend.STATUSES)
    # a turn without knowledge is empty, never sent to the engine, and counted in q2_skipped
    counts = {"scored": ["q2_scored"], "empty": ["q2_empty", "q2_skipped"], "bad": ["q2_bad"]}
    for key, metrics in counts.items():
        assert status[key] == sum(report.get(m, 0) for m in metrics), key
    scored = [line for line in lines if line["status"] == "scored"]
    if scored:
        assert sum(line["q2"] for line in scored) / len(scored) == pytest.approx(report["q2"])
    for line in lines:
        if line["status"] == "scored":
            assert isinstance(line["q2"], float) and line["signature"].startswith("q2:")
            assert isinstance(line["batch"], int) and line["knowledge"]
        else:
            assert line["q2"] is None and line["reason"]
        if line["status"] == "empty" and line["knowledge"] is not None:
            assert not line["response"].strip() and line["signature"].startswith("q2:")
        # the spans lie at their offsets in the response as the teacher gave it (issue 43)
        for span in line["spans"]:
            assert line["response"][span["start"] : span["end"]] == span["text"]
        assert line["unsupported_spans"] == [s for s in line["spans"] if s["supported"] is False]
    assert any(line["spans"] for line in scored) or not scored


# -- Wizard of Wikipedia: every datatype --------------------------------------------------------


# eval_model evaluates training data only in evalmode; train_model's own `train:ordered:stream`
# pass (building the dictionary) runs in the `tiny_generator` fixture
@pytest.mark.parametrize("datatype", ["valid:stream", "train:evalmode:ordered:stream"])
def test_streaming_datatypes(datatype, wow, q2_flags, tmp_path):
    """Stream teachers load no data at construction: the check is made as turns go by."""
    explain = tmp_path / "explain.jsonl"
    report = eval_report(
        tmp_path,
        "-t",
        "parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher",
        "-m",
        "repeat_label",
        "--datapath",
        str(wow),
        "-dt",
        datatype,
        "--metrics",
        "q2",
        *q2_flags,
        "--q2-explain-file",
        str(explain),
        cli=datatype == "valid:stream",
    )
    assert 0 <= report["q2"] <= 1 and report["q2_scored"] == 5 and report["q2_skipped"] == 1
    lines = read_jsonl(explain)
    assert [(line["episode_idx"], line["turn_idx"]) for line in lines] == [(i, 0) for i in range(6)]
    assert lines[-1]["status"] == "empty" and lines[-1]["knowledge"] is None  # no_passages_used
    assert lines[-1]["reason"].startswith("no knowledge: ")
    assert {line["datatype"] for line in lines} == {datatype} and lines[0]["system"] == "repeat_label"
    check_explained(lines, report)


def test_other_datatypes_and_teachers_in_process(wow, tiny_config, tmp_path):
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    flags = dict(
        q2_qg_model=tiny_config.qg_model,
        q2_qa_model=tiny_config.qa_model,
        q2_nli_model=tiny_config.nli_model,
        q2_decoding="greedy",
        q2_max_question_length=8,
        q2_device="cpu",
        datapath=str(wow),
        log_every_n_secs=-1,
        model="repeat_label",
    )
    for task, datatype, extra in [
        ("Q2WizardDialogKnowledgeTeacher", "valid", {}),
        # the generator teacher forces the checked sentence on
        ("Q2GeneratorTeacher", "test", {"include_checked_sentence": False}),
    ]:
        report = dict_report(
            EvalModel.main(
                task=f"parlai_ext.teachers:{task}", datatype=datatype, metrics="q2", **flags, **extra
            )
        )
        assert (report["q2_scored"], report["q2_skipped"], report["q2_empty"]) == (5, 1, 0), (task, datatype)
        assert 0 <= report["q2"] <= 1
    plain = EvalModel.main(task="parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher", **flags)
    assert not any(key.startswith("q2") for key in plain)


# -- a trained generator ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_generator(wow, q2_flags, tmp_path_factory):
    """A tiny generator trained for 3 steps on streamed data with Q² as the validation metric
    (validated after each step, then the final valid and test passes). The dictionary is built first,
    by ParlAI's `train:ordered:stream` pass over the teacher."""
    folder = tmp_path_factory.mktemp("gen")
    model_file, explain = folder / "model", folder / "explain.jsonl"
    res = run(
        PY,
        "-c",
        SEEDED_TRAIN_MODEL,
        "-t",
        "parlai_ext.teachers:Q2GeneratorTeacher",
        "-m",
        "transformer/generator",
        "-dt",
        "train:stream",
        "--model-file",
        str(model_file),
        "--datapath",
        str(wow),
        "--n-layers",
        "1",
        "--n-heads",
        "2",
        "--embedding-size",
        "16",
        "--ffn-size",
        "32",
        "--max-train-steps",
        "3",
        "--batchsize",
        "2",
        "--dict-tokenizer",
        "re",
        "--no-cuda",
        "--truncate",
        "64",
        "--label-truncate",
        "16",
        "--validation-every-n-steps",
        "1",
        "--metrics",
        "q2",
        "--validation-metric",
        "q2",
        "--skip-generation",
        "false",
        "--validation-cutoff",
        "2",  # random models often reach q2 = 1.0, which would end training
        # beam of one with a minimum length: greedy decoding that cannot stop at once
        "--inference",
        "beam",
        "--beam-size",
        "1",
        "--beam-min-length",
        "2",
        # ParlAI 1.7.2's plateau scheduler passes `verbose`, which torch 2.13 removed
        "--lr-scheduler",
        "none",
        "--log-every-n-secs",
        "-1",
        *q2_flags,
        "--q2-explain-file",
        str(explain),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return model_file, explain


def test_train_model_with_q2_validation_metric(tiny_generator):
    model_file, explain = tiny_generator
    stats = json.loads(Path(f"{model_file}.trainstats").read_text())
    valid = stats["valid_reports"]
    assert len(valid) >= 2 and all(0 <= r["q2"] <= 1 for r in valid)
    assert all(r["q2_scored"] + r["q2_empty"] == 5 and r["q2_skipped"] == 1 for r in valid)
    assert stats["best_valid"] == max(r["q2"] for r in valid)
    lines = read_jsonl(explain)
    passes = Counter((line["datatype"], line["pass"]) for line in lines)
    # every turn of every pass once: 2 validations, the final valid and test passes
    assert sorted(passes.values()) == [6] * 4 and [dt for dt, _ in sorted(passes, key=lambda k: k[1])] == [
        "valid:stream"
    ] * 3 + ["test:stream"]
    assert {line["system"] for line in lines} == {str(model_file)}


def test_trained_tiny_generator(wow, tiny_generator, q2_flags, tmp_path):
    """Batched generation (BatchWorld) with per-turn Q² in ParlAI's world logs."""
    model_file, _ = tiny_generator
    explain, logs = tmp_path / "explain.jsonl", tmp_path / "world_logs.jsonl"
    report = eval_report(
        tmp_path,
        "-mf",
        str(model_file),
        "-t",
        "parlai_ext.teachers:Q2GeneratorTeacher",
        "--datapath",
        str(wow),
        "--batchsize",
        "4",
        "--no-cuda",
        "--metrics",
        "q2",
        *q2_flags,
        "--q2-batch-size",
        "4",
        "--q2-explain-file",
        str(explain),
        "--world-logs",
        str(logs),
    )
    assert 0 <= report["q2"] <= 1 and (report["q2_scored"], report["q2_empty"]) == (5, 0)
    lines = read_jsonl(explain)
    check_explained(lines, report)
    assert sorted(line["episode_idx"] for line in lines) == list(range(6))
    assert {line["batch"] for line in lines if line["status"] == "scored"} == {0, 1}
    # world logs: each model turn carries its own q2, joined to the explain file by episode index
    turns = [pair for convo in read_jsonl(logs) for pair in convo["dialog"]]
    assert len(turns) == 6
    by_episode = {line["episode_idx"]: line for line in lines}
    for teacher_turn, model_turn in turns:
        line = by_episode[teacher_turn["q2_episode_idx"]]
        assert model_turn["text"] == line["response"]
        if line["status"] == "scored":
            assert model_turn["metrics"]["q2"] == pytest.approx(line["q2"])
        else:
            assert "q2" not in model_turn["metrics"] and model_turn["metrics"]["q2_skipped"] == 1


# -- replayed systems ---------------------------------------------------------------------------


def test_replay_annotated_system_explain_file(q2_flags, tmp_path):
    n, batch = 12, 5
    explain = tmp_path / "explain.jsonl"
    explain.write_text('{"from": "an earlier run"}\n')  # overwritten: no --q2-explain-append
    report = eval_report(
        tmp_path,
        *REPLAY,
        "--replay-system",
        "dodeca",
        "--datapath",
        str(tmp_path / "data"),
        "--num-examples",
        str(n),
        "--metrics",
        "q2",
        *q2_flags,
        "--q2-batch-size",
        str(batch),
        "--q2-explain-file",
        str(explain),
    )
    assert report["q2_scored"] == n and (report["q2_empty"], report["q2_skipped"]) == (0, 0)
    lines = read_jsonl(explain)
    check_explained(lines, report)
    rows = annotated_rows(n)
    assert [line["episode_idx"] for line in lines] == list(range(n))
    assert [line["example_id"] for line in lines] == [f"{r['episode_idx']}:{r['round']}" for r in rows]
    assert [line["response"] for line in lines] == [r["dodeca_response"] for r in rows]
    assert [line["knowledge"] for line in lines] == [r["knowledge"] for r in rows]
    assert [line["batch"] for line in lines] == [i // batch for i in range(n)]
    assert {line["system"] for line in lines} == {"replay:dodeca"}
    assert {line["teacher"] for line in lines} == {"parlai_ext.teachers:CrossAnnotationTeacher"}
    assert len({line["signature"] for line in lines}) == 1


def test_empty_responses_are_counted_and_explained(q2_flags, tmp_path):
    empty = {1: "", 4: "", 6: "   "}
    data = write_annotations(
        tmp_path / "annotations.csv", 8, lambda i, row: empty.get(i, row["dodeca_response"])
    )
    explain = tmp_path / "explain.jsonl"
    explain.write_text('{"from": "an earlier run"}\n')
    report = eval_report(
        tmp_path,
        *REPLAY,
        "--q2-annotations",
        str(data),
        "--datapath",
        str(tmp_path / "data"),
        "--metrics",
        "q2",
        *q2_flags,
        "--q2-explain-file",
        str(explain),
        "--q2-explain-append",
        "true",
    )
    assert (report["q2_scored"], report["q2_empty"], report["q2_skipped"]) == (5, 3, 0)
    kept, *lines = read_jsonl(explain)
    assert kept == {"from": "an earlier run"}
    check_explained(lines, report)
    assert [i for i, line in enumerate(lines) if line["status"] == "empty"] == sorted(empty)


def test_missing_model_fails_before_generation(q2_flags, tmp_path):
    logs = tmp_path / "world_logs.jsonl"
    flags = [*q2_flags[:1], str(tmp_path / "no_such_model"), *q2_flags[2:]]
    res = eval_model(
        *REPLAY,
        "--datapath",
        str(tmp_path / "data"),
        "--metrics",
        "q2",
        *flags,
        "--display-examples",
        "true",
        "--world-logs",
        str(logs),
    )
    assert res.returncode != 0
    # one sentence, no traceback (tests/integration/test_parlai_messages.py checks the other failures)
    assert "Traceback" not in res.stderr and "--q2-qg-model" in res.stderr and "--q2-tiny true" in res.stderr
    assert "(--qg-model)" not in res.stderr
    first = annotated_rows(1)[0]["dodeca_response"]
    assert first not in res.stdout + res.stderr and not logs.exists()  # nothing was generated


def test_periodic_logs_do_not_split_batches(q2_flags, tiny_config, tmp_path):
    """200 turns in batches of 64: 4 engine calls, with a report after every turn (a real
    `eval_model` process) as without intermediate reports (in process, same engine)."""
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    # one real response in ten: the others ("ok .") have no candidate and score fast
    data = write_annotations(
        tmp_path / "annotations.csv", 200, lambda i, row: row["dodeca_response"] if i % 10 == 0 else "ok ."
    )
    logged_explain, quiet_explain = tmp_path / "logged.jsonl", tmp_path / "quiet.jsonl"
    res = eval_model(
        *REPLAY,
        "--q2-annotations",
        str(data),
        "--datapath",
        str(tmp_path / "data"),
        "--metrics",
        "q2",
        *q2_flags,
        "--q2-batch-size",
        "64",
        "--q2-explain-file",
        str(logged_explain),
        "--log-every-n-secs",
        "0.0001",
        "--report-filename",
        str(tmp_path / "report.json"),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert (res.stdout + res.stderr).count("% complete") > 100  # the intermediate reports did happen
    logged = json.loads((tmp_path / "report.json").read_text())["report"]
    quiet = dict_report(
        EvalModel.main(
            task=REPLAY[1],
            model=REPLAY[3],
            q2_annotations=str(data),
            datapath=str(tmp_path / "data"),
            metrics="q2",
            q2_qg_model=tiny_config.qg_model,
            q2_qa_model=tiny_config.qa_model,
            q2_nli_model=tiny_config.nli_model,
            q2_decoding="greedy",
            q2_max_question_length=8,
            q2_device="cpu",
            q2_batch_size=64,
            q2_explain_file=str(quiet_explain),
            log_every_n_secs=-1,
        )
    )
    calls = []
    for report, explain in ((logged, logged_explain), (quiet, quiet_explain)):
        lines = read_jsonl(explain)
        check_explained(lines, report)
        calls.append(Counter(line["batch"] for line in lines))
    assert calls[0] == calls[1] == {0: 64, 1: 64, 2: 64, 3: 8}
    for key in ("q2_scored", "q2_empty", "q2_skipped"):
        assert logged[key] == quiet[key]
    assert logged["q2"] == pytest.approx(quiet["q2"]) and logged["q2_no_nli"] == pytest.approx(
        quiet["q2_no_nli"]
    )


# -- in process, with the scripted engine -------------------------------------------------------


@pytest.fixture
def scripted(monkeypatch):
    """The scripted engine in place of the models; returns the sizes of the engine calls."""
    from q2_metric.testing.scripted import scripted_scorer

    calls = []

    def factory(config):
        scorer = scripted_scorer(config)
        score = scorer.score_checked  # the engine's door of every path (the contract's items checked)

        def counted(responses, knowledge, *args, **kwargs):
            calls.append(len(responses))
            return score(responses, knowledge, *args, **kwargs)

        scorer.score_checked = counted
        return scorer

    monkeypatch.setattr("parlai_ext.report.SCORER_FACTORY", factory)
    return calls


def test_teacher_q2_equals_engine_score_in_batches(scripted, tmp_path):
    """ParlAI's q2 is the engine's system score; one engine call per full buffer, plus the last."""
    from parlai.scripts.eval_model import EvalModel

    from q2_metric.testing.scripted import scripted_scorer

    n, batch = 20, 8
    report = EvalModel.main(
        task="parlai_ext.teachers:CrossAnnotationTeacher",
        model="parlai_ext.agents:ReplayAgent",
        replay_system="memnet",
        metrics="q2",
        datapath=str(tmp_path),
        num_examples=n,
        q2_batch_size=batch,
        log_every_n_secs=-1,
    )
    rows = annotated_rows(n)
    expected = scripted_scorer().score([r["memnet_response"] for r in rows], [r["knowledge"] for r in rows])
    assert report["q2"].value() == pytest.approx(expected.q2)
    assert scripted == [8, 8, 4]


@pytest.mark.parametrize("num_examples, q2_batch, calls", [(6, 6, [6, 2]), (-1, 5, [5, 5, 2])])
def test_batch_copies_and_example_limit(scripted, tmp_path, num_examples, q2_batch, calls):
    """Four teacher copies (--batchsize 4): every evaluated turn is scored once, the last partial
    batch when --num-examples is reached (ParlAI rounds it up to whole batches) or the data ends."""
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    data = write_annotations(tmp_path / "annotations.csv", 12)
    report = dict_report(
        EvalModel.main(
            task=REPLAY[1],
            model=REPLAY[3],
            q2_annotations=str(data),
            metrics="q2",
            datapath=str(tmp_path),
            num_examples=num_examples,
            batchsize=4,
            q2_batch_size=q2_batch,
            log_every_n_secs=-1,
        )
    )
    assert report["q2_scored"] == report["exs"] == sum(calls) and scripted == calls


def test_data_without_checked_sentence_is_a_clear_error(scripted, tmp_path):
    from parlai.scripts.eval_model import EvalModel

    from parlai_ext.options import Q2DataError

    data = make_wow_datapath(tmp_path, checked=False)
    with pytest.raises(Q2DataError, match="no Wizard turn has a checked_sentence"):
        EvalModel.main(
            task="parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher",
            model="repeat_label",
            datapath=str(data),
            metrics="q2",
            datatype="valid:stream",
            log_every_n_secs=-1,
        )


def test_missing_knowledge_is_reported_at_an_intermediate_report(scripted, tmp_path, monkeypatch):
    """Past EARLY_DATA_ERROR_TURNS turns without knowledge, the next report stops the run."""
    from parlai.scripts.eval_model import EvalModel

    from parlai_ext.options import Q2DataError

    monkeypatch.setattr("parlai_ext.report.EARLY_DATA_ERROR_TURNS", 3)
    data = make_wow_datapath(tmp_path, episodes=12, checked=False)
    with pytest.raises(Q2DataError, match="none of the 3 evaluated turns"):
        EvalModel.main(
            task="parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher",
            model="repeat_label",
            datapath=str(data),
            metrics="q2",
            log_every_n_secs=1e-9,
        )


def test_knowledge_teacher_needs_the_checked_sentence(scripted, wow):
    from parlai.scripts.eval_model import EvalModel

    from parlai_ext.options import Q2DataError

    with pytest.raises(Q2DataError, match="--include-checked-sentence true"):
        EvalModel.main(
            task="parlai_ext.teachers:Q2WizardDialogKnowledgeTeacher",
            model="repeat_label",
            datapath=str(wow),
            metrics="q2",
            include_checked_sentence=False,
        )


def test_parlai_messages_are_made_in_its_flags(tmp_path):
    """ParlAI's model check names its --q2-* flags where each message is made (its `Spelling`), the
    spaCy pipeline's load included; nothing is rewritten afterwards. Sentences written by hand."""
    from parlai_ext.options import SPELL, Q2ModelError
    from parlai_ext.report import check_models
    from q2_metric.config import Q2Config
    from q2_metric.errors import ModelNotAvailable
    from q2_metric.frontend import model_words
    from q2_metric.models.spacy_parser import load_spacy

    missing = tmp_path / "missing"
    with pytest.raises(Q2ModelError) as err:
        check_models(Q2Config(qg_model=str(missing), device="cpu"))
    assert str(err.value).endswith(
        f"The question-generation model path '{missing}' is not a directory with a saved model (nothing "
        "is there); pass a directory written by save_pretrained() as --q2-qg-model; or try the whole "
        "pipeline now on tiny random models (meaningless scores, no download): --q2-tiny true."
    )
    with pytest.raises(ModelNotAvailable) as err, model_words(SPELL):
        load_spacy(str(tmp_path))  # a folder spaCy cannot load
    assert str(err.value) == (
        f"The spaCy model '{tmp_path}' is not installed: install its package or pass an installed model "
        "name or directory as --q2-spacy-model."
    )


# -- ParlAI's multi-process evaluation ----------------------------------------------------------


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


@pytest.mark.skipif(_gpus() < 2, reason="multiprocessing_eval needs CUDA (NCCL), one GPU per worker")
def test_multiprocessing_eval_equals_single_process(q2_flags, tmp_path):
    common = [
        *REPLAY,
        "--replay-system",
        "dodeca",
        "--datapath",
        str(tmp_path / "data"),
        "--num-examples",
        "-1",
        "--metrics",
        "q2",
        *q2_flags,
        "--q2-batch-size",
        "16",
        "--log-every-n-secs",
        "-1",
    ]
    single = eval_report(tmp_path, *common)
    out = tmp_path / "multi.json"
    res = run(
        PY,
        "-m",
        "parlai.scripts.multiprocessing_eval",
        *common,
        "--distributed-world-size",
        "2",
        "--report-filename",
        str(out),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    multi = json.loads(out.read_text())["report"]
    for key in ("q2_scored", "q2_empty", "q2_skipped"):
        assert multi[key] == single[key]
    assert multi["q2"] == pytest.approx(single["q2"]) and multi["q2_no_nli"] == pytest.approx(
        single["q2_no_nli"]
    )


def test_no_generated_text_is_a_clear_error(wow, tiny_generator, scripted):
    from parlai.scripts.eval_model import EvalModel

    from parlai_ext.options import Q2DataError

    model_file, _ = tiny_generator
    with pytest.raises(Q2DataError, match="--skip-generation false"):
        EvalModel.main(
            model_file=str(model_file),
            task="parlai_ext.teachers:Q2GeneratorTeacher",
            datapath=str(wow),
            metrics="q2",
            skip_generation=True,
            no_cuda=True,
            log_every_n_secs=-1,
        )


def test_validation_metric_q2_always_has_a_value(scripted):
    """With --validation-metric q2, a validation report where nothing could be scored (yet) still
    has q2 (ParlAI's 0/0 = 0.0), so that train_model does not stop on a missing key."""
    from parlai.core.metrics import dict_report

    from parlai_ext.options import q2_requested
    from parlai_ext.report import Q2Buffer

    opt = {
        "q2_qg_model": "qg",
        "q2_qa_model": "qa",
        "q2_nli_model": "nli",
        "datatype": "valid:stream",
        "metrics": "default",
        "validation_metric": "q2",
    }
    assert q2_requested(opt)
    report = dict_report(Q2Buffer(opt).report())
    assert report == {"q2": 0.0, "q2_no_nli": 0.0, "q2_scored": 0, "q2_empty": 0, "q2_skipped": 0}
    assert "q2" not in Q2Buffer({**opt, "validation_metric": "ppl"}).report()


def test_cross_annotation_empty_or_nul_knowledge_is_skipped_and_counted(scripted, tmp_path):
    """Issue 19: an empty (or NUL-only) checked sentence is a turn without knowledge, skipped and
    counted in q2_skipped like no_passages_used; it no longer stops the whole evaluation."""
    from parlai.core.metrics import dict_report
    from parlai.scripts.eval_model import EvalModel

    with open(ANNOTATIONS, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)[:6]
    rows[1]["knowledge"], rows[4]["knowledge"] = "", "\x00\x00"
    data = tmp_path / "annotations.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    report = dict_report(
        EvalModel.main(
            task=REPLAY[1],
            model=REPLAY[3],
            q2_annotations=str(data),
            metrics="q2",
            datapath=str(tmp_path),
            q2_batch_size=8,
            log_every_n_secs=-1,
        )
    )
    assert (report["q2_scored"], report["q2_skipped"], report["exs"]) == (4, 2, 6)
    assert scripted == [4]
