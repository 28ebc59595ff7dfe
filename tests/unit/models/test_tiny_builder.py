"""The tiny random models score replies by their text: varying, deterministic scores through the real
backends (so that row-by-row comparisons between front-ends can fail), built the same every time."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from q2_metric import Q2Scorer
from q2_metric.display import verdict
from q2_metric.models import tiny_builder as rm


@pytest.fixture(scope="module")
def sample_result(tiny_config, rows):
    return Q2Scorer(tiny_config).score([r["response"] for r in rows], [r["knowledge"] for r in rows])


def test_sample_scores_vary_with_zero_and_one(sample_result):
    scores = [round(s, 6) for s in sample_result.scores]
    assert len(scores) == 40
    assert len(set(scores)) >= 3, sorted(Counter(scores).items())
    assert 0.0 in scores and 1.0 in scores
    # no value holds most rows: swapping two rows changes the scores of most pairs
    assert max(Counter(scores).values()) <= 30


def test_sample_goes_through_every_path(sample_result):
    """Some responses through valid questions (the response's QA answer is the candidate), with
    knowledge answers that agree, differ (NLI deciding) and are missing; others through the
    end-to-end NLI fallback with each of its three labels."""
    responses = sample_result.responses
    span = [r for r in responses if r.valid_questions]
    fallback = [r for r in responses if r.fallback]
    assert len(span) >= 5 and len(fallback) >= 5
    assert {r.fallback_label for r in fallback} == {"entailment", "neutral", "contradiction"}
    verdicts = Counter(verdict(t) for r in span for t in r.valid_questions)
    assert {"same", "unanswered"} <= set(verdicts) and len(verdicts) >= 4, verdicts
    assert {t.nli_label for r in span for t in r.valid_questions} >= {"entailment", "contradiction"}


def test_scores_are_deterministic(tiny_config, rows, sample_result):
    """A fresh scorer on the same models gives the same scores, in any batch order."""
    picked = rows[::-3]  # another order and batch composition
    again = Q2Scorer(tiny_config).score([r["response"] for r in picked], [r["knowledge"] for r in picked])
    by_response = {rows[i]["response"]: s for i, s in enumerate(sample_result.scores)}
    assert again.scores == [by_response[r["response"]] for r in picked]


def _digests(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_tiny_build_is_byte_for_byte_reproducible(tmp_path, rows, tiny_models):
    from pathlib import Path

    texts = [r["response"] for r in rows] + [r["knowledge"] for r in rows]
    rm.build_tiny_models(tmp_path / "again", texts, size="tiny")
    first = Path(tiny_models["qa"]).parent
    assert _digests(tmp_path / "again") == _digests(first)


def test_other_sizes_build_byte_for_byte_reproducibly(tmp_path, rows, monkeypatch):
    """The paper shapes' path (fully random weights, no hand-set layers) with the tiny shapes, so
    the test stays small: two builds from the same texts are the same bytes (the benchmark's QG
    questions were other ones in every process while this path trained its tokenizer)."""
    monkeypatch.setitem(rm.SIZES, "plain", rm.SIZES["tiny"])
    texts = [r["response"] for r in rows] + [r["knowledge"] for r in rows]
    rm.build_tiny_models(tmp_path / "a", texts, size="plain")
    rm.build_tiny_models(tmp_path / "b", texts, size="plain")
    assert _digests(tmp_path / "a") == _digests(tmp_path / "b")


def test_word_tokenizer_keeps_every_sample_word_whole(rows):
    texts = [r["response"] for r in rows] + [r["knowledge"] for r in rows]
    tok = rm.word_tokenizer(texts)
    assert tok.tokenize("The Beatles were formed in Liverpool") == [
        "the",
        "beatles",
        "were",
        "formed",
        "in",
        "liverpool",
    ]
    assert tok.tokenize("zqx") == ["z", "##q", "##x"]  # an unknown word is spelled out, never [UNK]


def test_qa_logits_are_per_token_and_position(tiny_models):
    """The design of `lexical_qa`, checked on the model's own outputs: the CLS position scores
    exactly NULL_SCORE + BONUS/2; a token's logits depend on its token, position and segment only
    (not on its neighbours); the same token at the same position scores BONUS lower in the question."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["qa"])
    model = AutoModelForQuestionAnswering.from_pretrained(tiny_models["qa"]).eval()

    def logits(ids, types):
        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]))
        return out.start_logits[0], out.end_logits[0]

    cls, sep = tok.cls_token_id, tok.sep_token_id
    a, b, c = tok.convert_tokens_to_ids(["painting", "pizza", "tennis"])
    start1, end1 = logits([cls, a, sep, b, c, sep], [0, 0, 0, 1, 1, 1])
    start2, end2 = logits([cls, c, sep, b, a, sep], [0, 0, 0, 1, 1, 1])
    start3, _ = logits([cls, a, sep, c, b, sep], [0, 0, 0, 1, 1, 1])
    null = rm.NULL_SCORE + rm.BONUS / 2
    assert start1[0].item() == pytest.approx(null, abs=1e-4) and end1[0].item() == pytest.approx(
        null, abs=1e-4
    )
    assert start1[3].item() == pytest.approx(start2[3].item(), abs=1e-4)  # "pizza" at 3, other neighbours
    assert end1[3].item() == pytest.approx(end2[3].item(), abs=1e-4)
    # "painting" at position 1 in the question vs "tennis" there: differ; question vs text: BONUS apart
    assert start1[1].item() != pytest.approx(start2[1].item(), abs=1e-3)
    with torch.no_grad():
        text_a = model(input_ids=torch.tensor([[cls, a, sep]]), token_type_ids=torch.tensor([[0, 1, 1]]))
    assert text_a.start_logits[0, 1].item() - start3[1].item() == pytest.approx(rm.BONUS, abs=1e-4)


def test_nli_label_is_a_bag_of_content_words(tiny_models):
    """`bag_of_words_nli`: the label reads the pair's content words as a bag: the same for another
    word order, with the texts swapped, or with function words and punctuation added."""
    from q2_metric.config import Q2Config
    from q2_metric.models.hf_nli import HFNLIClassifier

    nli = HFNLIClassifier(Q2Config(nli_model=tiny_models["nli"], device="cpu"))
    premises = [
        "bob ross hosted the joy of painting",
        "pizza is a traditional italian dish",
        "asthma is a disease of the lungs",
        "federer won many tennis titles",
    ]
    hypotheses = ["he hosted a show", "cheese pizza", "tennis players", "the lungs of federer"]
    labels = nli.classify(premises, hypotheses)
    shuffled = nli.classify([" ".join(reversed(h.split())) for h in hypotheses], premises)
    padded = nli.classify([f"well, {p} ." for p in premises], [f"and so {h} !" for h in hypotheses])
    assert labels == shuffled == padded
    wider = nli.classify(
        premises * 10,
        [
            h + " " + w
            for h in hypotheses
            for w in (
                "canada",
                "music",
                "finance",
                "vegetables",
                "cheese",
                "japan",
                "liverpool",
                "1994",
                "doubles",
                "balloons",
            )
        ],
    )
    assert len(set(labels + wider)) == 3  # every label, depending on the words


def test_qg_logits_are_the_chain_table(rows):
    """The design of `chain_qg`, checked on the model's own outputs: after question word j, the
    logits are row j of `chain_table` (its candidates' values, -FLOOR or lower for every other
    token), whatever the input, up to rounding."""
    import numpy as np
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    texts = [r["response"] for r in rows] + [r["knowledge"] for r in rows]
    tok = rm.word_tokenizer(texts)
    model = T5ForConditionalGeneration(
        T5Config(
            vocab_size=len(tok),
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.pad_token_id,
            **rm.SIZES["tiny"]["t5"],
        )
    ).eval()
    chain = rm.chain_qg(model, tok, np.random.default_rng([0, 2]))
    table, _ = rm.chain_table(np.random.default_rng([rm.TABLE_SEED]))
    inputs = tok(
        ["answer: tennis  context: tennis is a fun racket sport", "answer: it  context: it aired"],
        padding=True,
        return_tensors="pt",
    )
    for j, row in enumerate(table):
        with torch.no_grad():
            logits = model(
                **inputs, decoder_input_ids=torch.tensor([[tok.pad_token_id, chain[j]]] * 2)
            ).logits[:, -1]
        want = {tok.eos_token_id if s == "eos" else chain[s]: value for s, value in row}
        for got in logits:
            assert [got[t].item() for t in want] == pytest.approx(list(want.values()), rel=1e-5, abs=1e-4)
            rest = np.delete(got.numpy(), list(want))
            assert rest.max() <= -rm.FLOOR + 1.0


def test_a_small_vocabulary_is_padded_for_the_designed_qg(tmp_path):
    """The designed QG asks CHAIN (28) distinct words: texts with fewer gave numpy's "Cannot take a
    larger sample than population" traceback; the vocabulary is padded with made-up words."""
    from q2_metric import Q2Config

    texts = ["Bob Ross painted.", "Bob Ross hosted a show."]
    assert len(rm.question_words(rm.word_tokenizer(texts))) < rm.CHAIN
    paths = rm.build_tiny_models(tmp_path, iter(texts))  # any iterable, read once
    config = Q2Config(qg_model=paths["qg"], qa_model=paths["qa"], nli_model=paths["nli"], device="cpu")
    result = Q2Scorer(config).score(texts, texts)
    assert result.system.num_scored == 2


def test_the_pages_give_the_scores_the_tiny_models_give(sample_result):
    """Two pages gave different tiny-model scores on the sample (0, 0.2, 0.5 and 1; 0, 0.5, 2/3 and
    1): both give what the models give (their questions and labels sit far from any tie:
    `test_tiny_margins.py`)."""
    from support.data import ROOT

    assert sorted({round(s, 6) for s in sample_result.scores}) == [0.0, 0.2, 0.5, 1.0]
    for page in ("models.md", "guarantees.md"):
        assert "0, 0.2, 0.5 and 1" in (ROOT / "docs" / page).read_text(encoding="utf-8"), page
