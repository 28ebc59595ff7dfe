"""The paper's tokenization and T5 arithmetic, pinned to values recorded from transformers 3.2.0.

tests/data/ref32/ holds two small SentencePiece models made the way the paper's were (T5: unigram;
ALBERT: ALBERT's control and user-defined symbols), saved by transformers 3.2.0's T5Tokenizer and
AlbertTokenizer, a tiny random T5 saved by 3.2.0 (so it carries the cross-attention bias), and
expected.json: what 3.2.0 gave for a few dozen tricky strings (accents, ``/'' quotes, digit-comma
pieces, spaces before punctuation, tabs, emoji, CJK, special-token look-alikes) and the T5's
logits and generated ids. They were recorded by tests/data/ref32/record.py, run with the
transformers 3.2 environment that `make conformance` builds, not by the code under test.
"""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
import torch
from support.data import TEST_DATA

from q2_metric.config import Q2Config
from q2_metric.models.loading import read_checkpoint_tensor
from q2_metric.models.paper.reference_tokenization import (
    albert_preprocess,
    clean_up_tokenization,
    load_reference_tokenizer,
    split_on_special_tokens,
)
from q2_metric.models.paper.t5_cross_bias import CROSS_BIAS, attach_cross_attention_bias

DATA = TEST_DATA / "ref32"
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def t5():
    return load_reference_tokenizer(str(DATA / "t5"))


@pytest.fixture(scope="module")
def albert_dir(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("albert") / "qa"
    shutil.copytree(DATA / "albert", out)
    (out / "config.json").write_text(json.dumps({"model_type": "albert"}))
    return str(out)


@pytest.fixture(scope="module")
def albert(albert_dir):
    return load_reference_tokenizer(albert_dir)


def test_t5_prompt_ids_and_decoding_equal_transformers_3_2(t5):
    assert t5 is not None and t5.kind == "t5"
    for case in EXPECTED["t5"]:
        assert t5.t5_input(case["text"]) == case["ids"], case["text"]
        assert t5.decode(case["ids"]) == case["decoded"], case["text"]
    # one </s>: the prompt's literal, none appended after it
    assert all(c["ids"].count(1) == c["text"].count("</s>") for c in EXPECTED["t5"])


def test_t5_eos_is_appended_unless_present(t5):
    for case in EXPECTED["t5"]:
        text = case["text"].split("context: ", 1)[1].rsplit(" </s>", 1)[0]
        assert t5.t5_input(text) == case["plain_ids"], text


def test_albert_ids_and_strings_equal_transformers_3_2(albert):
    assert albert is not None and albert.kind == "albert"
    for case in EXPECTED["albert"]:
        assert albert.encode(case["text"]) == case["ids"], case["text"]
        assert albert.convert_tokens_to_string(albert.tokens_of(case["ids"])) == case["string"], case["text"]


def test_albert_pairs_equal_encode_plus_of_transformers_3_2(albert):
    for case in EXPECTED["pairs"]:
        ((ids, types),) = albert.pair_windows(case["question"], case["text"], window=512, stride=128)
        assert ids == case["input_ids"] and types == case["token_type_ids"], (case["question"], case["text"])


def test_tricky_strings_are_covered(albert):
    """The recorded strings do exercise the rules that differ from transformers 5."""
    texts = [c["text"] for c in EXPECTED["albert"]]
    assert any("1990," in t for t in texts) and any("``" in t for t in texts) and any("é" in t for t in texts)
    sub = next(c for c in EXPECTED["albert"] if c["text"] == "sub-categories")
    tokens = albert.tokens_of(sub["ids"])
    after = tokens[tokens.index("-") + 1]
    assert not after.startswith(
        "\u2581"
    )  # 3.2: `- categories` stays one word (transformers 5: `- ▁categories`)
    dot = next(c for c in EXPECTED["albert"] if c["text"].startswith("well , there"))
    assert "\u2581" in albert.tokens_of(dot["ids"])  # the lone `▁` before a user-defined symbol is kept


def test_small_rules():
    assert clean_up_tokenization("is it , rex ' s ?") == "is it, rex's?"
    assert albert_preprocess("``Naïve''\tCafé") == '"naive" cafe'
    assert split_on_special_tokens("a </s> b</s>", ["</s>"]) == ["a", "</s>", "b", "</s>"]
    assert split_on_special_tokens("  ", ["</s>"]) == []


def test_long_texts_are_read_in_overlapping_windows(albert):
    text = " ".join(["the 1990s, in berlin ( germany ) - were a time of change ."] * 40)
    windows = albert.pair_windows("what ?", text, window=64, stride=16)
    body = albert.encode(text)
    q = albert.encode("what ?")
    assert len(windows) > 1 and all(len(ids) <= 64 for ids, _ in windows)
    chunks = [ids[len(q) + 2 : -1] for ids, _ in windows]
    assert chunks[0] == body[: len(chunks[0])] and chunks[-1] == body[-len(chunks[-1]) :]
    assert chunks[1][:16] == chunks[0][-16:]  # consecutive windows overlap by the stride


def test_other_models_keep_transformers_tokenization(tiny_models, albert_dir, tmp_path):
    assert load_reference_tokenizer(tiny_models["qa"]) is None  # a WordPiece tokenizer
    odd = tmp_path / "odd"
    shutil.copytree(albert_dir, odd)
    (odd / "added_tokens.json").write_text(json.dumps({"<new>": 600}))
    assert load_reference_tokenizer(str(odd)) is None


# -- the T5 cross-attention bias of transformers 3.x -------------------------------------------


def load_t5(attach: bool):
    from transformers import T5ForConditionalGeneration

    model = T5ForConditionalGeneration.from_pretrained(str(DATA / "t5")).eval()
    applied = attach_cross_attention_bias(model, str(DATA / "t5")) if attach else False
    return model, applied


def test_checkpoint_keeps_the_bias_that_transformers_5_drops():
    weight = read_checkpoint_tensor(
        lambda name: str(DATA / "t5" / name) if (DATA / "t5" / name).is_file() else None, CROSS_BIAS
    )
    assert weight is not None and weight.shape == (32, 2) and weight.abs().sum() > 0
    model, applied = load_t5(attach=True)
    assert applied and CROSS_BIAS not in model.state_dict()  # transformers 5 itself has no such weight
    attention = model.decoder.block[0].layer[1].EncDecAttention
    torch.testing.assert_close(attention.cross_relative_attention_bias, weight)


def test_t5_with_the_bias_computes_what_transformers_3_2_computed():
    case = EXPECTED["t5_model"]
    ids, decoder = torch.tensor([case["input_ids"]]), torch.tensor([case["decoder_input_ids"]])
    expected = torch.tensor(case["logits"])
    model, _ = load_t5(attach=True)
    plain, _ = load_t5(attach=False)
    with torch.no_grad():
        got = model(input_ids=ids, decoder_input_ids=decoder).logits[0]
        without = plain(input_ids=ids, decoder_input_ids=decoder).logits[0]
        greedy = model.generate(input_ids=ids, max_length=10, do_sample=False, num_beams=1)
        beam = model.generate(
            input_ids=ids, max_length=10, num_beams=3, num_return_sequences=3, do_sample=False
        )
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert (without - expected).abs().max() > 1e-3  # without the bias, another function
    # incremental decoding (the cache) places the queries at the right decoder positions
    assert greedy[0].tolist() == case["greedy"]
    assert beam.tolist() == case["beam"]


def test_zeroed_bias_equals_no_bias(tmp_path):
    model, _ = load_t5(attach=True)
    plain, _ = load_t5(attach=False)
    model.decoder.block[0].layer[1].EncDecAttention.cross_relative_attention_bias.zero_()
    ids = torch.tensor([EXPECTED["t5_model"]["input_ids"]])
    decoder = torch.tensor([EXPECTED["t5_model"]["decoder_input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(
            model(input_ids=ids, decoder_input_ids=decoder).logits,
            plain(input_ids=ids, decoder_input_ids=decoder).logits,
        )


def test_a_3x_checkpoint_without_the_bias_warns_once(tmp_path):
    from transformers import T5ForConditionalGeneration

    model, _ = load_t5(attach=False)
    out = tmp_path / "qg"
    shutil.copytree(DATA / "t5", out)
    state = torch.load(out / "pytorch_model.bin", weights_only=True)
    del state[CROSS_BIAS]
    torch.save(state, out / "pytorch_model.bin")
    model = T5ForConditionalGeneration.from_pretrained(str(out))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert attach_cross_attention_bias(model, str(out)) is False
        assert attach_cross_attention_bias(model, str(out)) is False
    assert len([w for w in caught if "cross-attention bias" in str(w.message)]) == 1


def test_qg_backend_uses_the_reference_path(tmp_path):
    from q2_metric.models.hf_qg import HFQuestionGenerator

    qg = HFQuestionGenerator(Q2Config(qg_model=str(DATA / "t5"), device="cpu", max_question_length=10))
    assert qg.tokenization == "ref32+xbias"
    prompts = [c["text"] for c in EXPECTED["t5"][:6]]
    assert qg.encode(prompts) == [c["ids"] for c in EXPECTED["t5"][:6]]
    # batching pads: every prompt's questions equal those generated from it alone
    together = qg.generate_ids(prompts)
    alone = [qg.generate_ids([p])[0] for p in prompts]
    assert together == alone
    hf = HFQuestionGenerator(Q2Config(qg_model=str(DATA / "t5"), device="cpu"), reference=False)
    assert hf.tokenization == "hf" and hf.encode(prompts[:1]) != qg.encode(prompts[:1])


@pytest.fixture(scope="module")
def tiny_albert_ref(albert_dir, tmp_path_factory) -> str:
    """A random tiny ALBERT beside the 3.2-saved ALBERT tokenizer files."""
    from transformers import AlbertConfig, AlbertForQuestionAnswering

    out = tmp_path_factory.mktemp("albert_qa") / "qa"
    shutil.copytree(albert_dir, out)
    torch.manual_seed(0)
    size = load_reference_tokenizer(albert_dir).vocab_size
    AlbertForQuestionAnswering(
        AlbertConfig(
            vocab_size=size,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=512,
            pad_token_id=0,
        )
    ).save_pretrained(out)
    return str(out)


def test_qa_backend_feeds_the_3_2_pairs_whatever_the_batching(tiny_albert_ref):
    from q2_metric.models.hf_qa import HFQuestionAnswerer

    cases = EXPECTED["pairs"]
    questions, texts = [c["question"] for c in cases], [c["text"] for c in cases]
    answers = {}
    for packing, batch in (("on", 7), ("off", 3), ("off", 64)):
        qa = HFQuestionAnswerer(
            Q2Config(qa_model=tiny_albert_ref, device="cpu", qa_packing=packing, qa_batch_size=batch)
        )
        assert qa.tokenization == "ref32"
        features, examples, _ = qa.features(questions, texts)
        assert examples == list(range(len(cases)))
        assert [f["input_ids"] for f in features] == [c["input_ids"] for c in cases]
        assert [f["token_type_ids"] for f in features] == [c["token_type_ids"] for c in cases]
        answers[packing, batch] = [a.text for a in qa.answer(questions, texts)]
    assert answers["on", 7] == answers["off", 3] == answers["off", 64]
    best_span = HFQuestionAnswerer(Q2Config(qa_model=tiny_albert_ref, device="cpu", qa_decoding="best_span"))
    assert best_span.tokenization == "hf"  # it cuts answers by character offsets: transformers' tokenizer


def test_signature_names_the_path_without_loading(tiny_albert_ref, tiny_models):
    from q2_metric.models.paper.reference_tokenization import tokenization_path
    from q2_metric.scorer import Q2Scorer

    assert tokenization_path(str(DATA / "t5"), "qg") == "ref32+xbias"
    assert tokenization_path(tiny_albert_ref, "qa") == "ref32"
    assert tokenization_path(tiny_albert_ref, "qa", qa_decoding="best_span") == "hf"
    assert tokenization_path(tiny_models["qg"], "qg") == "hf"
    scorer = Q2Scorer(
        Q2Config(
            qg_model=str(DATA / "t5"), qa_model=tiny_albert_ref, nli_model=tiny_models["nli"], device="cpu"
        )
    )
    assert scorer.signature().to_dict()["tok"] == "ref32+xbias/ref32/hf"


def test_a_text_read_again_is_tokenized_once_with_the_same_ids(albert_dir, monkeypatch):
    from q2_metric.models.paper import reference_tokenization as rt

    memo = load_reference_tokenizer(albert_dir)
    seen: list[str] = []
    encode = rt.ReferenceTokenizer.encode

    def counting(self, text):
        seen.append(text)
        return encode(self, text)

    monkeypatch.setattr(rt.ReferenceTokenizer, "encode", counting)
    for _ in range(3):  # each text read three times: the ids 3.2 gave each time, its tokens computed once
        for case in EXPECTED["pairs"]:
            ((ids, types),) = memo.pair_windows(case["question"], case["text"], window=512, stride=128)
            assert (ids, types) == (case["input_ids"], case["token_type_ids"])
    texts = {case["text"] for case in EXPECTED["pairs"]}
    assert all(seen.count(t) == 1 for t in texts)
    monkeypatch.setattr(rt, "TEXT_MEMO", 2)
    for n in range(5):
        memo.encode_text(f"text {n}")
    assert len(memo._texts) == 2  # bounded
