"""Signatures: independent of how a local model's path is typed; the short form names departures."""

from __future__ import annotations

import os
from pathlib import Path

from q2_metric import Q2Config, Q2Scorer
from q2_metric.signature import Signature


def test_signature_does_not_depend_on_how_the_path_is_typed(tiny_models, tmp_path, monkeypatch):
    from q2_metric.corpus.cache import cache_key

    qg = Path(tiny_models["qg"])
    monkeypatch.chdir(qg.parent.parent)
    link = tmp_path / "link"
    link.symlink_to(qg.parent)
    spellings = [str(qg), os.path.relpath(qg), f"{qg.parent}/./qg", str(link / "qg")]
    signatures, keys = set(), set()
    for spelling in spellings:
        scorer = Q2Scorer(
            Q2Config(
                qg_model=spelling, qa_model=tiny_models["qa"], nli_model=tiny_models["nli"], device="cpu"
            )
        )
        signature = str(scorer.signature())
        assert spelling not in signature and "|qg:local-" in signature
        signatures.add(signature)
        keys.add(cache_key(scorer))
    assert len(signatures) == 1 and len(keys) == 1  # same folder: same signature, same cache


def test_short_signature_names_departures():
    paper = Signature.create(Q2Config.paper())
    assert Signature.parse(str(paper)) == paper
    short = paper.short()
    assert (
        short.startswith("q2:") and "|models:paper|rules:paper|dtype:auto|sig:" in short and len(short) < 80
    )
    assert "|rules:dnli|" in Signature.create(Q2Config.dnli()).short()
    assert (
        "|rules:paper+dec,mode|"
        in Signature.create(Q2Config(decoding="greedy", question_mode="multi")).short()
    )
    assert "|models:custom(qa)|" in Signature.create(Q2Config(qa_model="me/qa")).short()
    # the hash tells apart signatures that differ only where the short form does not look
    assert Signature.create(Q2Config(num_beams=6)).short() != short
