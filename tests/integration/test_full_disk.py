"""A full disk (a file-size limit in a subprocess): the scored rows are kept and the error names the file."""

from __future__ import annotations

import json
import subprocess
import sys

from support.files import HEADER, leftovers

PY = sys.executable


FULL_DISK = r"""
import json, resource, signal, sys
from pathlib import Path
from q2_metric.corpus.cache import cache_key
from q2_metric.corpus.files import score_file
from q2_metric.testing.scripted import scripted_scorer
tmp, limit, old = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
scorer = scripted_scorer()
cache = tmp / "cache" / cache_key(scorer) / "responses.jsonl"
cache.parent.mkdir(parents=True, exist_ok=True)
# an earlier run's cache, near the limit: one valid entry of 20000 bytes (a damaged one would be dropped)
entry = {"key": "earlier", "result": {"q2": 1.0, "q2_no_nli": 1.0, "fallback": False, "reason": None,
                                      "questions": []}, "pad": ""}
entry["pad"] = "x" * (20000 - len(json.dumps(entry)))
cache.write_text(json.dumps(entry) + "\n")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    report = score_file(scorer, tmp / "in.csv", old, cache_dir=tmp / "cache")
    print(json.dumps({"scored": report.system.num_scored, "warnings": report.warnings}))
except OSError as err:
    print(json.dumps({"error": f"{err.strerror} '{err.filename}'"}))
print(json.dumps({"cache_size": cache.stat().st_size}))
"""


def test_full_disk_keeps_the_scored_rows_and_names_the_file(tmp_path):
    (tmp_path / "in.csv").write_text(
        HEADER + "".join(f"Paris {i} is big.,Paris {i} is big.\n" for i in range(30))
    )
    old = tmp_path / "out.csv"
    old.write_text("old\n")

    def run(limit: int) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PY, "-c", FULL_DISK, str(tmp_path), str(limit), str(old)],
            capture_output=True,
            text=True,
            timeout=300,
        )

    # the cache cannot grow, the outputs (small) can: the chunk is kept and written out
    res = run(20001 + 500)
    first, second = [json.loads(line) for line in res.stdout.splitlines()]
    cache = next((tmp_path / "cache").rglob("responses.jsonl"))
    assert first["scored"] == 30 and second["cache_size"] == 20001  # the cut append was undone
    assert first["warnings"] == [
        f"cannot write the cache file '{cache}' (File too large): this run goes on without "
        "the cache (its scores go to the outputs but will not be reused by a later run)"
    ]
    assert f"q2: warning: cannot write the cache file '{cache}'" in res.stderr
    assert len(old.read_text().splitlines()) == 31
    # nothing can grow: the error names the output file and the earlier outputs are kept
    old.write_text("old\n")
    res = run(1000)
    first = json.loads(res.stdout.splitlines()[0])
    assert first == {"error": f"File too large while writing (the earlier outputs are kept) '{old}'"}
    assert old.read_text() == "old\n" and leftovers(tmp_path) == []
