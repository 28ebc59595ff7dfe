"""Randomly initialised QG/QA/NLI models with a locally trained tokenizer, saved with
`save_pretrained` so they load through the same `from_pretrained` code as the paper's models.

Used by the tests (`size="tiny"`) and by the speed benchmark when the paper's weights are not
available (`size="paper"`: T5-base, ALBERT-xlarge and RoBERTa-large shapes, so compute is realistic).
Their scores mean nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "</s>"]
NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}  # deliberately not the usual order

SIZES = {
    "tiny": {
        "t5": dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4),
        "albert": dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64),
        "roberta": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    },
    "paper": {  # t5-base, albert-xlarge-v2, roberta-large
        "t5": dict(d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_decoder_layers=12, num_heads=12),
        "albert": dict(embedding_size=128, hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                       intermediate_size=8192),
        "roberta": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096),
    },
}


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2000):
    """A lower-casing WordPiece tokenizer trained on `texts`, with BERT-style pair templates."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(list(texts), trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", eos_token="</s>", model_max_length=512,
    )


def build_random_models(out_dir: str | Path, texts: Iterable[str], size: str = "tiny",
                        seed: int = 0, vocab_size: int = 2000) -> dict[str, str]:
    """Write qg/, qa/ and nli/ model directories under `out_dir`; return their paths."""
    import torch
    from transformers import (AlbertConfig, AlbertForQuestionAnswering, RobertaConfig,
                              RobertaForSequenceClassification, T5Config, T5ForConditionalGeneration)

    torch.manual_seed(seed)
    shapes = SIZES[size]
    tokenizer = train_tokenizer(texts, vocab_size)
    vocab, pad, eos = len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id
    out = Path(out_dir)
    models = {
        "qg": T5ForConditionalGeneration(T5Config(vocab_size=vocab, pad_token_id=pad, eos_token_id=eos,
                                                  decoder_start_token_id=pad, **shapes["t5"])),
        "qa": AlbertForQuestionAnswering(AlbertConfig(vocab_size=vocab, pad_token_id=pad,
                                                      max_position_embeddings=512, **shapes["albert"])),
        "nli": RobertaForSequenceClassification(RobertaConfig(
            vocab_size=vocab, pad_token_id=pad, max_position_embeddings=514, type_vocab_size=2,
            num_labels=3, id2label=NLI_LABELS, label2id={v: k for k, v in NLI_LABELS.items()},
            **shapes["roberta"])),
    }
    paths = {}
    for name, model in models.items():
        path = out / name
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[name] = str(path)
    return paths
