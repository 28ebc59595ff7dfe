"""docs/coref.md: the error it quotes is the one the code raises (its runnable blocks run in
tests/integration/test_docs.py, with every other page's)."""

import re

import pytest
from support.data import ROOT

pytest.importorskip("fastcoref")

DOC = ROOT / "docs" / "coref.md"


def test_quoted_missing_model_sentence_is_the_real_one(tiny_config):
    from q2_metric import ModelNotAvailable, Q2Scorer
    from q2_metric.testing.scripted import ScriptedParser

    scorer = Q2Scorer(tiny_config.replace(coref=True, coref_model="biu-nlp/f-coref"), parser=ScriptedParser())
    with pytest.raises(ModelNotAvailable) as err:
        scorer.check_models()
    quoted = " ".join(
        re.search(r"    (The coreference model 'biu-nlp.*?--coref-model\)\.)", DOC.read_text(), re.S)
        .group(1)
        .split()
    )
    assert str(err.value) == quoted
