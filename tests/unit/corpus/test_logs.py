"""`q2 rescore`'s reader and scorer on saved logs built here: an lm-eval samples file written in the
lines lm-eval's `--log_samples` writes, and Inspect logs written by Inspect's own `write_eval_log`.
Expected scores: `q2 score`'s file scorer on the same pairs (scripted components, whose scores
differ from sample to sample: 1, 0.5, 0 below, by the scripted rules)."""

import csv
import datetime
import hashlib
import json

import pytest
from support.files import read_jsonl

from q2_metric.corpus.files import score_file
from q2_metric.corpus.logs import log_kind, rescore_log
from q2_metric.errors import OutputPathError, Q2InputError
from q2_metric.testing.scripted import scripted_scorer

# (reply, knowledge): scripted span scores by hand: both names in the knowledge -> 1; one of two -> 0.5;
# none -> 0; an empty reply -> not scored
PAIRS = [
    ("Zoë met Ada in Oslo.", "Zoë met Ada in Oslo."),
    (" Zoë met Bob.", "Zoë sang."),
    ("Ada saw Rome.", "Nothing here."),
    ("", "Zoë sang."),
]
EXPECTED = [1.0, 0.5, 0.0, None]


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lm_eval_log(path, pairs=PAIRS, extra_lines=()):
    """Lines as lm-eval's `--log_samples` writes them (doc_id, doc, target, arguments, resps,
    filtered_resps, filter, metrics, hashes)."""
    with open(path, "w", encoding="utf-8") as f:
        for i, (reply, knowledge) in enumerate(pairs):
            f.write(
                json.dumps(
                    {
                        "doc_id": i,
                        "doc": {"topic": "t", "message": "m", "knowledge": knowledge},
                        "target": knowledge,
                        "arguments": {"gen_args_0": {"arg_0": "prompt", "arg_1": {"until": ["\n"]}}},
                        "resps": [[reply]],
                        "filtered_resps": [reply],
                        "filter": "none",
                        "metrics": ["q2"],
                        "doc_hash": "0" * 64,
                        "prompt_hash": "1" * 64,
                        "target_hash": "2" * 64,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
        for line in extra_lines:
            f.write(line + "\n")


def inspect_log(path, pairs=PAIRS, metadata=True):
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import ModelOutput

    spec = EvalSpec(
        created=datetime.datetime(2026, 1, 1).isoformat(),
        task="q2_wow",
        dataset=EvalDataset(),
        model="hf/local",
        config=EvalConfig(),
    )
    samples = [
        EvalSample(
            id=f"s{i}",
            epoch=1,
            input="prompt",
            target=knowledge,
            metadata={"knowledge": knowledge} if metadata else {},
            output=ModelOutput.from_content("hf/local", reply),
        )
        for i, (reply, knowledge) in enumerate(pairs)
    ]
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))


def cli_scores(tmp_path, pairs=PAIRS):
    """`q2 score`'s file scorer on the pairs (the yardstick)."""
    src = tmp_path / "pairs.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge"])
        w.writerows(pairs)
    score_file(
        scripted_scorer(),
        src,
        tmp_path / "pairs_out.csv",
        cache_dir=None,
        allow_empty=True,
        spans_path=tmp_path / "pairs_spans.jsonl",
    )
    spans = read_jsonl(tmp_path / "pairs_spans.jsonl", encoding="utf-8")
    return [s["q2"] for s in spans], [s["spans"] for s in spans]


def read_out(path):
    return [json.loads(x) for x in open(path, encoding="utf-8")]


def test_lm_eval_samples_file_beside_the_log(tmp_path):
    log = tmp_path / "samples_q2_wow_2026-01-01T00-00-00.jsonl"
    lm_eval_log(log)
    before = sha(log)
    scorer = scripted_scorer()
    report = rescore_log(scorer, log)
    assert sha(log) == before  # the log is never changed
    out = read_out(tmp_path / (log.name + ".q2.jsonl"))
    summary = json.loads((tmp_path / (log.name + ".q2.summary.json")).read_text())
    assert [o["q2"] for o in out] == EXPECTED
    want_scores, want_spans = cli_scores(tmp_path)
    assert [o["q2"] for o in out] == want_scores and [o["spans"] for o in out] == want_spans
    assert [o["status"] for o in out] == ["scored", "scored", "scored", "empty"]
    assert [o["key"] for o in out] == ["doc 0", "doc 1", "doc 2", "doc 3"]
    # the reply as logged, leading space included: " Zoë met Bob." -> Zoë at 1-4, Bob at 9-12 (by hand)
    assert [(s["start"], s["end"], s["text"], s["supported"]) for s in out[1]["spans"]] == [
        (1, 4, "Zoë", True),
        (9, 12, "Bob", False),
    ]
    assert summary["num_samples"] == 4 and (
        summary["num_scored"],
        summary["num_empty"],
        summary["num_bad"],
    ) == (3, 1, 0)
    assert summary["q2"] == pytest.approx(0.5) and summary["log_sha256"] == before  # (1 + 0.5 + 0) / 3
    assert summary["signature"].startswith("q2:") and summary["log_format"] == "lm-eval"
    assert report.fields == {"response": "filtered_resps.0", "knowledge": "doc.knowledge"}
    # one engine call: ONE question-generation call over the 3 + 2 + 2 candidates of the 3 non-empty replies
    assert scorer._qg.calls == [7]


def test_bad_samples_accounted_for(tmp_path):
    log = tmp_path / "samples.jsonl"
    lm_eval_log(
        log,
        extra_lines=[
            '{"doc_id": 9, "doc": {}, "filtered_resps": ["Zoë sang."]}',
            '{"doc_id": 10, "doc": {"knowledge": 7}, "filtered_resps": ["Zoë sang."]}',
            "not json",
        ],
    )
    out_path = tmp_path / "out" / "rescored.jsonl"
    rescore_log(scripted_scorer(), log, out_path, tmp_path / "out" / "summary.json")
    out = read_out(out_path)
    assert len(out) == 7 and [o["status"] for o in out[4:]] == ["bad"] * 3
    assert out[4]["error"] == "doc 9: field 'doc.knowledge' (knowledge) is missing."
    assert out[5]["error"] == "doc 10: field 'doc.knowledge' (knowledge) must be a string, got int."
    assert out[6]["key"] == "line 7" and out[6]["error"].startswith("line 7: ")
    assert [o["q2"] for o in out[:4]] == EXPECTED


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_logs(tmp_path, suffix):
    log = tmp_path / f"log{suffix}"
    inspect_log(log)
    before = sha(log)
    assert log_kind(log) == "inspect"
    report = rescore_log(scripted_scorer(), log, tmp_path / "o.jsonl", tmp_path / "s.json")
    assert sha(log) == before
    out = read_out(tmp_path / "o.jsonl")
    assert [o["q2"] for o in out] == EXPECTED == cli_scores(tmp_path)[0]
    assert out[0]["key"] == "sample 's0' (epoch 1)" and out[0]["id"] == "s0"
    assert report.fields == {"response": "output.completion", "knowledge": "metadata.knowledge"}


def test_inspect_knowledge_falls_back_to_the_target_and_fields_can_be_named(tmp_path):
    log = tmp_path / "log.eval"
    inspect_log(log, metadata=False)  # as the Inspect scorer does: no metadata knowledge -> the target
    rescore_log(scripted_scorer(), log, tmp_path / "o.jsonl", tmp_path / "s.json")
    assert [o["q2"] for o in read_out(tmp_path / "o.jsonl")] == EXPECTED
    # named fields: the knowledge read from the reply itself -> every scored reply is consistent (1)
    rescore_log(
        scripted_scorer(),
        log,
        tmp_path / "o2.jsonl",
        tmp_path / "s2.json",
        knowledge_field="output.completion",
    )
    assert [o["q2"] for o in read_out(tmp_path / "o2.jsonl")] == [1.0, 1.0, 1.0, None]


def test_refusals_before_any_work(tmp_path):
    log = tmp_path / "samples.jsonl"
    lm_eval_log(log)
    with pytest.raises(
        Q2InputError,
        match=r"No sample of the log .* has the field 'doc.passage' \(knowledge\); "
        "name it with --knowledge-field",
    ):
        rescore_log(scripted_scorer(), log, knowledge_field="doc.passage")
    with pytest.raises(OutputPathError):  # the log itself is never an output
        rescore_log(scripted_scorer(), log, log, tmp_path / "s.json")
    with pytest.raises(OutputPathError, match=r"-o/--output\) must end in .jsonl"):
        rescore_log(scripted_scorer(), log, tmp_path / "o.csv")
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(Q2InputError, match="neither an lm-eval samples file"):
        rescore_log(scripted_scorer(), other)
    assert not (tmp_path / (log.name + ".q2.jsonl")).exists()


def test_chunks_are_engine_calls(tmp_path):
    log = tmp_path / "samples.jsonl"
    lm_eval_log(log, pairs=PAIRS[:3] * 3)  # 9 scored samples, chunks of 4: calls over 4, 4, 1
    scorer = scripted_scorer()
    report = rescore_log(scorer, log, tmp_path / "o.jsonl", tmp_path / "s.json", chunk_size=4)
    assert len(scorer._qg.calls) == 3
    assert [o["q2"] for o in read_out(tmp_path / "o.jsonl")] == [1.0, 0.5, 0.0] * 3
    assert report.outcome.system.q2 == pytest.approx(0.5) and report.outcome.system.num_responses == 9


def test_history_field_with_coref(tmp_path):
    """q2_dialogue's samples carry `doc.history`: with coref the reply is resolved with it. Scripted
    coreference: "She" is "Marie Curie" from the history; the scripted QA finds "Marie Curie" in the
    knowledge (score 1)."""
    from q2_metric import Q2Config
    from q2_metric.testing.scripted import ScriptedCoref

    log = tmp_path / "samples_q2_dialogue.jsonl"
    log.write_text(
        json.dumps(
            {
                "doc_id": 0,
                "doc": {"knowledge": "Marie Curie won twice.", "history": ["Tell me about Marie Curie."]},
                "filtered_resps": ["She won twice."],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    scorer = scripted_scorer(Q2Config(coref=True), coref=ScriptedCoref([["Marie Curie", "She"]]))
    rescore_log(scorer, log, tmp_path / "o.jsonl", tmp_path / "s.json", history_field="doc.history")
    (line,) = read_out(tmp_path / "o.jsonl")
    # "She won twice." : She 0-3, reported as written; the candidate scored is "Marie Curie"
    assert [(s["start"], s["end"], s["text"], s["candidate"], s["supported"]) for s in line["spans"]] == [
        (0, 3, "She", "Marie Curie", True)
    ]
    assert json.loads((tmp_path / "s.json").read_text())["history_field"] == "doc.history"
    with pytest.raises(Q2InputError, match="--history-field is read by --coref only"):
        rescore_log(
            scripted_scorer(), log, tmp_path / "o.jsonl", tmp_path / "s.json", history_field="doc.history"
        )


def test_a_samples_json_with_a_blank_first_line_is_a_samples_file(tmp_path):
    log = tmp_path / "samples.json"
    lm_eval_log(tmp_path / "lines.jsonl")
    log.write_text("\n\n" + (tmp_path / "lines.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    assert log_kind(log) == "lm-eval"  # before: read as an Inspect log (pydantic's validation text)
    rescore_log(scripted_scorer(), log, tmp_path / "o.jsonl", tmp_path / "s.json")
    assert [o["q2"] for o in read_out(tmp_path / "o.jsonl")] == EXPECTED


def test_an_eval_log_with_a_decompression_bomb_is_refused_before_it_is_unpacked(tmp_path, monkeypatch):
    import zipfile

    log = tmp_path / "bomb.eval"
    with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples/s0_epoch_1.json", b"\0" * (8 << 20))  # 8 MiB from ~8 KB
    assert log.stat().st_size < 100_000
    with pytest.raises(Q2InputError, match=r"member 'samples/s0_epoch_1.json' .* decompression bomb"):
        rescore_log(scripted_scorer(), log)
    monkeypatch.setenv("Q2_MAX_INPUT_BYTES", str(1 << 20))  # and the input limit bounds the whole
    with pytest.raises(Q2InputError, match=r"unpacks to 8,388,608 bytes, above the limit of 1,048,576"):
        rescore_log(scripted_scorer(), log)
    assert not list(tmp_path.glob("*.q2.*"))


def test_a_log_that_changes_during_the_run_writes_nothing(tmp_path, monkeypatch):
    from q2_metric.corpus import logs

    log = tmp_path / "samples.jsonl"
    lm_eval_log(log)
    real = logs.score_items

    def score_while_the_harness_writes(*args, **kwargs):
        out = real(*args, **kwargs)
        with open(log, "a", encoding="utf-8") as f:
            f.write("{}\n")
        return out

    monkeypatch.setattr(logs, "score_items", score_while_the_harness_writes)
    with pytest.raises(Q2InputError, match=r"changed while it was rescored; nothing was written"):
        rescore_log(scripted_scorer(), log, tmp_path / "o.jsonl", tmp_path / "s.json")
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "s.json").exists()
