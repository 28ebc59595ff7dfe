"""`q2 data fetch`: against a local folder standing in for the server (file:// URLs; no test
touches the network). The expected SHA-256 are those of the published files, copies of which the
repository holds in data/ (computed with sha256sum, written into meta_fetch by hand). data/begin holds
only the BEGIN files the tests read, so the pinned list of BEGIN is cut to those here."""

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path

import pytest
from support.data import DATA

from q2_metric.cli import main
from q2_metric.meta import fetch as meta_fetch
from q2_metric.meta.fetch import SOURCES

LOCAL = {"begin": DATA / "begin", "q2-wow": DATA / "q2_wow"}


@pytest.fixture(autouse=True)
def held_files_only(monkeypatch):
    """Each pinned list cut to the files data/ holds (all of q2-wow; BEGIN's v1 and its WoW dev file)."""
    for name, sources in list(SOURCES.items()):
        held = tuple(
            dataclasses.replace(src, files=tuple(f for f in src.files if (LOCAL[name] / f.target).is_file()))
            for src in sources
        )
        monkeypatch.setitem(meta_fetch.SOURCES, name, tuple(src for src in held if src.files))


def test_the_repository_holds_the_pinned_files_it_names():
    held = {name: [f.target for src in SOURCES[name] for f in src.files] for name in LOCAL}
    assert held == {
        "begin": ["v1/dev_05_24_21.tsv", "v1/test_05_24_21.tsv", "wow/begin_dev_wow.tsv"],
        "q2-wow": [
            "dodeca_inconsistent.csv",
            "dodeca_consistent.csv",
            "memnet_inconsistent.csv",
            "memnet_consistent.csv",
            "cross_annotation.csv",
        ],
    }


def mirror(tmp_path: Path, name: str) -> Path:
    """BASE/OWNER/REPO/COMMIT/PATH for every pinned file, linked to the local copy."""
    base = tmp_path / "server"
    for src in SOURCES[name]:
        for f in src.files:
            dest = base / src.repo / src.commit / f.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(LOCAL[name] / f.target, dest)
    return base


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["begin", "q2-wow"])
def test_fetch_from_a_mirror(tmp_path, name, capsys):
    base = mirror(tmp_path, name)
    out = tmp_path / "data"
    assert main(["data", "fetch", name, "--base-url", base.as_uri(), "--out", str(out)]) == 0
    for src in SOURCES[name]:
        for f in src.files:
            assert sha(out / f.target) == sha(LOCAL[name] / f.target)
            assert (out / f.target).read_bytes() == (LOCAL[name] / f.target).read_bytes()
    # a second run finds every file in place and downloads nothing
    shutil.rmtree(base)
    assert main(["data", "fetch", name, "--base-url", base.as_uri(), "--out", str(out)]) == 0
    assert "already there" in capsys.readouterr().err


def test_a_corrupted_file_writes_nothing(tmp_path, capsys):
    base = mirror(tmp_path, "begin")
    src = SOURCES["begin"][1]
    victim = base / src.repo / src.commit / src.files[0].path
    victim.unlink()
    victim.write_bytes((LOCAL["begin"] / src.files[0].target).read_bytes().replace(b"Fully", b"Fuly", 1))
    out = tmp_path / "data"
    assert main(["data", "fetch", "begin", "--base-url", base.as_uri(), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "has SHA-256" in err and "nothing was written" in err and src.files[0].sha256 in err
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_a_different_file_in_place_is_refused(tmp_path, capsys):
    base = mirror(tmp_path, "begin")
    out = tmp_path / "data"
    (out / "v1").mkdir(parents=True)
    (out / "v1" / "dev_05_24_21.tsv").write_text("mine\n")
    assert main(["data", "fetch", "begin", "--base-url", base.as_uri(), "--out", str(out)]) == 2
    assert "is not the published" in capsys.readouterr().err
    assert (out / "v1" / "dev_05_24_21.tsv").read_text() == "mine\n"
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["dev_05_24_21.tsv"]


def test_unreachable_server_is_one_sentence(tmp_path, capsys):
    out = tmp_path / "data"
    assert (
        main(["data", "fetch", "q2-wow", "--base-url", (tmp_path / "nowhere").as_uri(), "--out", str(out)])
        == 2
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("q2: ")]
    assert len(err) == 1 and "could not be downloaded" in err[0]
    assert not [p for p in out.rglob("*") if p.is_file()]


def test_pins_are_full_commits_and_digests():
    for sources in SOURCES.values():
        for src in sources:
            assert len(src.commit) == 40 and int(src.commit, 16) >= 0
            assert all(len(f.sha256) == 64 for f in src.files)
    assert SOURCES["begin"][0].url(SOURCES["begin"][0].files[0]) == (
        "https://raw.githubusercontent.com/google/BEGIN-dataset/6f881995bca5405918f3138b04f29fdd2a1b73ae/"
        "dev_05_24_21.tsv"
    )
