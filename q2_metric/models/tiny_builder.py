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
- QG (`chain_qg`): a question is a walk along a cycle of 28 question words (never I/you/my/your,
  which the personal filter drops), from a word picked by the answer's most salient word to the
  next of the cycle's end states; the other beams deviate by designed costs. Every step's logits
  are a table row, exact up to rounding, and the table's gaps are wide, so no CPU's or GPU's
  rounding flips a beam decision (unlike a random T5's, whose top candidates crowd together).
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

On the bundled sample (40 rows) the tiny models give 0 (22 responses), 0.2 (1), 0.5 (4) and 1 (13):
28 responses through valid questions (answered the same way, entailed, contradicted, token F1 with
neutral NLI, unanswered by the knowledge) and 12 through the fallback with each of the three labels
(`tests/unit/models/test_tiny_builder.py`). The QG, QA and NLI draws use their own seeded streams
(`[seed, 2]`, `[seed, 1]`, `[seed, 3]`); the QA and NLI ones were picked so that the sample shows
every path.
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
        "t5": dict(d_model=64, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4),
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


# Chain QG (`chain_qg`): question words (states), one question ending every PERIOD-th state; a
# deviation's cost (rank r > 0: COST * RATIO**(r - 1) * (1 + SPREAD * u), u a state's draw in
# [0, 1)); every other token's logit; the table's seed (picked by search, see `chain_qg`).
CHAIN, PERIOD, COST, RATIO, SPREAD, FLOOR, TABLE_SEED = 28, 6, 20.0, 1.5, 1.0, 3000.0, 201
# the attention's sharpness: the start step's salience, later steps' sink, the answer-slot flag
SHARP, SINK, FLAG, FLAG_BIAS = 2e4, 200.0, 30.0, 60.0
PERSONAL = frozenset(["i", "you", "my", "your"])  # the personal filter drops questions with them


def question_words(tokenizer: Any) -> list[int]:
    """The ids the designed QG may ask (`chain_qg`): content words (`content_tokens`), never I/you/my/your."""
    import numpy as np

    names = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    return [int(i) for i in np.flatnonzero(content_tokens(tokenizer)) if names[i] not in PERSONAL]


def chain_table(
    rng: np.random.Generator, states: int = CHAIN
) -> tuple[list[list[tuple[Any, float]]], set[int]]:
    """Per state of the cycle 0 -> 1 -> ... -> states - 1 -> 0: its ranked next tokens (a state, or
    "eos") with their logits (0 for the first, then -COST * RATIO**(r - 1) * (1 + SPREAD * u));
    and the states that end a question (their first candidate is "eos")."""
    ends = set(range(PERIOD - 1, states, PERIOD))
    u = rng.uniform(0.0, 1.0, states)
    table = []
    for j in range(states):
        nxt = (j + 1) % states
        others: list[Any] = [int(s) for s in rng.permutation(states) if s not in (j, nxt)]
        ranked = ["eos", nxt, *others[:8]] if j in ends else [nxt, *others[:2], "eos", *others[2:8]]
        table.append(
            [
                (s, 0.0 if r == 0 else -COST * RATIO ** (r - 1) * (1 + SPREAD * u[j]))
                for r, s in enumerate(ranked)
            ]
        )
    return table, ends


def chain_qg(model: Any, tokenizer: Any, rng: np.random.Generator) -> list[int]:
    """Set a T5's weights (tied embeddings, d_model >= 2 * CHAIN + 8) so that its beam decisions sit
    far from any tie: every step's logits are a table row (`chain_table`), exact up to rounding.

    - State: CHAIN question words. After word j the model asks the table's row j: the next word of
      the cycle (logit 0), or a deviation to another word or the end, by its cost; -FLOOR for any
      other token. So a question runs along the cycle to the next end state.
    - First word: the decoder's start step attends (sharply) to the input's most salient word, an
      answer word first. An encoder head flags positions 0-11 through the relative position bias
      (the prompt `[CLS] answer :` fills 0-6, so 7-11 hold the answer's first words), each word has
      a distinct salience (a seeded permutation), and the word's state (its own for a question word,
      a seeded opening state for any other) picks the first step's row. Later steps attend to
      [CLS] only, whose value is zero.
    - Exactness: the decoder's feed-forward replaces the word's embedding by its state's vector,
      whose product with every embedding is the row (one-hot products, all vectors of one norm), so
      kernels can only round, never reorder. The table's seed is the one of 400 whose searches,
      from every opening state at 16 and 128 tokens, keep the largest smallest relative gap between
      the scores any decision compares (6.2e-3; `benchmarks/experiments/chain_seeds.py`; on the sample,
      `tests/unit/models/test_tiny_margins.py`).

    Returns the question words' ids, state j's at `chain[j]`.
    """
    import numpy as np
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention

    cfg = model.config
    d, heads, dkv, states = cfg.d_model, cfg.num_heads, cfg.d_kv, CHAIN
    vocab = len(tokenizer)
    # dims: the state one-hot (input side, then the start step's), salience, [CLS], the start token,
    # a constant, the answer flag (and the state vectors' ballast), the norm ballast, "not a
    # question word", the end token
    here, first = np.arange(states), np.arange(states, 2 * states)
    sal_, sink_, start_, one_, ans_, bal_, other_, eos_ = range(2 * states, 2 * states + 8)
    special = set(tokenizer.all_special_ids)
    prompt = set(tokenizer("answer: context:", add_special_tokens=False).input_ids)
    words = question_words(tokenizer)
    chain = [int(t) for t in rng.choice(words, states, replace=False)]  # state j asks word chain[j]
    state_of = {t: j for j, t in enumerate(chain)}
    table, ends = chain_table(np.random.default_rng([TABLE_SEED]), states)
    opening = [j for j in range(states) if j not in ends]
    eligible = [i for i in words if i not in prompt and state_of.get(i, opening[0]) not in ends]
    salience = np.full(vocab, -5.0)
    salience[eligible] = rng.permutation(len(eligible)) / len(eligible)
    salience[tokenizer.convert_tokens_to_ids("##r")] = -2.5  # in every prompt: wins when no word is eligible

    emb = np.zeros((vocab, d))
    for i in range(vocab):
        if i not in special:
            emb[i, here[state_of.get(i, opening[rng.integers(len(opening))])]] = 1.0
    emb[:, sal_], emb[:, one_], emb[:, other_] = salience, 1.0, 1.0
    emb[tokenizer.cls_token_id, sink_] = 1.0
    emb[tokenizer.eos_token_id, eos_] = 1.0
    emb[chain + [tokenizer.eos_token_id], other_] = 0.0
    emb[:, bal_] = np.sqrt(d - (emb**2).sum(1))  # every embedding of norm sqrt(d)
    pad = tokenizer.pad_token_id  # the decoder's start token
    emb[pad] = 0.0
    emb[pad, start_], emb[pad, other_] = np.sqrt(d - 1), 1.0

    vectors = np.zeros((states, d))  # state j's vector: its product with an embedding is row j
    for j, row in enumerate(table):
        vectors[j, here] = -FLOOR
        for s, value in row:
            vectors[j, eos_ if s == "eos" else here[s]] = value
        vectors[j, other_] = -FLOOR
    norm = np.linalg.norm(vectors, axis=1).max() * 1.01
    vectors[:, ans_] = np.sqrt(norm**2 - (vectors**2).sum(1))

    with torch.no_grad():
        for name, param in model.named_parameters():
            param.zero_()
            if "layer_norm" in name:
                param.fill_(1.0)
        model.shared.weight.copy_(torch.tensor(emb))
        # logits = emb @ (x / rms(x) * weight) * d**-0.5 = emb @ x * norm / |x|: the row itself
        model.decoder.final_layer_norm.weight.fill_(norm)
        flag = model.encoder.block[0].layer[0].SelfAttention  # head 0: positions 0-11 read [CLS]
        flag.q.weight[0, one_], flag.k.weight[0, sink_], flag.v.weight[0, sink_] = FLAG, 1.0, 1.0
        flag.o.weight[ans_, 0] = 1.0
        buckets = T5Attention._relative_position_bucket(
            torch.arange(-11, -6),
            bidirectional=True,
            num_buckets=cfg.relative_attention_num_buckets,
            max_distance=cfg.relative_attention_max_distance,
        )
        flag.relative_attention_bias.weight[buckets.unique(), 0] = FLAG_BIAS
        cross = model.decoder.block[0].layer[1].EncDecAttention  # every head alike
        for h in range(heads):
            cross.q.weight[h * dkv, start_] = SHARP / np.sqrt(d)
            cross.q.weight[h * dkv + 1, here] = SINK
            cross.k.weight[h * dkv, sal_], cross.k.weight[h * dkv, ans_] = 1.0, 2.0
            cross.k.weight[h * dkv + 1, sink_] = 1.0
        ff = model.decoder.block[0].layer[2].DenseReluDense
        for j in range(states):
            cross.v.weight[j, here[j]] = cross.o.weight[first[j], j] = 1.0
            word = emb[chain[j]]
            ff.wi.weight[j, here[j]] = ff.wi.weight[states + j, first[j]] = 1.0
            ff.wo.weight[:, j] = torch.tensor(
                vectors[j] - word * np.sqrt((word**2).mean() + cfg.layer_norm_epsilon)
            )
            ff.wo.weight[:, states + j] = torch.tensor(vectors[j])
    return chain


def lexical_qa(
    model: Any, tokenizer: Any, rng: np.random.Generator, content: np.ndarray | None = None
) -> None:
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
    zeroed) leaves it as it is, and the output layer reads `d`, the position's x and y and the segment.
    `content`: which ids are content words (default `content_tokens`; the multilingual models pass
    `piece_content_tokens`)."""
    import numpy as np
    import torch

    emb, hidden = model.config.embedding_size, model.config.hidden_size
    vocab, positions = len(tokenizer), model.config.max_position_embeddings
    content = content_tokens(tokenizer) if content is None else content
    scores = np.where(content, rng.uniform(-1.0, 1.0, size=vocab), -2.0)
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


def bag_of_words_nli(
    model: Any, tokenizer: Any, rng: np.random.Generator, content: np.ndarray | None = None
) -> None:
    """Set a RoBERTa classifier's weights so that its label is a fixed random function of the mean
    embedding of the content words (`content_tokens`) of the whole (premise, hypothesis) pair: other
    tokens embed to zero, the first layer's attention is uniform (query and key zeroed) and adds the
    mean to the classification token (itself zero), the other weights pass it on unchanged, and the
    head reads its direction through a random projection (see the module docstring). `content`:
    which ids are content words (default `content_tokens`)."""
    import numpy as np
    import torch

    hidden = model.config.hidden_size
    words = _zero_mean_units(rng, len(tokenizer), hidden) * np.sqrt(hidden)  # LayerNorm leaves them
    words[~(content_tokens(tokenizer) if content is None else content)] = 0.0
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
    texts = list(texts)
    tokenizer = word_tokenizer(texts)
    missing = CHAIN - len(question_words(tokenizer))
    if missing > 0:  # the designed QG asks CHAIN distinct words: made-up ones pad a small vocabulary
        texts.append(" ".join(f"tinyq{i}" for i in range(missing)))
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

        chain_qg(models["qg"], tokenizer, np.random.default_rng([seed, 2]))
        lexical_qa(models["qa"], tokenizer, np.random.default_rng([seed, 1]))
        bag_of_words_nli(models["nli"], tokenizer, np.random.default_rng([seed, 3]))
    paths = {}
    for name, model in models.items():
        path = out / name
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[name] = str(path)
    return paths


# Tiny multilingual models (`build_tiny_multilingual_models`): a SentencePiece vocabulary trained
# on the bundled multi-script text, the QA and NLI designs above on it, a random T5 and a lexical
# token classifier.
MULTILINGUAL_TEXT = Path(__file__).resolve().parents[1] / "data" / "tiny_multilingual.txt"
MULTILINGUAL_SPECIAL = ["<pad>", "<unk>", "</s>", "<cls>", "<sep>", "<mask>"]
HIGHLIGHT = "<hl>"  # lmqg's answer marker: one token of the vocabulary
MULTILINGUAL_VOCAB = 1000  # at most: the trainer stops where the text runs out of pieces
NLI_LABELS_MULTILINGUAL = {0: "entailment", 1: "neutral", 2: "contradiction"}  # lower case, as mDeBERTa's
NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
# The lexical token classifier: a word's first piece is B-<type> below NER_BEGIN (a seeded draw),
# else O; the scale of the label logits.
NER_BEGIN, NER_SCALE = 0.4, 10.0
MULTILINGUAL_ROLES = ("qg", "qa", "nli", "ner")


def multilingual_texts(path: Path = MULTILINGUAL_TEXT) -> list[str]:
    """The lines of the bundled multi-script text (`#` lines are its header)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def sentencepiece_tokenizer(texts: Iterable[str], vocab_size: int = MULTILINGUAL_VOCAB) -> Any:
    """A `tokenizers.Tokenizer`: a SentencePiece unigram vocabulary trained on `texts` (one thread,
    no normalisation: the pieces are the text's own characters, so every offset is exact and every
    build the same bytes), every character of `texts` a piece, `<hl>` one token; Metaspace
    pre-tokenisation (a piece may start with "▁", a space). No post-processor (`_wrap` adds one)."""
    import io

    import sentencepiece as spm
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(texts)),
        model_writer=buffer,
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        model_type="unigram",
        character_coverage=1.0,
        normalization_rule_name="identity",
        num_threads=1,
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=2,
        user_defined_symbols=[*MULTILINGUAL_SPECIAL[3:], HIGHLIGHT],
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
    pieces = [(sp.id_to_piece(i), float(sp.get_score(i))) for i in range(sp.get_piece_size())]
    tok = Tokenizer(models.Unigram(pieces, unk_id=1, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in MULTILINGUAL_SPECIAL])
    tok.add_tokens([AddedToken(HIGHLIGHT, normalized=False)])
    return tok


def _wrap(tok: Any, role: str) -> Any:  # a PreTrainedTokenizerFast
    """`tok` (copied) with the role's templates: `text </s>` for the T5, `<cls> A <sep> B <sep>`
    (segments 0 and 1) for the encoders."""
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_str(tok.to_str())
    ids = {t: tok.token_to_id(t) for t in MULTILINGUAL_SPECIAL}
    if role == "qg":
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B:1 </s>:1", special_tokens=[("</s>", ids["</s>"])]
        )
    else:
        tok.post_processor = processors.TemplateProcessing(
            single="<cls> $A <sep>",
            pair="<cls> $A <sep> $B:1 <sep>:1",
            special_tokens=[("<cls>", ids["<cls>"]), ("<sep>", ids["<sep>"])],
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="</s>",
        **({} if role == "qg" else {"cls_token": "<cls>", "sep_token": "<sep>", "mask_token": "<mask>"}),
        model_max_length=512,
    )


def piece_content_tokens(tokenizer: Any) -> np.ndarray:
    """Per vocabulary id: a piece of letters or digits in any script (combining marks allowed; a
    leading "▁" ignored), not an English function word nor a special or added token."""
    import unicodedata

    import numpy as np

    special = set(tokenizer.all_special_tokens) | {HIGHLIGHT}

    def content(token: str) -> bool:
        word = token.lstrip("▁")
        return (
            token not in special
            and any(c.isalnum() for c in word)
            and all(c.isalnum() or unicodedata.category(c).startswith("M") for c in word)
            and word.lower() not in FUNCTION_WORDS
        )

    return np.array([content(t) for t in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))])


def _unspaced_char(char: str) -> bool:
    """A character of a script written without spaces (CJK ideographs, kana)."""
    import unicodedata

    return unicodedata.name(char, "").startswith(("CJK", "HIRAGANA", "KATAKANA"))


def lexical_ner(model: Any, tokenizer: Any, rng: np.random.Generator) -> None:
    """Set a RoBERTa token classifier's weights so that a token's label depends on the token alone,
    a seeded draw (a word's first piece, or a piece of CJK characters, B-<type> below `NER_BEGIN`;
    O above, and for any other piece, one that is not content or one that holds a digit: so an
    entity is one piece, as an extractive answer of the tiny QA model often is), with wide
    margins: every layer passes its input through (weights zeroed, LayerNorms exact on zero-mean
    unit embeddings), each label has a random zero-mean direction, a token embeds as its label's
    direction, and the classifier reads the directions."""
    import numpy as np
    import torch

    hidden, vocab = model.config.hidden_size, len(tokenizer)
    kinds = len(NER_LABELS)
    draw, kind = rng.uniform(0.0, 1.0, vocab), rng.integers(0, (kinds - 1) // 2, vocab)
    pieces = tokenizer.convert_ids_to_tokens(list(range(vocab)))
    # a word's first piece, or a piece of a script written without spaces (each may be an entity)
    first = np.array([t.startswith("▁") or (bool(t) and all(_unspaced_char(c) for c in t)) for t in pieces])
    label = np.where((draw < NER_BEGIN) & first, 1 + 2 * kind, 0)
    digits = np.array([any(c.isdigit() for c in t) for t in pieces])  # numbers are the rules' (O)
    label[~piece_content_tokens(tokenizer) | digits] = 0
    directions = _zero_mean_units(rng, kinds, hidden)
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.zero_()
            if name.endswith("weight") and name.split(".")[-2] == "LayerNorm":
                param.fill_(1.0)
        model.roberta.embeddings.word_embeddings.weight.copy_(
            torch.tensor(directions[label] * np.sqrt(hidden))
        )
        model.classifier.weight.copy_(torch.tensor(directions * NER_SCALE))


def build_tiny_multilingual_models(
    out_dir: str | Path, texts: Iterable[str] | None = None, seed: int = 0
) -> dict[str, str]:
    """Write qg/, qa/, nli/ and ner/ model directories under `out_dir` (random weights, a few
    seconds); return their paths. One SentencePiece vocabulary (`sentencepiece_tokenizer`, trained
    on `texts`, default the bundled multi-script text `MULTILINGUAL_TEXT`) for all four:

    - qg: a T5 (`SIZES["tiny"]`) with random weights: it generates, from the prompt's pieces, a
      question of pieces of the vocabulary; its text means nothing.
    - qa: an ALBERT extractive QA model with the lexical design of `lexical_qa` (content pieces of
      every script, `piece_content_tokens`): the answer is a piece of the text or "no answer" (the
      CLS position), varying with the text and the question's length.
    - nli: a RoBERTa classifier with the bag-of-words design of `bag_of_words_nli`; id2label
      entailment/neutral/contradiction in lower case.
    - ner: a RoBERTa (XLM-R's architecture) token classifier with BIO labels (`NER_LABELS`), each
      token's label a seeded function of the token (`lexical_ner`).

    Seeded: every build from the same texts is the same bytes."""
    import numpy as np
    import torch
    from transformers import (
        AlbertConfig,
        AlbertForQuestionAnswering,
        RobertaConfig,
        RobertaForSequenceClassification,
        RobertaForTokenClassification,
        T5Config,
        T5ForConditionalGeneration,
    )

    torch.manual_seed(seed)
    base = sentencepiece_tokenizer(multilingual_texts() if texts is None else texts)
    tokenizers = {role: _wrap(base, role) for role in MULTILINGUAL_ROLES}
    vocab = base.get_vocab_size(with_added_tokens=True)
    pad, eos = base.token_to_id("<pad>"), base.token_to_id("</s>")
    shapes = SIZES["tiny"]
    encoder = dict(vocab_size=vocab, pad_token_id=pad, max_position_embeddings=514, type_vocab_size=2)
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
                **encoder,
                num_labels=3,
                id2label=NLI_LABELS_MULTILINGUAL,
                label2id={v: k for k, v in NLI_LABELS_MULTILINGUAL.items()},
                **shapes["roberta"],
            )
        ),
        "ner": RobertaForTokenClassification(
            RobertaConfig(
                **encoder,
                num_labels=len(NER_LABELS),
                id2label=dict(enumerate(NER_LABELS)),
                label2id={v: k for k, v in enumerate(NER_LABELS)},
                **shapes["roberta"],
            )
        ),
    }
    content = piece_content_tokens(tokenizers["qa"])
    lexical_qa(models["qa"], tokenizers["qa"], np.random.default_rng([seed, 1]), content)
    bag_of_words_nli(models["nli"], tokenizers["nli"], np.random.default_rng([seed, 3]), content)
    lexical_ner(models["ner"], tokenizers["ner"], np.random.default_rng([seed, 4]))
    paths = {}
    for role, model in models.items():
        path = Path(out_dir) / role
        model.save_pretrained(path)
        tokenizers[role].save_pretrained(path)
        paths[role] = str(path)
    return paths
