"""docs/serve.md's serve blocks run as written (test_docs.py leaves them out: they start a server
that runs until stopped): in one bash shell, in the page's order, on a free port instead of the
page's 8765, the Python block with the shell's `python`. The server started by the first block
answers every request and the last block's SIGTERM stops it with exit code 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.data import ROOT
from support.serve import free_port

from integration.test_docs import blocks

PAGE = ROOT / "docs" / "serve.md"


def test_the_serve_page_runs_as_written(tmp_path, tiny_dir):
    served = [b for b in blocks(PAGE) if b.norun and "test_serve_docs.py" in b.norun]
    assert [b.lang for b in served] == ["bash", "bash", "bash", "python", "bash"]
    port = str(free_port())
    parts = []
    for b in served:
        code = b.code.replace("8765", port)
        parts.append(code if b.lang == "bash" else f"python - <<'PYEOF'\n{code}PYEOF\n")
    script = tmp_path / "page.sh"
    script.write_text("set -e -o pipefail\n" + "".join(parts), encoding="utf-8")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "Q2_TINY_MODELS": str(tiny_dir),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
    }
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert '"id":"turn-7"' in out and '"status":"scored"' in out
    assert "item 1: field 'response' must be a string, got int." in out
    # the guarded answer: the tiny models' verdict decides which, either is the function working
    assert "Bob Ross hosted The Joy of Painting on PBS." in out or "held back:" in out
