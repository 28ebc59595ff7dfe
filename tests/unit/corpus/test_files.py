"""`q2 score`: CSV/JSONL/datasets input, steps file, cache and resume, malformed rows."""

import csv
import json
import subprocess
import sys

import pytest
from support.cli import tiny_flags
from support.files import PERSON_ROWS as ROWS
from support.files import read_json, read_jsonl, strict_json, write_bad_jsonl, write_csv

from q2_metric.corpus.files import score_file
from q2_metric.signature import Signature
from q2_metric.testing.scripted import ScriptedQG, scripted_scorer


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_csv_scores_and_steps(tmp_path):
    write_csv(tmp_path / "in.csv", ROWS)
    report = score_file(
        scripted_scorer(),
        tmp_path / "in.csv",
        tmp_path / "out.csv",
        steps_path=tmp_path / "steps.csv",
        cache_dir=tmp_path / "cache",
    )
    out = read_csv(tmp_path / "out.csv")
    assert [r["id"] for r in out] == [str(i) for i in range(10)]
    assert all(float(r["q2"]) == 1.0 for r in out)
    steps = read_csv(tmp_path / "steps.csv")
    assert len(steps) == 20 and steps[0]["question"] == "what about Person0?"
    assert steps[0]["status"] == "valid" and steps[0]["knowledge_answer"] == "Person0"
    assert report.system.q2 == 1.0 and report.num_scored_now == 10


def test_jsonl_and_custom_columns(tmp_path):
    with open(tmp_path / "in.jsonl", "w") as f:
        for r in ROWS[:3]:
            f.write(json.dumps({"resp": r["response"], "know": r["knowledge"]}) + "\n")
    score_file(
        scripted_scorer(),
        tmp_path / "in.jsonl",
        tmp_path / "out.jsonl",
        response_col="resp",
        knowledge_col="know",
        cache_dir=None,
    )
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [o["q2"] for o in out] == [1.0, 1.0, 1.0] and out[0]["resp"] == ROWS[0]["response"]


def test_input_columns_are_written_back_as_given(tmp_path):
    """A list column (ragas' `contexts`: the knowledge as passages) was written back as one joined
    string: a list stays a list in JSONL and Parquet, and a CSV cell holds it as JSON (which reads
    back as the list); the knowledge scored is still the passages joined."""
    import pyarrow.parquet as pq

    passages = [["Person0 painted.", "Person0 hosted a show."], ["Person1 painted."]]
    with open(tmp_path / "in.jsonl", "w") as f:
        for r, ctx in zip(ROWS[:2], passages):
            f.write(json.dumps({"response": r["response"], "contexts": ctx, "tags": ["a", "b"]}) + "\n")
    for name in ("out.jsonl", "out.parquet", "out.csv"):
        report = score_file(
            scripted_scorer(),
            tmp_path / "in.jsonl",
            tmp_path / name,
            knowledge_col="contexts",
            cache_dir=None,
        )
        assert report.num_bad == 0 and report.system.num_scored == 2
    assert [o["contexts"] for o in read_jsonl(tmp_path / "out.jsonl")] == passages
    assert [o["tags"] for o in read_jsonl(tmp_path / "out.jsonl")] == [["a", "b"]] * 2
    assert pq.read_table(tmp_path / "out.parquet").column("contexts").to_pylist() == passages
    assert [json.loads(r["contexts"]) for r in read_csv(tmp_path / "out.csv")] == passages


def test_datasets_on_disk(tmp_path):
    import datasets

    datasets.Dataset.from_list(ROWS[:4]).save_to_disk(str(tmp_path / "ds"))
    report = score_file(scripted_scorer(), tmp_path / "ds", tmp_path / "out.csv", cache_dir=None)
    assert report.num_rows == 4 and report.system.q2 == 1.0


def test_malformed_rows_reported_rest_scored(tmp_path):
    write_bad_jsonl(tmp_path / "in.jsonl")
    report = score_file(scripted_scorer(), tmp_path / "in.jsonl", tmp_path / "out.jsonl", cache_dir=None)
    assert report.num_bad == 3
    assert report.bad_rows[0].startswith("line 2: not a JSON object")
    assert report.bad_rows[1] == "line 3: field 'knowledge' must be text, got empty"
    assert report.bad_rows[2] == "line 4: field 'knowledge' is missing"
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [o["q2"] for o in out] == [1.0, None, None, None, 1.0]


def test_csv_bad_row_line_number(tmp_path):
    (tmp_path / "in.csv").write_text('response,knowledge\n"Paris.","Paris."\n"multi\nline",Rome.\nonly-one\n')
    report = score_file(
        scripted_scorer(), tmp_path / "in.csv", tmp_path / "out.csv", cache_dir=None, multiline=True
    )
    assert report.bad_rows == [
        "line 5: 1 field(s) but the header has 2 (a comma in an unquoted field, or a missing one?)"
    ]
    assert report.num_rows == 3
    out = read_csv(tmp_path / "out.csv")
    assert out[1]["response"] == "multi\nline" and out[1]["q2"] != "" and out[2]["q2"] == ""


class FailingQG(ScriptedQG):
    """Fails on its second call, as an interrupted run would; the same generator otherwise."""

    def describe(self):
        return ScriptedQG().describe()

    def generate(self, answers, contexts):
        if len(self.calls) == 1:
            raise KeyboardInterrupt
        return super().generate(answers, contexts)


def test_interrupted_run_resumes_without_rescoring(tmp_path):
    write_csv(tmp_path / "in.csv", ROWS)
    with pytest.raises(KeyboardInterrupt):
        score_file(
            scripted_scorer(qg=FailingQG()),
            tmp_path / "in.csv",
            tmp_path / "out.csv",
            cache_dir=tmp_path / "cache",
            chunk_size=4,
        )
    assert not (tmp_path / "out.csv").exists()  # nothing half-written
    assert not list(tmp_path.glob(".out.csv*"))
    qg = ScriptedQG()
    report = score_file(
        scripted_scorer(qg=qg),
        tmp_path / "in.csv",
        tmp_path / "out.csv",
        cache_dir=tmp_path / "cache",
        chunk_size=4,
    )
    # engine calls grow 1, 2, 4, ... responses: the first one's row was cached before the second failed
    assert (report.num_cached, report.num_scored_now) == (1, 9)
    assert sum(qg.calls) == 18  # two candidates for each of the 9 remaining rows, none twice
    assert len(read_csv(tmp_path / "out.csv")) == 10
    again = ScriptedQG()
    report = score_file(
        scripted_scorer(qg=again), tmp_path / "in.csv", tmp_path / "out.csv", cache_dir=tmp_path / "cache"
    )
    assert again.calls == [] and report.num_cached == 10  # a re-run costs nothing


def test_cache_is_keyed_by_options(tmp_path):
    from q2_metric import Q2Config

    write_csv(tmp_path / "in.csv", ROWS[:2])
    score_file(scripted_scorer(), tmp_path / "in.csv", tmp_path / "a.csv", cache_dir=tmp_path / "c")
    report = score_file(
        scripted_scorer(Q2Config(question_mode="multi")),
        tmp_path / "in.csv",
        tmp_path / "b.csv",
        cache_dir=tmp_path / "c",
    )
    assert report.num_cached == 0


def run_cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", *args], capture_output=True, text=True, timeout=300, **kw
    )


@pytest.mark.slow  # a subprocess
def test_cli_score_csv_and_jsonl_on_tiny_models(tiny_config, tmp_path, rows):
    write_csv(tmp_path / "in.csv", rows[:6], columns=list(rows[0]))
    models = [
        "--qg-model",
        tiny_config.qg_model,
        "--qa-model",
        tiny_config.qa_model,
        "--nli-model",
        tiny_config.nli_model,
        "--decoding",
        "greedy",
        "--device",
        "cpu",
    ]
    res = run_cli(
        "score",
        str(tmp_path / "in.csv"),
        "-o",
        str(tmp_path / "out.jsonl"),
        "--steps",
        str(tmp_path / "steps.csv"),
        "--summary",
        str(tmp_path / "summary.json"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--profile",
        *models,
    )
    assert res.returncode == 0, res.stderr
    out = read_jsonl(tmp_path / "out.jsonl")
    assert len(out) == 6 and all(0 <= o["q2"] <= 1 for o in out)
    summary = read_json(tmp_path / "summary.json")
    assert summary["num_scored"] == 6 and "profile" not in summary  # the summary holds no timings
    assert read_csv(tmp_path / "steps.csv")
    table = {line.split()[0]: line.split() for line in res.stderr.splitlines()[1:] if line.strip()}
    assert {"candidates", "questions", "question", "knowledge", "total"} <= set(table)
    assert table["questions"][4].startswith("qg:") and table["question"][5].startswith("qa:"), res.stderr
    # the output's score columns are the user's now: the new scores go under a prefix (issue 28)
    res = run_cli(
        "score",
        str(tmp_path / "out.jsonl"),
        "-o",
        str(tmp_path / "again.csv"),
        "--prefix",
        "again_",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--profile",
        *models,
    )
    assert res.returncode == 0 and "(0 now, 6 from the cache)" in res.stdout
    assert "nothing was scored in this process" in res.stderr


def test_score_file_profile_sums_chunks(tiny_config, tmp_path, rows):
    from q2_metric import Q2Scorer

    write_csv(tmp_path / "in.csv", rows[:4], columns=list(rows[0]))
    scorer = Q2Scorer(tiny_config.replace(decoding="greedy")).load()
    scorer.qa.tokens_processed = scorer.qg.tokens_processed = 0
    report = score_file(scorer, tmp_path / "in.csv", tmp_path / "out.csv", cache_dir=None, chunk_size=2)
    stages = {p.stage: p for p in report.profile}
    assert list(stages)[:3] == ["candidates", "questions", "question filter"]
    # two chunks: two QG calls of the stage; the QA tokens are all the backend fed its model
    assert stages["questions"].calls["qg"] >= 2
    assert sum(p.tokens.get("qa", 0) for p in report.profile) == scorer.qa.tokens_processed


@pytest.mark.slow  # a subprocess
def test_cli_bad_rows_exit_code(tmp_path, tiny_config):
    (tmp_path / "in.jsonl").write_text('{"response": "", "knowledge": "x"}\n{bad\n')
    res = run_cli(
        "score",
        str(tmp_path / "in.jsonl"),
        "-o",
        str(tmp_path / "o.csv"),
        "--no-cache",
        *tiny_flags(tiny_config),
    )
    assert res.returncode == 3 and "line 2: not a JSON object" in res.stderr
    assert (tmp_path / "o.csv").exists()


def test_summary_is_strict_json_without_valid_questions(tmp_path):
    """No response has a candidate (scripted parser: capitalised words), so no question is valid and
    the no-answer share is undefined: null, not NaN."""
    data = write_csv(tmp_path / "in.csv", [{"response": "it was nice.", "knowledge": "Bob Ross hosted it."}])
    score_file(
        scripted_scorer(), data, tmp_path / "out.csv", summary_path=tmp_path / "summary.json", cache_dir=None
    )
    summary = strict_json((tmp_path / "summary.json").read_text())
    assert summary["no_answer_share"] is None and summary["coverage"] == 0.0
    assert summary["signature_short"] == Signature.parse(summary["signature"]).short()


def test_cache_gets_the_first_response_before_the_rest(tmp_path):
    """Chunks grow 1, 2, 4, ...: a run stopped during its second engine call keeps the first response."""

    class Stop(Exception):
        pass

    calls = []
    scorer = scripted_scorer()
    real = scorer.score_checked  # the engine's door of the contract's items

    def score(responses, knowledge, *args, **kw):
        calls.append(len(responses))
        if len(calls) == 2:
            raise Stop
        return real(responses, knowledge, *args, **kw)

    scorer.score_checked = score
    data = write_csv(
        tmp_path / "in.csv",
        [{"response": f"Person{i} left.", "knowledge": f"Person{i} left."} for i in range(10)],
    )
    with pytest.raises(Stop):
        score_file(scorer, data, tmp_path / "out.csv", cache_dir=tmp_path / "cache", chunk_size=64)
    [cache] = (tmp_path / "cache").rglob("responses.jsonl")
    assert calls == [1, 2] and len(cache.read_text().splitlines()) == 1


def test_cli_scores_one_output_row_per_input_row(tmp_path):
    rows = [
        ["it aired in\rthe us", "It aired in the US."],
        ['say "hi",\r\nthen', "Bob said hi."],
        ["Paris is big.", "Paris is big."],
    ]
    path = tmp_path / "in.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["response", "knowledge"], *rows])
    report = score_file(scripted_scorer(), path, tmp_path / "out.csv", cache_dir=None)
    assert (report.num_rows, report.num_bad) == (3, 0)
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        assert [[r["response"], r["knowledge"]] for r in csv.DictReader(f)] == rows


def test_lone_surrogate_in_jsonl_never_ends_the_run(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"response": "Paris is big.", "knowledge": "Paris is big."}\n'
        '{"response": "Bob\\ud800 Ross.", "knowledge": "Bob Ross."}\n'
        '{"response": "Rome.", "knowledge": "Rome."}\n',
        encoding="utf-8",
    )
    for out in ("out.csv", "out.jsonl", "out.parquet"):
        report = score_file(scripted_scorer(), path, tmp_path / out, cache_dir=tmp_path / "cache")
        assert (report.num_rows, report.num_bad, report.system.num_scored) == (3, 0, 3)
    assert json.loads((tmp_path / "out.jsonl").read_text().splitlines()[1])["response"] == "Bob\ufffd Ross."


def test_a_resumed_run_gives_the_fresh_runs_objects_and_system_figures(tmp_path):
    """The cache gives `ResponseScore` objects back (`ResponseScore.from_dict`), and the system
    figures come from the engine's one rule (`system_of`) over them, never re-derived from columns
    (issue 49): a run resumed wholly from the cache equals a fresh run, objects and figures, and
    both equal one engine call on the same pairs."""
    import math

    from q2_metric.options import json_safe
    from q2_metric.results import QuestionTrace, ResponseScore
    from q2_metric.steps.system_score import system_of

    pairs = [  # through valid questions (1, 0.5, 0), empty, and the NLI fallback
        ("Zoë met Ada in Oslo.", "Zoë met Ada in Oslo."),
        (" Zoë met Bob.", "Zoë sang."),
        ("Ada saw Rome.", "Nothing here."),
        ("", "Zoë sang."),
        ("it was fun.", "painting is fun."),
    ]
    write_csv(tmp_path / "in.csv", [{"response": r, "knowledge": k} for r, k in pairs])
    args = {"cache_dir": tmp_path / "cache", "allow_empty": True}
    fresh = score_file(scripted_scorer(), tmp_path / "in.csv", tmp_path / "fresh.csv", **args)

    again = scripted_scorer()  # the same components: the same cache key

    def no_engine(*args, **kwargs):
        raise AssertionError("a resumed run must not score again")

    again.score = no_engine
    resumed = score_file(again, tmp_path / "in.csv", tmp_path / "resumed.csv", **args)
    assert resumed.num_cached == 5 and resumed.num_scored_now == 0
    assert all(isinstance(r, ResponseScore) for r in resumed.responses)
    assert all(isinstance(q, QuestionTrace) for r in resumed.responses for q in r.questions)
    assert json_safe([r.to_dict() for r in resumed.responses]) == json_safe(
        [r.to_dict() for r in fresh.responses]
    )
    assert json_safe(resumed.system.to_dict()) == json_safe(fresh.system.to_dict())
    assert (tmp_path / "resumed.csv").read_bytes() == (tmp_path / "fresh.csv").read_bytes()
    engine = scripted_scorer().score([r for r, _ in pairs], [k for _, k in pairs])
    assert json_safe(system_of(resumed.responses).to_dict()) == json_safe(engine.system.to_dict())
    assert json_safe(resumed.system.to_dict()) == json_safe(engine.system.to_dict())
    assert math.isnan(resumed.responses[3].q2) and resumed.responses[4].fallback


def test_each_chunk_goes_through_score_items_keyed_by_its_first_line(tmp_path, monkeypatch):
    """`q2 score` scores through the contract: one `frontend.score_items` call per chunk (1, then 2
    pairs: `chunked`), each pair named by the line of its first row (CSV: the header is line 1), a
    repeated pair scored once and its rows given its score."""
    import q2_metric.corpus.files as files

    rows = [ROWS[0], ROWS[1], ROWS[0], ROWS[2]]  # lines 2-5; line 4 repeats line 2's pair
    write_csv(tmp_path / "in.csv", rows)
    calls = []
    real = files.score_items

    def spy(scorer, items, **kwargs):
        calls.append([item.key for item in items])
        return real(scorer, items, **kwargs)

    monkeypatch.setattr(files, "score_items", spy)
    report = score_file(
        scripted_scorer(), tmp_path / "in.csv", tmp_path / "out.csv", cache_dir=tmp_path / "c"
    )
    assert calls == [["line 2"], ["line 3", "line 5"]]
    assert [float(r["q2"]) for r in read_csv(tmp_path / "out.csv")] == [1.0] * 4  # each span in its knowledge
    assert report.num_scored_now == 3 and report.system.num_scored == 4
    assert [p.stage for p in report.profile][:1] == ["candidates"]  # the chunks' profiles, merged


def test_the_not_english_warning_names_the_files_rows(tmp_path, capsys):
    """Before: one warning per chunk of the engine, counting the chunk's items ("1 of 2 items ...
    item 1" for this 5-row file), and a Russian response to English knowledge got none."""
    import warnings

    from q2_metric.errors import NotEnglishWarning

    english = "Bob Ross was an American painter who hosted The Joy of Painting on PBS. " * 3
    rows = [
        ("Bob Ross painted.", "Bob Ross."),
        ("Bob Ross hosted a show.", "Bob Ross hosted a show."),
        ("Боб Росс вёл телепередачу «Радость живописи».", english),  # row 3, line 4
        ("He painted trees.", "He painted trees."),
        ("鲍勃·罗斯主持了电视节目《欢乐画室》，教观众画风景。", english),
    ]
    path = tmp_path / "in.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["response", "knowledge"])
        w.writerows(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotEnglishWarning)  # the engine's own per-chunk warning: none
        report = score_file(scripted_scorer(), path, tmp_path / "out.csv", cache_dir=None, chunk_size=2)
    err = capsys.readouterr().err
    assert err.count("plainly not English") == 1
    assert (
        "q2: warning: 2 of 5 rows are plainly not English (most letters not Latin; first: row 3 (line 4), its response)"
        in err
    )
    assert any("2 of 5 rows" in w for w in report.warnings)
