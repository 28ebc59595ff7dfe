"""docs/coref.md: its runnable blocks run offline on tiny models (a block after
`<!-- norun: ... -->` is skipped), and the error it quotes is the one the code raises."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastcoref")

DOC = Path(__file__).resolve().parents[1] / "docs" / "coref.md"


def blocks(kind):
    text = DOC.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"(<!-- norun:[^>]*-->\n)?```(\w+)\n(.*?)```", text, re.S):
        if m.group(2) == kind and not m.group(1):
            out.append(m.group(3))
    return out


def test_python_blocks_run():
    found = blocks("python")
    assert found
    for code in found:
        exec(compile(code, str(DOC), "exec"), {})


def test_bash_blocks_run(tmp_path):
    found = blocks("bash")
    assert found
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "Q2_TINY_MODELS": str(tmp_path / "tiny"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for code in found:
        res = subprocess.run(["bash", "-e", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "coreference model was tiny and random too" in res.stdout


def test_quoted_missing_model_sentence_is_the_real_one(tiny_config):
    from q2_metric import ModelNotAvailable, Q2Scorer
    from q2_metric.testing import ScriptedParser

    scorer = Q2Scorer(tiny_config.replace(coref=True, coref_model="biu-nlp/f-coref"), parser=ScriptedParser())
    with pytest.raises(ModelNotAvailable) as err:
        scorer.check_models()
    quoted = " ".join(re.search(r"    (The coreference model 'biu-nlp.*?--coref-model\)\.)", DOC.read_text(), re.S)
                      .group(1).split())
    assert str(err.value) == quoted
