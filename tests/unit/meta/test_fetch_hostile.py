"""`q2 data fetch` against hostile targets and servers, through its own seams only (a local
file:// mirror, a local http.server on 127.0.0.1, an opener passed in): a size cap, a FIFO at the
target or the source, a read-only folder, and the part file of a live run (the killed run's are in
tests/integration/test_fetch_killed.py). The
expected digests come from hashlib, not from the code under test."""

import errno
import http.server
import os
import threading
from pathlib import Path

import pytest
from support.fetch import BODIES, COMMIT, listing, serve_toy

from q2_metric.cli import main
from q2_metric.meta import fetch as fetch_mod
from q2_metric.meta.fetch import FetchError, fetch


@pytest.fixture
def source(monkeypatch, tmp_path):
    """A dataset "toy" of two files on a file:// mirror; the base URL."""
    return serve_toy(monkeypatch, tmp_path)


def in_thread(fn, timeout: float = 20):
    """Run `fn` in a thread; its exception, or fail if it is still running after `timeout` (blocked)."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as err:
            box["error"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked"
    return box.get("error")


def test_a_mirror_works_and_the_cli_has_a_cap_option(source, tmp_path, capsys):
    out = tmp_path / "data"
    assert main(["data", "fetch", "toy", "--base-url", source, "--out", str(out), "--max-mb", "1"]) == 0
    assert {n: (out / n).read_bytes() for n in BODIES} == BODIES
    assert listing(out) == ["a.tsv", "sub", "sub/b.tsv"]  # no part file left


def test_past_the_size_cap_stops_in_one_sentence(source, tmp_path, capsys):
    out = tmp_path / "data"
    cap = 5000 / 2**20  # the first file (4000 bytes) fits, the second goes past
    with pytest.raises(
        FetchError,
        match=r"goes past the .* MB cap on what one fetch downloads \(--max-mb\); "
        r"stopped, nothing was written\.$",
    ) as err:
        fetch("toy", out, source, max_mb=cap)
    assert "sub/b.tsv" in str(err.value)
    assert listing(out) in ([], ["sub"])  # the folders may be made, but no file, no part file
    assert main(["data", "fetch", "toy", "--base-url", source, "--out", str(out), "--max-mb", str(cap)]) == 2
    lines = capsys.readouterr().err.splitlines()
    errors = [line for line in lines if not line.startswith("q2 data fetch: downloading ")]  # progress lines
    assert len(errors) == 1 and "--max-mb" in errors[0] and not any("Traceback" in line for line in lines)


def test_a_declared_length_past_the_cap_is_refused_before_reading(source, tmp_path):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(10 * 2**20))
            self.end_headers()
            self.wfile.write(b"x" * 1000)  # then nothing: reading on would wait for the rest

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        err = in_thread(lambda: fetch("toy", tmp_path / "data", base, max_mb=1))
    finally:
        server.shutdown()
    assert isinstance(err, FetchError) and "goes past the 1 MB cap" in str(err)
    assert not list((tmp_path / "data").rglob("*.tsv*"))


def test_a_fifo_at_the_target_is_refused_not_opened(source, tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    os.mkfifo(out / "a.tsv")
    err = in_thread(lambda: fetch("toy", out, source))
    assert isinstance(err, FetchError)
    assert str(err) == (
        f"{out / 'a.tsv'} exists and is a FIFO, not the published a.tsv; move it away or choose "
        "another folder (nothing was downloaded)."
    )
    assert listing(out) == ["a.tsv"]  # the FIFO is still there, nothing else
    os.symlink(out / "a.tsv", tmp_path / "link")  # a link to it is refused the same way
    (out / "a.tsv").unlink()
    os.symlink(tmp_path / "link", out / "a.tsv")
    assert isinstance(in_thread(lambda: fetch("toy", out, source)), FetchError)


def test_a_fifo_on_a_file_mirror_is_refused_not_read(source, tmp_path):
    victim = Path(source.removeprefix("file://")) / "me/toy" / COMMIT / "sub/b.tsv"
    victim.unlink()
    os.mkfifo(victim)
    err = in_thread(lambda: fetch("toy", tmp_path / "data", source))
    assert isinstance(err, FetchError) and str(err).endswith(
        "sub/b.tsv is a FIFO, not a regular file; point --base-url at a copy of the files."
    )
    assert not list((tmp_path / "data").rglob("*.tsv*"))


def test_a_read_only_folder_is_reported_as_such_before_any_download(source, tmp_path, monkeypatch, capsys):
    out = tmp_path / "data"
    out.mkdir()
    out.chmod(0o555)
    calls = []

    def opener(url, timeout):
        calls.append(url)
        raise AssertionError("nothing should be downloaded")

    if os.geteuid() == 0:  # root writes through permission bits: stand in for a read-only mount
        real = fetch_mod._open_part

        def read_only(target):
            if Path(target).parent == out:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(target))
            return real(target)

        monkeypatch.setattr(fetch_mod, "_open_part", read_only)
    try:
        with pytest.raises(FetchError) as err:
            fetch("toy", out, source, opener=opener)
        assert str(err.value).startswith(f"{out} cannot be written (")
        assert "read-only folder or file system); choose another --out (nothing was downloaded)." in str(
            err.value
        )
        assert "network" not in str(err.value) and calls == []
        assert listing(out) == []
    finally:
        out.chmod(0o755)


def test_a_live_runs_part_file_is_left_alone(tmp_path):
    import fcntl

    target = tmp_path / "a.tsv"
    live = tmp_path / ".a.tsv.part-1"
    stale = tmp_path / ".a.tsv.part-2"
    live.write_bytes(b"x")
    stale.write_bytes(b"y")
    os.mkfifo(tmp_path / ".a.tsv.part-3")  # not ours: left alone, never opened
    with open(live, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        fetch_mod._remove_stale_parts(target)
        assert sorted(p.name for p in tmp_path.iterdir()) == [".a.tsv.part-1", ".a.tsv.part-3"]
