"""Randomly initialised QG/QA/NLI models with a tokenizer made from the given texts, saved with
`save_pretrained` so they load through the same `from_pretrained` code as the paper's models.

Used by the tests (`size="tiny"`) and by the speed benchmark when the paper's weights are not
available (`size="paper"`: T5-base, ALBERT-xlarge and RoBERTa-large shapes, so compute is realistic,
left fully random). Their scores mean nothing.

Fully random small models score every reply the same: the QA model's independent start/end
argmaxes land anywhere (question tokens included), so no question is ever valid (its answer is never
the candidate), every response falls back to end-to-end NLI, and the random classifier gives one
label whatever the text. The tiny size (`size="tiny"`) is built so that scores depend on the text,
deterministically, through the real backends and the released decoding rules:

- Tokenizer (`word_tokenizer`, every size): every word of the given texts is one token, with fixed
  sorted ids, so every build of a size from the same texts is the same bytes (a trained WordPiece
  tokenizer breaks ties differently from run to run, and random paper-shape models built on it
  generated other questions in every process).
- QG (`quiet_personal_words`): random, except that I/you/my/your are never generated (otherwise the
  personal filter drops most questions before they are asked).
- QA (`lexical_qa`): every layer passes its input through unchanged (attention and feed-forward
  weights zeroed; the embeddings are built so that every LayerNorm is exact), so a position's
  logits are a sum of three terms: the token's lexical score (a seeded draw in [-1, 1] for a content
  word, [0, 1] for a pronoun (`PRONOUNS`, answer candidates in most responses), -2 for function
  words, word pieces, punctuation and special tokens), a seeded random term of the position (weight
  `POSITION_WEIGHT`; the end logit has a second one, `END_WEIGHT`), and +BONUS/2 in the text,
  -BONUS/2 in the question. The answer is therefore a word of the text (sometimes a few words:
  start and end may differ), which one depending on the text and, through positions, on the
  question's length; the CLS position scores `NULL_SCORE + BONUS/2`, so "no answer" comes when no
  word of the text outscores it. On the response, the answer is the candidate for some questions
  (valid) and not for others; on the knowledge it is the same word, another one (NLI decides) or
  "no answer".
- NLI (`bag_of_words_nli`): the first layer's attention is uniform (query and key zeroed), so the
  classification token reads the mean embedding of the content words of the whole pair; the label
  is a fixed random linear function (after a tanh) of that mean's direction: a seeded bag-of-words
  classifier giving each of the three labels to some pairs.

On the bundled sample (40 rows) the tiny models give 0 (22 responses), 0.5 (4), 2/3 (1) and 1 (13):
21 responses through valid questions (answered the same way, entailed, contradicted, token F1 with
neutral NLI, unanswered by the knowledge) and 19 through the fallback with each of the three labels
(`tests/unit/models/test_tiny_builder.py`). The QA and NLI draws use their own seeded streams
(`[seed, 1]`, `[seed, 3]`), picked so that the sample shows every path.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "</s>"]
NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}  # deliberately not the usual order

SIZES = {
    "tiny": {
        "t5": dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4),
        "albert": dict(
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
        ),
        "roberta": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    },
    "paper": {  # t5-base, albert-xlarge-v2, roberta-large
        "t5": dict(d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_decoder_layers=12, num_heads=12),
        "albert": dict(
            embedding_size=128,
            hidden_size=2048,
            num_hidden_layers=24,
            num_attention_heads=16,
            intermediate_size=8192,
        ),
        "roberta": dict(
            hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
        ),
    },
}


def _bert_style(tok: Any) -> Any:  # a tokenizers Tokenizer
    """`tok` (a `tokenizers.Tokenizer` with a WordPiece model) lower-casing, BERT-style pair
    templates, wrapped for transformers."""
    from tokenizers import decoders, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        eos_token="</s>",
        model_max_length=512,
    )


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2000) -> Any:  # a PreTrainedTokenizerFast
    """A lower-casing WordPiece tokenizer trained on `texts`, with BERT-style pair templates."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(
        list(texts), trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL)
    )
    return _bert_style(tok)


def word_tokenizer(texts: Iterable[str]) -> Any:  # a PreTrainedTokenizerFast
    """A lower-casing WordPiece tokenizer whose vocabulary is every word of `texts` and every single
    character (alone and as a `##` piece, so that any other word is spelled out), in sorted order:
    the same ids on every build (the trainer of `train_tokenizer` breaks ties differently from run
    to run), and every word of the sample one token."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    normalizer, splitter = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    words = {w for text in texts for w, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text))}
    chars = {c for w in words for c in w}
    pieces = sorted(chars) + sorted(f"##{c}" for c in chars) + sorted(words - chars)
    vocab = {token: i for i, token in enumerate(SPECIAL + [p for p in pieces if p not in SPECIAL])}
    return _bert_style(Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)))


# Lexical QA (`lexical_qa`): the text's bonus over the question, the "no answer" threshold, the
# weights of the position terms (start and end; end only), the norms of an embedding's token and
# position parts.
BONUS, NULL_SCORE, POSITION_WEIGHT, END_WEIGHT, TOKEN_NORM, POSITION_NORM = 4.0, 0.5, 2.0, 0.5, 8.0, 2.0
# Function words: never an answer while the text holds another word, and no weight in the NLI.
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "into",
        "about",
        "than",
        "then",
        "so",
        "too",
        "very",
        "not",
        "no",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "having",
        "will",
        "would",
        "can",
        "could",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "also",
        "just",
        "only",
        "more",
        "most",
        "such",
        "some",
        "any",
        "each",
        "all",
        "both",
        "its",
    ]
)

# Answer candidates in most responses (noun chunks), rarely in the knowledge: they score higher.
PRONOUNS = frozenset(["it", "they", "he", "she", "him", "her", "them", "we", "us"])


def content_tokens(tokenizer: Any) -> np.ndarray:
    """Per vocabulary id: a whole word (letters or digits), not a function word nor a special token."""
    import numpy as np

    special = set(tokenizer.all_special_tokens)
    return np.array(
        [
            t.isalnum() and t not in FUNCTION_WORDS and t not in special
            for t in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        ]
    )


def _zero_mean_units(rng: np.random.Generator, rows: int, width: int) -> np.ndarray:
    """`rows` random unit vectors of `width` dims, each with mean 0."""
    import numpy as np

    x = rng.standard_normal((rows, width))
    x -= x.mean(axis=1, keepdims=True)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def quiet_personal_words(model: Any, tokenizer: Any) -> None:
    """Zero the (tied input and output) embeddings of I/you/my/your in a random T5: their logits are
    then 0, never among the best, so the personal filter does not drop most random questions."""
    import torch

    ids = tokenizer.convert_tokens_to_ids(["i", "you", "my", "your"])
    with torch.no_grad():
        model.shared.weight[[i for i in ids if i != tokenizer.unk_token_id]] = 0.0


def lexical_qa(model: Any, tokenizer: Any, rng: np.random.Generator) -> None:
    """Set an ALBERT QA model's weights so that its logits at a position are
    `score(token) + POSITION_WEIGHT * x(position) + BONUS/2` (start) and the same
    `+ END_WEIGHT * y(position)` (end) in the text, each `- BONUS/2` in the question, and exactly
    `NULL_SCORE + BONUS/2` at the CLS position. `score` is a seeded draw in [-1, 1] for a content
    word (`content_tokens`), in [0, 1] for a pronoun, -2 for any other token; (x, y, z) a seeded
    random unit vector per position (see the module docstring).

    How: an embedding sum has three zero-mean blocks of fixed norms: the token's (its component along
    the direction `d` is the score), the position's (its unit vector, each coordinate along its own
    pair of dims) and the segment's (+-(1, -1)); so the embedding LayerNorm divides every sum by the
    same number, the projection to the hidden size as (u, -u) stays normalised, every layer (weights
    zeroed) leaves it as it is, and the output layer reads `d`, the position's x and y and the segment."""
    import numpy as np
    import torch

    emb, hidden = model.config.embedding_size, model.config.hidden_size
    vocab, positions = len(tokenizer), model.config.max_position_embeddings
    scores = np.where(content_tokens(tokenizer), rng.uniform(-1.0, 1.0, size=vocab), -2.0)
    pronouns = [i for i, t in enumerate(tokenizer.convert_ids_to_tokens(list(range(vocab)))) if t in PRONOUNS]
    scores[pronouns] = (scores[pronouns] + 1.0) / 2  # in [0, 1]: answers more often
    scores[tokenizer.cls_token_id] = NULL_SCORE + BONUS  # in the question segment: - BONUS/2
    # each position a random unit 3-vector (x, y, z); the CLS position (0, 0, 1): no position term
    where = rng.standard_normal((positions, 3))
    where /= np.linalg.norm(where, axis=1, keepdims=True)
    where[0] = (0.0, 0.0, 1.0)
    tok, pos, seg = slice(0, 8), slice(8, 14), slice(emb - 2, emb)  # blocks of the embedding dims
    pair = np.array([1.0, -1.0]) / np.sqrt(2)  # a zero-mean unit direction of two dims
    d = np.zeros(8)
    d[:2] = pair
    rest = _zero_mean_units(rng, vocab, 6)  # the token part's other component, in dims 2-7
    words = np.zeros((vocab, emb))
    words[:, tok] = scores[:, None] * d
    words[:, 2:8] = np.sqrt(TOKEN_NORM**2 - scores[:, None] ** 2) * rest
    places = np.zeros((positions, emb))
    places[:, pos] = POSITION_NORM * np.kron(where, pair)  # x, y, z each along its own pair of dims
    segments = np.zeros((2, emb))
    segments[0, seg], segments[1, seg] = (1.0, -1.0), (-1.0, 1.0)
    # the embedding LayerNorm divides every sum by this (its norm over the square root of its width)
    scale = np.sqrt(TOKEN_NORM**2 + POSITION_NORM**2 + 2) / np.sqrt(emb)
    start, end = np.zeros(hidden), np.zeros(hidden)
    for readout, position_weights in (
        (start, (POSITION_WEIGHT, 0.0, 0.0)),
        (end, (POSITION_WEIGHT, END_WEIGHT, 0.0)),
    ):
        readout[tok] = d * scale
        readout[pos] = np.kron(np.array(position_weights), pair) * scale / POSITION_NORM
        readout[seg] = np.array([-1.0, 1.0]) * scale * BONUS / 4  # text +BONUS/2, question -BONUS/2

    with torch.no_grad():
        for name, param in model.named_parameters():
            param.zero_()
            if name.endswith("weight") and name.split(".")[-2] in ("LayerNorm", "full_layer_layer_norm"):
                param.fill_(1.0)
        a = model.albert
        a.embeddings.word_embeddings.weight.copy_(torch.tensor(words))
        a.embeddings.position_embeddings.weight.copy_(torch.tensor(places))
        a.embeddings.token_type_embeddings.weight.copy_(torch.tensor(segments))
        a.encoder.embedding_hidden_mapping_in.weight.copy_(
            torch.tensor(np.vstack([np.eye(emb), -np.eye(emb)]))
        )
        model.qa_outputs.weight.copy_(torch.tensor(np.vstack([start, end])))


def bag_of_words_nli(model: Any, tokenizer: Any, rng: np.random.Generator) -> None:
    """Set a RoBERTa classifier's weights so that its label is a fixed random function of the mean
    embedding of the content words (`content_tokens`) of the whole (premise, hypothesis) pair: other
    tokens embed to zero, the first layer's attention is uniform (query and key zeroed) and adds the
    mean to the classification token (itself zero), the other weights pass it on unchanged, and the
    head reads its direction through a random projection (see the module docstring)."""
    import numpy as np
    import torch

    hidden = model.config.hidden_size
    words = _zero_mean_units(rng, len(tokenizer), hidden) * np.sqrt(hidden)  # LayerNorm leaves them
    words[~content_tokens(tokenizer)] = 0.0
    out = rng.standard_normal((model.config.num_labels, hidden))
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.zero_()
            if name.endswith("weight") and name.split(".")[-2] == "LayerNorm":
                param.fill_(1.0)
        model.roberta.embeddings.word_embeddings.weight.copy_(torch.tensor(words))
        first = model.roberta.encoder.layer[0].attention
        first.self.value.weight.copy_(torch.eye(hidden))  # uniform attention: the mean of the values
        first.output.dense.weight.copy_(torch.eye(hidden))
        model.classifier.dense.weight.copy_(torch.eye(hidden))
        model.classifier.out_proj.weight.copy_(torch.tensor(out))


def build_tiny_models(
    out_dir: str | Path, texts: Iterable[str], size: str = "tiny", seed: int = 0
) -> dict[str, str]:
    """Write qg/, qa/ and nli/ model directories under `out_dir`; return their paths."""
    import torch
    from transformers import (
        AlbertConfig,
        AlbertForQuestionAnswering,
        RobertaConfig,
        RobertaForSequenceClassification,
        T5Config,
        T5ForConditionalGeneration,
    )

    torch.manual_seed(seed)
    shapes = SIZES[size]
    # every size: a fixed word vocabulary, the same ids every build (`word_tokenizer`)
    tokenizer = word_tokenizer(texts)
    vocab, pad, eos = len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id
    out = Path(out_dir)
    models = {
        "qg": T5ForConditionalGeneration(
            T5Config(
                vocab_size=vocab,
                pad_token_id=pad,
                eos_token_id=eos,
                decoder_start_token_id=pad,
                **shapes["t5"],
            )
        ),
        "qa": AlbertForQuestionAnswering(
            AlbertConfig(vocab_size=vocab, pad_token_id=pad, max_position_embeddings=512, **shapes["albert"])
        ),
        "nli": RobertaForSequenceClassification(
            RobertaConfig(
                vocab_size=vocab,
                pad_token_id=pad,
                max_position_embeddings=514,
                type_vocab_size=2,
                num_labels=3,
                id2label=NLI_LABELS,
                label2id={v: k for k, v in NLI_LABELS.items()},
                **shapes["roberta"],
            )
        ),
    }
    if size == "tiny":  # scores that vary with the text (module docstring); the paper shapes stay random
        import numpy as np

        quiet_personal_words(models["qg"], tokenizer)
        lexical_qa(models["qa"], tokenizer, np.random.default_rng([seed, 1]))
        bag_of_words_nli(models["nli"], tokenizer, np.random.default_rng([seed, 3]))
    paths = {}
    for name, model in models.items():
        path = out / name
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[name] = str(path)
    return paths
