"""`reference` QA decoding on a tiny ALBERT whose SentencePiece tokenizer is trained here
(lower-casing and accent-stripping like the paper's ALBERT), loaded through the real backend."""

from __future__ import annotations

import csv

import pytest
import torch
from support.data import ANNOTATED

from q2_metric.components import ParsedText
from q2_metric.config import Q2Config
from q2_metric.models.hf_qa import HFQuestionAnswerer
from q2_metric.results import NO_MATCH, VALID
from q2_metric.scorer import Q2Scorer
from q2_metric.testing.scripted import ScriptedNLI, ScriptedParser, ScriptedQG


def annotated(n: int) -> list[tuple[str, str]]:
    with open(ANNOTATED / "dodeca_consistent.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:n]
    pairs = []
    for r in rows:
        word = r["response"].split()[0]
        pairs += [(f"what is {word}?", r["response"]), (f"who said {word}?", r["knowledge"])]
    return pairs


@pytest.fixture(scope="module")
def tiny_albert(tmp_path_factory) -> str:
    import sentencepiece as spm
    from transformers import AlbertConfig, AlbertForQuestionAnswering, AlbertTokenizer

    out = tmp_path_factory.mktemp("albert")
    texts = [t for pair in annotated(150) for t in pair] + ["Pokémon is a franchise.", "What is a franchise?"]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(out / "spm"),
        vocab_size=600,
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        pad_piece="<pad>",
        unk_piece="<unk>",
        bos_piece="[CLS]",
        eos_piece="[SEP]",
        user_defined_symbols=["[MASK]"],
        normalization_rule_name="nmt_nfkc_cf",
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_file=str(out / "spm.model"))
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tokenizer = AlbertTokenizer(vocab=vocab, do_lower_case=True, keep_accents=False)
    torch.manual_seed(0)
    model = AlbertForQuestionAnswering(
        AlbertConfig(
            vocab_size=len(vocab),
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=512,
            pad_token_id=0,
        )
    )
    model.save_pretrained(out / "qa")
    tokenizer.save_pretrained(out / "qa")
    return str(out / "qa")


def plain_reference(tokenizer, model, question: str, text: str) -> str:
    """The released code's get_answer, one example at a time. Under the transformers it ran on
    (3.x/4.x) `encode_plus` returned ALBERT's segment ids (0 for the question, 1 for the text);
    transformers 5 no longer does unless asked, so they are asked for here."""
    inputs = tokenizer(
        question, text, add_special_tokens=True, return_tensors="pt", return_token_type_ids=True
    )
    assert inputs["token_type_ids"][0, -1] == 1
    ids = inputs["input_ids"].tolist()[0]
    with torch.no_grad():
        out = model(**inputs)
    start = torch.argmax(out.start_logits)
    end = torch.argmax(out.end_logits) + 1
    return tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens(ids[start:end]))


@pytest.mark.parametrize("packing", ["on", "off"])
def test_reference_decoding_equals_plain_per_example_computation(tiny_albert, packing):
    qa = HFQuestionAnswerer(Q2Config(qa_model=tiny_albert, device="cpu", qa_batch_size=7, qa_packing=packing))
    assert qa.packs() == (packing == "on")
    pairs = annotated(40)
    answers = qa.answer([q for q, _ in pairs], [t for _, t in pairs])
    # the released code's model as transformers loads it (gelu_new unfused, one pair per call)
    from transformers import AlbertForQuestionAnswering

    plain = AlbertForQuestionAnswering.from_pretrained(tiny_albert).eval()
    assert (
        type(plain.albert.encoder.albert_layer_groups[0].albert_layers[0].activation).__name__
        == "NewGELUActivation"
    )
    assert isinstance(
        qa.model.albert.encoder.albert_layer_groups[0].albert_layers[0].activation, torch.nn.GELU
    )
    expected = [plain_reference(qa.tokenizer, plain, q, t) for q, t in pairs]
    got = [a.text if a.has_answer else qa.cls_text for a in answers]
    assert got == expected
    # random weights give the empty answer (end before start), spans, and question tokens
    assert "" in got and any(g not in ("", "[CLS]") for g in got)


def test_packed_rows_compute_what_each_pair_computes_alone(tiny_albert):
    """Packing changes only the batch layout: every pair's logits equal its logits alone."""
    qa = HFQuestionAnswerer(Q2Config(qa_model=tiny_albert, device="cpu"))
    assert qa.packs()  # auto, on a CPU, for ALBERT
    pairs = annotated(30)
    enc = qa.tokenizer([q for q, _ in pairs], [t for _, t in pairs], return_token_type_ids=True)
    features = [
        {k: enc[k][i] for k in ("input_ids", "attention_mask", "token_type_ids")} for i in range(len(pairs))
    ]
    lengths = [len(f["input_ids"]) for f in features]
    rows = [[0, 1, 2], [3], [4, 5]]
    packed = qa._packed_logits(features, rows)
    assert sorted(packed) == [0, 1, 2, 3, 4, 5]
    for i in range(6):
        alone = qa._logits([features[i]])[0]
        assert len(packed[i][0]) == lengths[i]
        torch.testing.assert_close(
            torch.from_numpy(packed[i][0]), torch.from_numpy(alone[0]), rtol=1e-4, atol=1e-5
        )
        torch.testing.assert_close(
            torch.from_numpy(packed[i][1]), torch.from_numpy(alone[1]), rtol=1e-4, atol=1e-5
        )
    # the whole call: rows under the token budget and the batch size, padding only at row ends
    qa.tokens_processed = 0
    qa._all_logits(features)
    assert sum(lengths) <= qa.tokens_processed < sum(lengths) + 256 * 2


def test_fused_tanh_gelu_is_gelu_new_to_float_rounding(tiny_albert):
    from transformers import AlbertForQuestionAnswering

    from q2_metric.models.loading import fuse_tanh_gelu

    plain = AlbertForQuestionAnswering.from_pretrained(tiny_albert).eval()
    fused = AlbertForQuestionAnswering.from_pretrained(tiny_albert).eval()
    assert fuse_tanh_gelu(fused) == 1 and fuse_tanh_gelu(fused) == 0  # ALBERT shares its one layer
    ids = torch.randint(5, 500, (4, 60))
    with torch.no_grad():
        a, b = plain(input_ids=ids), fused(input_ids=ids)
    torch.testing.assert_close(a.start_logits, b.start_logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(a.end_logits, b.end_logits, rtol=1e-5, atol=1e-5)


def test_packing_on_needs_a_packable_model(tiny_albert):
    qa = HFQuestionAnswerer(Q2Config(qa_model=tiny_albert, device="cpu", qa_packing="on"))
    qa.model = SpanModel(qa.model, [])
    with pytest.raises(ValueError, match="qa_packing='on' needs a QA model of type albert, bert, electra"):
        qa.packs()


def test_cls_string_is_no_answer(tiny_albert):
    qa = HFQuestionAnswerer(Q2Config(qa_model=tiny_albert, device="cpu"))
    qa.model = SpanModel(qa.model, [], at_cls=True)
    (answer,) = qa.answer(["what is it?"], ["gardening is relaxing."])
    assert qa.cls_text == "[CLS]" and not answer.has_answer


def test_tokenizer_normalises_like_the_papers_albert(tiny_albert):
    qa = HFQuestionAnswerer(Q2Config(qa_model=tiny_albert, device="cpu"))
    ids = qa.tokenizer("Pokémon", add_special_tokens=False)["input_ids"]
    assert qa.tokenizer.convert_tokens_to_string(qa.tokenizer.convert_ids_to_tokens(ids)) == "pokemon"


class SpanModel(torch.nn.Module):
    """Points start and end at the text's first word ("Pokémon"), whatever the weights say."""

    def __init__(self, model, first_word_ids: list[int], at_cls: bool = False) -> None:
        super().__init__()
        self.model, self.word, self.at_cls = model, first_word_ids, at_cls

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        start = torch.zeros(input_ids.shape)
        end = torch.zeros(input_ids.shape)
        for i, row in enumerate(input_ids.tolist()):
            if self.at_cls:
                start[i, 0] = end[i, 0] = 10.0
                continue
            first = row.index(3) + 1  # after the first [SEP]
            start[i, first] = 10.0
            end[i, first + len(self.word) - 1] = 10.0
        return type("Out", (), {"start_logits": start, "end_logits": end})()


@pytest.mark.parametrize("decoding, status", [("reference", NO_MATCH), ("best_span", VALID)])
def test_accented_candidate_fails_the_filter_under_reference_decoding(tiny_albert, decoding, status):
    response = "Pokémon is a franchise."
    config = Q2Config(qa_model=tiny_albert, device="cpu", qa_decoding=decoding)
    qa = HFQuestionAnswerer(config)
    qa.model = SpanModel(qa.model, qa.tokenizer("Pokémon", add_special_tokens=False)["input_ids"])
    scorer = Q2Scorer(
        config,
        parser=ScriptedParser({response: ParsedText(entities=["Pokémon"])}),
        qg=ScriptedQG({("Pokémon", response): ["What is a franchise?"]}),
        qa=qa,
        nli=ScriptedNLI(),
    )
    trace = scorer.score([response], ["Pokémon is a media franchise."]).responses[0].questions[0]
    assert trace.response_answer == ("pokemon" if decoding == "reference" else "Pokémon")
    assert trace.status == status
