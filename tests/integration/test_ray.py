"""`q2 score --ray` on a local Ray (2 CPUs): same scores as the local command, resume after a kill,
bad rows, the input formats, worker sizing, and the message when Ray is missing."""

import csv
import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
from support.files import PAIRS, read_json, read_jsonl, snapshot, write_bad_jsonl, write_csv, write_parquet
from support.files import PERSON_ROWS as ROWS

from q2_metric import cli
from q2_metric.corpus.files import score_file
from q2_metric.corpus.ray import RayNotInstalled, import_ray, score_file_ray, worker_resources
from q2_metric.errors import Q2InputError
from q2_metric.testing.scripted import scripted_scorer

NO_RAY_ADDRESS = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # never join another cluster


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", *args],
        capture_output=True,
        text=True,
        timeout=400,
        env=NO_RAY_ADDRESS,
    )


# -- through the command line, each run with its own Ray (these come first: no other Ray is up) --


def test_ray_matches_local_command_on_tiny_models(tiny_config, tmp_path, rows):
    columns = list(rows[0])
    write_csv(tmp_path / "in.csv", rows[:8], columns)
    with open(tmp_path / "in.csv", "a", newline="") as f:
        f.write("only one cell\n")  # a bad row, at line 10
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
        "--chunk-size",
        "3",
        "--no-progress",
    ]
    local = run_cli(
        "score",
        str(tmp_path / "in.csv"),
        "-o",
        str(tmp_path / "local.jsonl"),
        "--steps",
        str(tmp_path / "local_steps.csv"),
        "--summary",
        str(tmp_path / "local.json"),
        "--cache-dir",
        str(tmp_path / "c_local"),
        *models,
    )
    remote = run_cli(
        "score",
        str(tmp_path / "in.csv"),
        "-o",
        str(tmp_path / "ray.parquet"),
        "--steps",
        str(tmp_path / "ray_steps.csv"),
        "--summary",
        str(tmp_path / "ray.json"),
        "--cache-dir",
        str(tmp_path / "c_ray"),
        *models,
        "--ray",
        "--workers",
        "2",
    )
    assert local.returncode == 3, local.stderr
    assert remote.returncode == 3, remote.stderr
    bad = "line 10: 1 field(s) but the header has 9 (a comma in an unquoted field, or a missing one?); row skipped"
    assert bad in local.stderr and bad in remote.stderr

    want = read_jsonl(tmp_path / "local.jsonl")
    got = pq.read_table(tmp_path / "ray.parquet").to_pylist()
    assert len(got) == len(want) == 9
    for w, g in zip(want, got):
        assert {k: g[k] for k in w} == w  # same columns, same values, same order
    assert got[-1]["q2"] is None and got[-1]["error"].startswith("line 10")
    assert sum(g["q2"] is not None for g in got) == 8
    with open(tmp_path / "local_steps.csv") as a, open(tmp_path / "ray_steps.csv") as b:
        assert a.read() == b.read()
    assert read_json(tmp_path / "ray.json") == read_json(tmp_path / "local.json")
    assert "8/9 rows (8 now, 0 from the cache)" in remote.stdout

    parts = list((tmp_path / "c_ray").glob("*/ray/part-*.parquet"))
    assert parts and sum(pq.read_metadata(p).num_rows for p in parts) == 8
    again = run_cli(
        "score",
        str(tmp_path / "in.csv"),
        "-o",
        str(tmp_path / "again.csv"),
        "--cache-dir",
        str(tmp_path / "c_ray"),
        *models,
        "--ray",
    )
    assert again.returncode == 3 and "(0 now, 8 from the cache)" in again.stdout  # nothing rescored


KILLED_RUN = textwrap.dedent("""
    import sys, time
    import ray
    from q2_metric.corpus.ray import score_file_ray
    from q2_metric.testing.scripted import ScriptedQG, scripted_scorer

    class StallingQG(ScriptedQG):
        '''Answers the first batch, then hangs (until the run is killed).'''
        def describe(self):
            return ScriptedQG().describe()  # same cache key as the plain scripted scorer
        def generate(self, answers, contexts):
            if self.calls:
                time.sleep(600)
            return super().generate(answers, contexts)

    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20)
    score_file_ray(scripted_scorer(qg=StallingQG()), sys.argv[1], sys.argv[2], cache_dir=sys.argv[3],
                   chunk_size=2, workers=1)
""")


def test_resume_after_the_run_is_killed(tmp_path):
    write_csv(tmp_path / "in.csv", ROWS)
    cache = tmp_path / "cache"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(tmp_path / "in.csv"), str(tmp_path / "out.csv"), str(cache)],
        env=NO_RAY_ADDRESS,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        while not list(cache.glob("*/ray/part-*.parquet")) and time.monotonic() < deadline:
            assert proc.poll() is None, "the run ended before it was killed"
            time.sleep(0.2)
        time.sleep(1)  # the second batch is stalled: nothing more can arrive
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the local Ray it started
        proc.wait(timeout=30)
    parts = list(cache.glob("*/ray/part-*.parquet"))
    assert len(parts) == 1 and pq.read_metadata(parts[0]).num_rows == 2
    assert not (tmp_path / "out.csv").exists()

    with local_ray():
        report = score_file_ray(
            scripted_scorer(),
            tmp_path / "in.csv",
            tmp_path / "out.csv",
            cache_dir=cache,
            chunk_size=2,
            workers=2,
        )
    assert (report.num_cached, report.num_scored_now) == (2, 8)
    with open(tmp_path / "out.csv", newline="") as f:
        out = list(csv.DictReader(f))
    assert [r["id"] for r in out] == [str(i) for i in range(10)] and all(r["q2"] == "1.0" for r in out)
    assert len(list(cache.glob("*/ray/part-*.parquet"))) > 1


# -- in this process, on one local Ray --------------------------------------------------------


class local_ray:
    """A local Ray with 2 CPUs for the block (or the module), shut down after."""

    def __enter__(self):
        ray.init(
            num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, logging_level="WARNING"
        )

    def __exit__(self, *exc):
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_local():
    with local_ray():
        yield


def test_bad_rows_as_in_the_local_command(ray_local, tmp_path):
    write_bad_jsonl(tmp_path / "in.jsonl", ROWS)
    local = score_file(scripted_scorer(), tmp_path / "in.jsonl", tmp_path / "local.jsonl", cache_dir=None)
    remote = score_file_ray(scripted_scorer(), tmp_path / "in.jsonl", tmp_path / "ray.jsonl", cache_dir=None)
    assert remote.bad_rows == local.bad_rows and len(remote.bad_rows) == 3
    assert remote.bad_rows[0].startswith("line 2: not a JSON object")
    assert remote.num_bad == 3 and remote.num_scored_now == 2
    assert (tmp_path / "ray.jsonl").read_text() == (tmp_path / "local.jsonl").read_text()
    assert remote.system == local.system


def test_parquet_and_datasets_inputs(ray_local, tmp_path):
    import datasets

    rows = ROWS[:4] + [{"id": 4, "response": "Rome.", "knowledge": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    report = score_file_ray(
        scripted_scorer(),
        tmp_path / "in.parquet",
        tmp_path / "out.parquet",
        cache_dir=tmp_path / "cache",
        chunk_size=3,
    )
    assert report.bad_rows == ["line 5: field 'knowledge' must be text, got empty"]
    out = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert [o["q2"] for o in out] == [1.0, 1.0, 1.0, 1.0, None] and out[0]["id"] == 0

    datasets.Dataset.from_list(ROWS[:6]).save_to_disk(str(tmp_path / "ds"))
    report = score_file_ray(
        scripted_scorer(), tmp_path / "ds", tmp_path / "ds.csv", cache_dir=tmp_path / "cache"
    )
    assert report.num_rows == 6 and (report.num_cached, report.num_scored_now) == (4, 2)
    assert report.system.q2 == 1.0


def test_two_workers_on_one_small_parquet_file_both_run(ray_local, tmp_path):
    """`--workers 2` on one small Parquet file: the pairs went in one block, so one worker ran while
    the run said two. The blocks are now at least one per worker (`plan_blocks`), and the report
    says how many workers scored: a worker still starting when the other has done both blocks is
    said, never counted."""
    pq.write_table(pa.Table.from_pylist(ROWS[:5]), tmp_path / "in.parquet")
    report = score_file_ray(
        scripted_scorer(),
        tmp_path / "in.parquet",
        tmp_path / "out.csv",
        cache_dir=tmp_path / "cache",
        workers=2,
    )
    assert report.num_scored_now == 5
    (run_dir,) = (tmp_path / "cache").glob("*/ray")
    parts = [pq.read_table(p).to_pylist() for p in sorted(run_dir.glob("part-*.parquet"))]
    assert sorted(len(p) for p in parts) == [2, 3]  # a block per worker
    ran = len({row["worker"] for part in parts for row in part})
    assert report.workers == ran
    assert (ran < 2) == any("of the 2 started scored the 5 pairs" in w for w in report.warnings), (
        report.warnings
    )


# -- no Ray needed ---------------------------------------------------------------------------


class FakeRay:
    def __init__(self, *resources):
        self.resources = resources

    def nodes(self):
        return [{"Alive": True, "Resources": r} for r in self.resources] + [
            {"Alive": False, "Resources": {"CPU": 64}}
        ]


def test_worker_resources():
    one_machine = FakeRay({"CPU": 2})
    assert worker_resources(one_machine, None, 0) == (1, 2)  # one worker with both cores
    assert worker_resources(one_machine, 2, 0) == (2, 1)
    cluster = FakeRay({"CPU": 0}, {"CPU": 8, "GPU": 4}, {"CPU": 8, "GPU": 4})  # head takes no work
    assert worker_resources(cluster, None, 0) == (2, 8)
    assert worker_resources(cluster, None, 1) == (8, 1)
    assert worker_resources(cluster, None, 2) == (4, 1)
    assert worker_resources(cluster, 3, 0) == (3, 5)


def test_without_ray_a_one_sentence_hint(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayNotInstalled, match=r"pip install 'q2-metric\[ray\]'"):
        import_ray()
    write_csv(tmp_path / "in.csv", ROWS[:1])
    assert cli.main(["score", str(tmp_path / "in.csv"), "-o", str(tmp_path / "o.csv"), "--ray"]) == 2
    assert "pip install 'q2-metric[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_workers_need_ray(tmp_path, capsys):
    assert cli.main(["score", "in.csv", "-o", str(tmp_path / "o.csv"), "--workers", "2"]) == 2
    assert "need --ray" in capsys.readouterr().err


def test_ray_checks_paths_and_columns_before_ray_starts(tmp_path):
    pytest.importorskip("ray")
    from q2_metric.corpus.ray import score_file_ray
    from q2_metric.errors import OutputPathError

    folder = tmp_path / "data"
    write_parquet(folder / "part-0.parquet", PAIRS)
    before = snapshot(folder)
    with pytest.raises(OutputPathError, match="lies inside the input"):
        score_file_ray(scripted_scorer(), folder, folder / "scores.parquet", cache_dir=None)
    write_parquet(tmp_path / "cols.parquet", [{**p, "q2": 1.0} for p in PAIRS])
    with pytest.raises(Q2InputError, match="already has the column 'q2'"):
        score_file_ray(scripted_scorer(), tmp_path / "cols.parquet", tmp_path / "o.csv", cache_dir=None)
    assert snapshot(folder) == before
