"""The cache knows its models, a cut cache line is repaired, outputs are all-or-nothing with the
user's umask, stale temporary files go, and `q2 score` survives SIGKILL at any point."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from q2_metric import Q2Scorer
from q2_metric.corpus.files import score_file
from q2_metric.io import MANIFEST_SUFFIX, TEMP_MARK, commit_outputs, recover_outputs


def write_input(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def leftovers(folder):
    return sorted(
        p.name for p in folder.rglob("*") if TEMP_MARK in p.name or p.name.endswith(MANIFEST_SUFFIX)
    )


def test_cache_follows_weights_and_signature_is_the_same_when_cached(
    tiny_config, tiny_models, rows, tmp_path
):
    import shutil

    from safetensors.torch import load_file, save_file

    qa = tmp_path / "qa"
    shutil.copytree(tiny_models["qa"], qa)
    config = tiny_config.replace(qa_model=str(qa), decoding="greedy")
    data = write_input(tmp_path / "in.csv", rows[:3])

    def run(name):
        report = score_file(
            Q2Scorer(config),
            data,
            tmp_path / f"{name}.csv",
            cache_dir=tmp_path / "cache",
            summary_path=tmp_path / f"{name}.json",
        )
        return report, (tmp_path / f"{name}.json").read_bytes()

    fresh, fresh_summary = run("fresh")
    cached, cached_summary = run("cached")
    assert (fresh.num_scored_now, cached.num_scored_now, cached.num_cached) == (3, 0, 3)
    assert cached_summary == fresh_summary  # the same signature with or without the models loaded
    assert "|qa:local-" in json.loads(fresh_summary)["signature"]

    weights = load_file(qa / "model.safetensors")
    save_file({k: v + 0.5 for k, v in weights.items()}, qa / "model.safetensors", metadata={"format": "pt"})
    changed, changed_summary = run("changed")
    assert (changed.num_scored_now, changed.num_cached) == (3, 0)  # new weights: nothing served stale
    assert changed_summary != fresh_summary


def test_cut_last_cache_line_is_repaired(rows, tmp_path):
    from q2_metric.testing.scripted import scripted_scorer

    data = write_input(
        tmp_path / "in.csv", [{"response": r["response"], "knowledge": r["response"]} for r in rows[:4]]
    )
    score_file(scripted_scorer(), data, tmp_path / "a.csv", cache_dir=tmp_path / "cache")
    [cache_file] = (tmp_path / "cache").rglob("responses.jsonl")
    whole = cache_file.read_bytes()
    cache_file.write_bytes(whole[:-40])  # a kill in the middle of the last line
    report = score_file(scripted_scorer(), data, tmp_path / "b.csv", cache_dir=tmp_path / "cache")
    assert (report.num_cached, report.num_scored_now) == (3, 1)
    lines = cache_file.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines)  # the cut line went, not appended onto
    keys = [json.loads(line)["key"] for line in lines]
    assert keys == [json.loads(line)["key"] for line in whole.decode().splitlines()]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        commit_outputs(
            [
                (tmp_path / "a.csv", lambda f: f.write("a\n")),
                (tmp_path / "sub" / "b.json", lambda f: f.write("{}\n")),
            ]
        )
    finally:
        os.umask(old)
    assert [(tmp_path / n).stat().st_mode & 0o777 for n in ("a.csv", "sub/b.json")] == [mode, mode]
    assert (tmp_path / "a.csv").read_text() == "a\n" and leftovers(tmp_path) == []


def test_stale_temp_files_of_dead_runs_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f".out.csv{TEMP_MARK}{dead.pid}-0badc0de"
        busy = tmp_path / f".out.csv{TEMP_MARK}{alive.pid}-0badc0de"
        stale.write_text("x" * 1000)
        busy.write_text("y")
        legacy = tmp_path / ".out.csv.k2j_9x0a.tmp"  # tempfile.mkstemp's name in earlier versions
        legacy.write_text("z")
        commit_outputs([(tmp_path / "out.csv", lambda f: f.write("new\n"))])
        assert not stale.exists() and not legacy.exists()
        assert busy.exists()  # another live run's file is left alone
    finally:
        alive.kill()
        alive.wait()


def test_a_manifest_left_by_a_kill_is_completed(tmp_path):
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("old\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    temps = [tmp_path / f".{n}{TEMP_MARK}{dead.pid}-00000000" for n in ("a.csv", "b.csv")]
    for tmp in temps:
        tmp.write_text("new\n")
    os.replace(temps[0], tmp_path / "a.csv")  # killed after the first rename
    manifest = {"files": [[str(t), str(tmp_path / n)] for t, n in zip(temps, ("a.csv", "b.csv"))]}
    (tmp_path / f".a.csv{MANIFEST_SUFFIX}").write_text(json.dumps(manifest))
    recover_outputs([tmp_path / "a.csv", tmp_path / "b.csv"])
    assert [(tmp_path / n).read_text() for n in ("a.csv", "b.csv")] == ["new\n", "new\n"]
    assert leftovers(tmp_path) == []


# -- SIGKILL at several points of a real `q2 score` run ----------------------------------------------

OUTPUTS = ("scores.csv", "steps.csv", "summary.json")


def q2_score(tmp_path, tiny_config, data, out_dir, cache, pause=None):
    """Start `q2 score`; with `pause`, wait until it reaches that point and SIGKILL it there."""
    cmd = [
        sys.executable,
        "-m",
        "q2_metric.cli",
        "score",
        str(data),
        "-o",
        str(out_dir / OUTPUTS[0]),
        "--steps",
        str(out_dir / OUTPUTS[1]),
        "--summary",
        str(out_dir / OUTPUTS[2]),
        "--cache-dir",
        str(cache),
        "--chunk-size",
        "2",
        "--no-progress",
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
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if pause is None:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert res.returncode == 0, res.stderr
        return res.stdout
    flag = tmp_path / f"paused-{pause}"
    env.update(Q2_TEST_PAUSE=pause, Q2_TEST_PAUSE_FILE=str(flag))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.time() + 300
    while not flag.exists():
        assert proc.poll() is None, f"q2 score ended before reaching {pause}"
        assert time.time() < deadline, f"q2 score did not reach {pause}"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return None


def outputs(out_dir):
    return [(out_dir / name).read_bytes() for name in OUTPUTS]


@pytest.mark.slow  # a subprocess
def test_sigkill_leaves_old_or_new_set_and_rerun_is_identical(tiny_config, rows, tmp_path):
    data = write_input(tmp_path / "in.csv", rows[:6])
    ref_dir, out = tmp_path / "ref", tmp_path / "out"
    q2_score(tmp_path, tiny_config, data, ref_dir, tmp_path / "ref-cache")
    new = outputs(ref_dir)
    old = [b"old scores\n", b"old steps\n", b"{}\n"]  # what an earlier run left there

    def reset_to_old():
        out.mkdir(exist_ok=True)
        for name, body in zip(OUTPUTS, old):
            (out / name).write_bytes(body)

    cache = tmp_path / "cache"
    # (point, the set after recovery): killed while scoring, after the temporary files are written,
    # after the manifest, and between the renames.
    for point, expected in [
        ("chunk-1", old),
        ("temps-written", old),
        ("manifest-written", new),
        ("first-renamed", new),
    ]:
        reset_to_old()
        q2_score(tmp_path, tiny_config, data, out, cache, pause=point)
        if point == "temps-written":
            assert leftovers(out)  # the killed run's partial files are there ...
        if point == "first-renamed":
            assert outputs(out)[0] == new[0] and outputs(out)[1:] == old[1:]  # mid-commit ...
        recover_outputs([out / name for name in OUTPUTS])  # ... what every later run does first
        assert outputs(out) == expected, point
        assert leftovers(out) == [], point

    reset_to_old()
    stdout = q2_score(tmp_path, tiny_config, data, out, cache)
    assert "(0 now, 6 from the cache)" in stdout
    assert outputs(out) == new  # byte-identical to an uninterrupted run
    assert leftovers(tmp_path) == []
    [cache_file] = cache.rglob("responses.jsonl")
    keys = [json.loads(line)["key"] for line in cache_file.read_text().splitlines()]
    assert len(keys) == 6 == len(set(keys))  # no row scored twice
