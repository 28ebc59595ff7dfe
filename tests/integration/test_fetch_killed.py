"""`q2 data fetch` killed with SIGKILL mid-download (a stalling opener passed in, no network): the
part files it leaves are removed by the next run, which then succeeds."""

import hashlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from support.fetch import BODIES, COMMIT, listing, serve_toy

from q2_metric.meta.fetch import fetch

pytestmark = pytest.mark.slow


@pytest.fixture
def source(monkeypatch, tmp_path):
    """A dataset "toy" of two files on a file:// mirror; the base URL."""
    return serve_toy(monkeypatch, tmp_path)


KILLED = textwrap.dedent("""
    import sys, time
    from q2_metric.meta import fetch as m
    files = tuple(m.PinnedFile(n, n, d) for n, d in zip(sys.argv[3::2], sys.argv[4::2]))
    m.SOURCES["toy"] = (m.Source("me/toy", sys.argv[2], files, "CC0"),)

    class Slow:
        def __init__(self, url, timeout):
            self.sent = False
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return False
        def read(self, n):
            if self.sent:
                time.sleep(600)  # stalls after the first block, until killed
            self.sent = True
            return b"partial"

    m.fetch("toy", sys.argv[1], opener=Slow)
""")


def test_part_files_of_a_killed_run_are_removed_by_the_next(source, tmp_path):
    out = tmp_path / "data"
    args = [f"{n} {hashlib.sha256(b).hexdigest()}".split() for n, b in BODIES.items()]
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(out), COMMIT, *(x for a in args for x in a)],
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len([p for p in listing(out) if ".part-" in p]) < 2:  # made before the first download
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    left = [p for p in listing(out) if ".part-" in p]
    assert left  # what SIGKILL leaves: one part file per target (created before any download)
    fetch("toy", out, source)
    assert listing(out) == ["a.tsv", "sub", "sub/b.tsv"]
    assert {n: (out / n).read_bytes() for n in BODIES} == BODIES
