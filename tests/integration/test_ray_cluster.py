"""`q2 score --ray` on a local multi-node Ray cluster (`ray.cluster_utils.Cluster`: a head that
schedules only and two 1-CPU worker nodes, all on this machine), with the tiny models:

- a worker node killed mid-run: the run finishes, every row once, in input order, byte-equal to a
  local `q2 score`, and the node's death is one warning line (not Ray's raylet log dump);
- the driver killed mid-run and started again: the rerun takes what the first run finished from
  the cache, scores only the rest, and its output is byte-equal to the local run's.

The cluster lives under a private RAY_TMPDIR, so neither it nor the address file Ray writes for
`ray.init()` is seen by any other Ray on the machine. Each test prints its figures (docs/ray.md).
"""

import csv
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402 (after importorskip("ray"))
from support.data import SAMPLE  # noqa: E402 (with the imports after importorskip)

from q2_metric.corpus.ray import NODE_DIED_NOTE  # noqa: E402 (needs ray: after importorskip)

TIMEOUT = 240  # seconds for any one wait: a hang fails the test instead of stalling the suite


def sample_pairs() -> tuple[int, int]:
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return len(rows), len({(r["response"], r["knowledge"]) for r in rows})


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The environment of every q2 process here: offline, tiny models built once, no RAY_ADDRESS."""
    from q2_metric.models.tiny import ensure_tiny_models

    tiny = tmp_path_factory.mktemp("tiny")
    ensure_tiny_models(tiny)
    ray_tmp = tempfile.mkdtemp(prefix="q2rc", dir="/tmp")  # short: Ray's socket paths have a length limit
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = ray_tmp  # for the Cluster started in this process
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(Q2_TINY="1", Q2_TINY_MODELS=str(tiny), HF_HUB_OFFLINE="1", RAY_TMPDIR=ray_tmp)
    yield env
    if saved is None:
        os.environ.pop("RAY_TMPDIR", None)
    else:
        os.environ["RAY_TMPDIR"] = saved
    shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(env):
    started = time.monotonic()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    print(f"\ncluster: head (0 CPUs) + 2 worker nodes (1 CPU each) up in {time.monotonic() - started:.1f}s")
    yield c
    c.shutdown()


def q2_score(env, output, *extra, cache):
    return [
        sys.executable,
        "-m",
        "q2_metric.cli",
        "score",
        str(SAMPLE),
        "-o",
        str(output),
        "--cache-dir",
        str(cache),
        "--device",
        "cpu",
        "--no-progress",
        *extra,
    ]


@pytest.fixture(scope="module")
def local_output(env, tmp_path_factory):
    """The local command's output on the same rows and models: what every Ray run must equal."""
    out = tmp_path_factory.mktemp("local") / "local.csv"
    done = subprocess.run(
        q2_score(env, out, cache=out.parent / "cache"),
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def part_keys(cache: Path) -> list[str]:
    keys: list[str] = []
    for path in glob.glob(f"{cache}/*/ray/part-*.parquet"):
        keys += pq.read_table(path, columns=["key"]).column("key").to_pylist()
    return keys


def wait_for_parts(cache: Path, at_least: int, proc: subprocess.Popen) -> int:
    deadline = time.monotonic() + TIMEOUT
    while len(part_keys(cache)) < at_least:
        assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before the kill"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.05)
    return len(part_keys(cache))


def ray_run(env, tmp_path, cluster, name):
    cmd = q2_score(
        env, tmp_path / f"{name}.csv", "--ray", cluster.address, "--chunk-size", "1", cache=tmp_path / "cache"
    )
    log = tmp_path / f"{name}.log"  # the child's output (its own copy of the handle keeps writing)
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, log


def test_worker_node_killed_mid_run(env, cluster, local_output, tmp_path):
    rows, pairs = sample_pairs()
    started = time.monotonic()
    proc, log = ray_run(env, tmp_path, cluster, "ray")
    try:
        at_kill = wait_for_parts(tmp_path / "cache", 2, proc)
        node = next(iter(cluster.worker_nodes))
        cluster.remove_node(node, allow_graceful=False)  # its raylet, object store and workers, SIGKILL
        killed_at = time.monotonic() - started
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        cluster.add_node(num_cpus=1)  # back to two worker nodes for the next test
        cluster.wait_for_nodes()
    wall = time.monotonic() - started
    out = log.read_text()
    print(
        f"node kill: {rows} rows ({pairs} pairs), a worker node killed at {killed_at:.1f}s with "
        f"{at_kill}/{pairs} pairs written; run finished, rc 0, {wall:.1f}s wall"
    )
    assert at_kill < pairs  # the kill was mid-run
    assert (tmp_path / "ray.csv").read_bytes() == local_output  # every row, in order, same values
    keys = part_keys(tmp_path / "cache")
    assert len(keys) == len(set(keys)) == pairs  # each pair scored and written once
    assert f"Scored {rows}/{rows} rows ({pairs} now, 0 from the cache)" in out
    assert "state-dump" not in out and "Traceback" not in out and out.count(NODE_DIED_NOTE) <= 1


def test_driver_killed_mid_run_and_started_again(env, cluster, local_output, tmp_path):
    rows, pairs = sample_pairs()
    started = time.monotonic()
    proc, _ = ray_run(env, tmp_path, cluster, "ray")
    try:
        wait_for_parts(tmp_path / "cache", 5, proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver (and nothing of the cluster)
        proc.wait(timeout=30)
    first = time.monotonic() - started
    cached = len(part_keys(tmp_path / "cache"))  # final: only the driver writes parts
    assert 0 < cached < pairs and not (tmp_path / "ray.csv").exists()

    restarted = time.monotonic()
    again, log = ray_run(env, tmp_path, cluster, "ray")
    assert again.wait(timeout=TIMEOUT) == 0
    out = log.read_text()
    print(
        f"driver kill: {rows} rows ({pairs} pairs), driver killed at {first:.1f}s with {cached}/{pairs} "
        f"pairs written; rerun: {pairs - cached} scored, {cached} from the cache, "
        f"{time.monotonic() - restarted:.1f}s wall"
    )
    assert f"Scored {rows}/{rows} rows ({pairs - cached} now, {cached} from the cache)" in out, out
    assert (tmp_path / "ray.csv").read_bytes() == local_output
    keys = part_keys(tmp_path / "cache")
    assert len(keys) == len(set(keys)) == pairs
    assert not list(Path(tmp_path / "cache").glob("*/ray/*.q2tmp-*"))  # no half-written part left
