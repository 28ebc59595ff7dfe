"""Records the expected values of tests/unit/models/paper/test_reference_tokenization.py from transformers 3.2.0.

Run with the conformance environment's Python (benchmarks/conformance.py builds it):
    .conformance/venv/bin/python tests/data/ref32/record.py
It trains two small SentencePiece models the way the paper's were (T5: unigram, <pad>/</s>/<unk>;
ALBERT: [CLS]/[SEP]/[MASK] control symbols and ALBERT's user-defined symbols, lower-cased text),
saves them with 3.2's T5Tokenizer / AlbertTokenizer (t5/, albert/), loads them back with
from_pretrained as the released code did, and writes what 3.2 gives for each string (expected.json).
It also saves a tiny random T5 with 3.2 (t5/, so it carries the cross-attention bias) and records
its logits and greedy output (expected.json "t5_model").
"""

import json
import sys
from pathlib import Path

import sentencepiece as spm
import torch
from transformers import AlbertTokenizer, T5Config, T5ForConditionalGeneration, T5Tokenizer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))
from conformance import ALBERT_SYMBOLS, TORTURE  # noqa: E402  (stdlib-only module top)

STRINGS = [t for pair in TORTURE[:-1] for t in pair] + [
    "sub-categories",
    "well , there are three categories of finance : public , corporate .",
    "It aired in the US , Canada and Latin America",
    "1990,",
    "in 1990, 2000,and 3,000",
    "`` quoted '' text",
    "Café Zoë naïve",
    "  leading and trailing  ",
    "",
    " ",
    "\t\n",
    "question: what is it ?",
    "what 's the deal with ' quotes ' ?",
    "£ 5 , € 4 – 3",
    "<pad>",
    "x </s> y",
    "[CLS] a [SEP] b [MASK]",
    "<extra_id_0> z <extra_id_99>",
    'He said "no" (twice).',
    "ID-12,34 and 5,6,7,",
    "Ünïcödé ÀÉÎÕÜ",
    "emoji 😀👍 and 中文 text",
]
QUESTIONS = ["what is it ?", "who created pokémon ?", "how much , 1990, ?", "", "which ``one'' ?"]


def main() -> None:
    texts = STRINGS * 3 + [t for pair in TORTURE for t in pair]
    common = dict(
        vocab_size=600,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
        seed_sentencepiece_size=100000,
        shuffle_input_sentence=False,
    )
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix="/tmp/ref32_t5",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        pad_piece="<pad>",
        eos_piece="</s>",
        unk_piece="<unk>",
        **common,
    )
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([t.lower() for t in texts]),
        model_prefix="/tmp/ref32_albert",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        pad_piece="<pad>",
        unk_piece="<unk>",
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=ALBERT_SYMBOLS,
        character_coverage=0.99995,
        **common,
    )
    T5Tokenizer("/tmp/ref32_t5.model").save_pretrained(str(HERE / "t5"))
    AlbertTokenizer("/tmp/ref32_albert.model").save_pretrained(str(HERE / "albert"))
    t5 = T5Tokenizer.from_pretrained(str(HERE / "t5"))
    albert = AlbertTokenizer.from_pretrained(str(HERE / "albert"))

    expected = {"t5": [], "albert": [], "pairs": []}
    for s in STRINGS:
        prompt = f"answer: {s[:12]}  context: {s} </s>"
        ids = t5([prompt])["input_ids"][0]
        expected["t5"].append(
            {
                "text": prompt,
                "ids": ids,
                "decoded": t5.decode(ids, skip_special_tokens=True),
                "plain_ids": t5(s)["input_ids"],
            }
        )
        a_ids = albert.encode(s, add_special_tokens=False)
        expected["albert"].append(
            {
                "text": s,
                "ids": a_ids,
                "string": albert.convert_tokens_to_string(albert.convert_ids_to_tokens(a_ids)),
            }
        )
    for q in QUESTIONS:
        for s in STRINGS[:12]:
            enc = albert.encode_plus(q, s, add_special_tokens=True)
            expected["pairs"].append(
                {
                    "question": q,
                    "text": s,
                    "input_ids": enc["input_ids"],
                    "token_type_ids": enc["token_type_ids"],
                }
            )

    # a tiny T5 saved by 3.2: it carries decoder.block.0.layer.1.EncDecAttention.relative_attention_bias
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(
        T5Config(
            vocab_size=t5.vocab_size,
            d_model=16,
            d_kv=4,
            d_ff=32,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=2,
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
        )
    ).eval()
    model.save_pretrained(str(HERE / "t5"))
    ids = torch.tensor([expected["t5"][0]["ids"]])
    decoder = torch.tensor([[0, 5, 9, 17, 3, 44]])
    with torch.no_grad():
        logits = model(input_ids=ids, decoder_input_ids=decoder, return_dict=False)[0]
        greedy = model.generate(input_ids=ids, max_length=10)
        beam = model.generate(input_ids=ids, max_length=10, num_beams=3, num_return_sequences=3)
    expected["t5_model"] = {
        "input_ids": ids[0].tolist(),
        "decoder_input_ids": decoder[0].tolist(),
        "logits": logits[0].tolist(),
        "greedy": greedy[0].tolist(),
        "beam": beam.tolist(),
    }
    (HERE / "expected.json").write_text(json.dumps(expected, ensure_ascii=False))
    print(len(expected["t5"]), len(expected["pairs"]))


if __name__ == "__main__":
    main()
