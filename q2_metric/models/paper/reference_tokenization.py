"""The paper's tokenization: what transformers 3.2's slow SentencePiece tokenizers (the released
code's `T5Tokenizer` and `AlbertTokenizer`, `AutoTokenizer`'s default there) did, rewritten on the
`sentencepiece` library.

transformers 5 tokenizes the same files differently (its fast tokenizers drop the lone `▁` piece
before a user-defined symbol, add a second `</s>` after the prompt's literal one, and decode
without 3.2's clean-up), so the models would read other ids than they did for the paper. The rules
below are the 3.2 ones, as small functions:

- special tokens (and tokens added to the vocabulary) are split out of the text first, the text
  around each stripped of whitespace (`split_on_special_tokens`);
- ALBERT normalises each remaining chunk (`albert_preprocess`: spaces collapsed, ``` `` ``` and
  `''` to `"`, accents removed, lower-cased) and re-splits a piece that ends in a digit and a comma
  (`albert_pieces`);
- T5 appends `</s>` unless the ids already end in it; ALBERT builds `[CLS] A [SEP] B [SEP]` with
  segment ids 0 then 1;
- decoding: T5 drops special ids, joins the pieces with SentencePiece and applies 3.2's
  `clean_up_tokenization`; ALBERT's `convert_tokens_to_string` joins the pieces and turns `▁` into spaces.

`load_reference_tokenizer` returns a `ReferenceTokenizer` for a T5 or ALBERT model whose tokenizer
files are a SentencePiece model with every special token in its vocabulary (as the paper's
models' are), else None: such models keep transformers' own tokenization (`tok:hf` in the signature).
"""

from __future__ import annotations

import re
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from q2_metric.models.loading import model_file_finder, read_checkpoint_tensor, read_model_json

SPIECE_UNDERLINE = "\u2581"
REFERENCE = "ref32"  # the signature's name of this path: transformers 3.2's slow tokenizers
HF = "hf"  # transformers' own tokenization

# The class defaults of 3.2's tokenizers, before special_tokens_map.json / tokenizer_config.json.
T5_SPECIALS = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
ALBERT_SPECIALS = {
    "bos_token": "[CLS]",
    "eos_token": "[SEP]",
    "unk_token": "<unk>",
    "sep_token": "[SEP]",
    "pad_token": "<pad>",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def clean_up_tokenization(text: str) -> str:
    """3.2's `clean_up_tokenization`: no space before `. ? ! ,` and English contractions.

    >>> clean_up_tokenization("who is gus ' s dog , rex ?")
    "who is gus's dog, rex?"
    """
    for old, new in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(old, new)
    return text


def lowercase_outside(text: str, specials: Sequence[str]) -> str:
    """Lower-case everything but the special tokens (3.2's `tokenize` when the tokenizer's saved
    init arguments hold `do_lower_case`)."""
    pattern = "(" + "|".join(re.escape(s) for s in specials) + r")|(.+?)"
    return re.sub(pattern, lambda m: m.groups()[0] or m.groups()[1].lower(), text)


def _split_on_token(token: str, text: str) -> list[str]:
    parts = text.split(token)
    out: list[str] = []
    for i, part in enumerate(parts):
        if i < len(parts) - 1:
            part = part.rstrip()
        if i > 0:
            part = part.lstrip()
        if i == 0 and not part:
            out.append(token)
        elif i == len(parts) - 1:
            if part:
                out.append(part)
        else:
            if part:
                out.append(part)
            out.append(token)
    return out


def split_on_special_tokens(text: str, specials: Sequence[str]) -> list[str]:
    """The text cut at every special token, in 3.2's order (tokens sorted, one after another),
    whitespace around each cut stripped; special tokens are kept as items of their own.

    >>> split_on_special_tokens("answer: a  context: b </s>", ["</s>", "<pad>"])
    ['answer: a  context: b', '</s>']
    """
    if not text.strip():
        return []
    chunks = [text]
    for token in specials:
        chunks = [
            piece
            for chunk in chunks
            for piece in ([chunk] if chunk in specials else _split_on_token(token, chunk))
        ]
    return chunks


def albert_preprocess(
    text: str, remove_space: bool = True, keep_accents: bool = False, do_lower_case: bool = True
) -> str:
    """3.2's `AlbertTokenizer.preprocess_text`.

    >>> albert_preprocess("  ``Pokémon''  Café ")
    '"pokemon" cafe'
    """
    out = " ".join(text.strip().split()) if remove_space else text
    out = out.replace("``", '"').replace("''", '"')
    if not keep_accents:
        out = "".join(c for c in unicodedata.normalize("NFKD", out) if not unicodedata.combining(c))
    return out.lower() if do_lower_case else out


def albert_pieces(sp: Any, text: str) -> list[str]:
    """3.2's `AlbertTokenizer._tokenize` after preprocessing: SentencePiece pieces, a piece ending
    in a digit and a comma (`▁1990,`) encoded again without the comma, the comma its own piece."""
    out: list[str] = []
    for piece in sp.encode(text, out_type=str):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            sub = sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
            if piece[0] != SPIECE_UNDERLINE and sub and sub[0][0] == SPIECE_UNDERLINE:
                sub = sub[1:] if len(sub[0]) == 1 else [sub[0][1:]] + sub[1:]
            out.extend(sub + [piece[-1]])
        else:
            out.append(piece)
    return out


TEXT_MEMO = 64  # texts (knowledge) whose tokens `ReferenceTokenizer.encode_text` keeps


@dataclass
class ReferenceTokenizer:
    """A T5 (`kind="t5"`) or ALBERT (`kind="albert"`) tokenizer as transformers 3.2 ran it."""

    kind: str
    sp: Any  # sentencepiece.SentencePieceProcessor
    specials: dict[str, str]  # eos_token, pad_token, ... -> token
    extra: list[str] = field(default_factory=list)  # T5's <extra_id_N> (additional special tokens)
    lower_first: bool = False  # tokenizer_config.json's do_lower_case (3.2's tokenize lower-cases then)
    do_lower_case: bool = True  # ALBERT's preprocessing options
    remove_space: bool = True
    keep_accents: bool = False

    def __post_init__(self) -> None:
        self._texts: OrderedDict[str, tuple[int, ...]] = OrderedDict()  # `encode_text`'s memo
        self.pieces = self.sp.get_piece_size()
        self.vocab_size = self.pieces + (len(self.extra) if self.kind == "t5" else 0)
        self.no_split = sorted(set(self.specials.values()) | set(self.extra))
        self.special_ids = {self.token_to_id(t) for t in self.no_split}

    def token_to_id(self, token: str) -> int:
        if self.kind == "t5":
            m = re.fullmatch(r"<extra_id_(\d+)>", token)
            if m:
                return self.vocab_size - int(m.group(1)) - 1
        return self.sp.piece_to_id(token)

    def id_to_token(self, index: int) -> str:
        if index < self.pieces:
            return self.sp.id_to_piece(index)
        return f"<extra_id_{self.vocab_size - 1 - index}>"

    def id_of(self, name: str) -> int:
        return self.token_to_id(self.specials[name])

    def tokenize(self, text: str) -> list[str]:
        """3.2's `tokenize`: special tokens split out, every other chunk through SentencePiece."""
        if self.lower_first:
            text = lowercase_outside(text, self.no_split)
        tokens: list[str] = []
        for chunk in split_on_special_tokens(text, self.no_split):
            if chunk in self.no_split:
                tokens.append(chunk)
            elif self.kind == "albert":
                tokens += albert_pieces(
                    self.sp,
                    albert_preprocess(chunk, self.remove_space, self.keep_accents, self.do_lower_case),
                )
            else:
                tokens += self.sp.encode(chunk, out_type=str)
        return tokens

    def encode(self, text: str) -> list[int]:
        """Ids of the text, no special tokens added."""
        return [self.token_to_id(t) for t in self.tokenize(text)]

    def encode_text(self, text: str) -> list[int]:
        """`encode(text)`, remembered for the last `TEXT_MEMO` texts met (keyed by the exact text):
        the QA pairs of one call, and a stream's sentences, read the same knowledge again and
        again, and its tokens are the same each time (`encode` is a pure function of the text)."""
        found = self._texts.get(text)
        if found is None:
            found = self._texts[text] = tuple(self.encode(text))
            while len(self._texts) > TEXT_MEMO:  # the oldest first
                try:
                    self._texts.popitem(last=False)
                except KeyError:  # emptied by another thread meanwhile
                    break
        return list(found)

    def t5_input(self, text: str, max_length: int | None = None) -> list[int]:
        """T5's model input: `</s>` appended unless the ids already end in it (3.2's
        `_add_eos_if_not_present`), so the prompt's literal `</s>` is the only one. Longer inputs
        are cut to `max_length`, ending in `</s>` (3.2 did not cut; the engine's window does)."""
        eos = self.id_of("eos_token")
        ids = self.encode(text)
        if not ids or ids[-1] != eos:
            ids.append(eos)
        if max_length is not None and len(ids) > max_length:
            ids = ids[: max_length - 1] + [eos]
        return ids

    def pair_windows(
        self, question: str, text: str, window: int, stride: int
    ) -> list[tuple[list[int], list[int]]]:
        """(input ids, segment ids) of `[CLS] question [SEP] text [SEP]`, as 3.2's `encode_plus`
        built them; a text too long for `window` tokens is read in windows overlapping by `stride`
        tokens (3.2 did not cut: this is the engine's reading of longer texts)."""
        cls, sep = self.id_of("cls_token"), self.id_of("sep_token")
        q, t = self.encode(question), self.encode_text(text)
        q = q[: max(1, window - 4 - stride)] if len(q) + 3 + stride >= window else q
        room = window - 3 - len(q)
        starts = [0]
        while starts[-1] + room < len(t):
            starts.append(starts[-1] + room - stride)
        out = []
        for s in starts:
            chunk = t[s : s + room]
            out.append(([cls] + q + [sep] + chunk + [sep], [0] * (len(q) + 2) + [1] * (len(chunk) + 1)))
        return out

    def convert_tokens_to_string(self, tokens: Sequence[str]) -> str:
        """3.2's `convert_tokens_to_string` (ALBERT: pieces joined, `▁` -> space, stripped)."""
        if self.kind == "albert":
            return "".join(tokens).replace(SPIECE_UNDERLINE, " ").strip()
        return self.sp.decode_pieces(list(tokens))

    def tokens_of(self, ids: Sequence[int]) -> list[str]:
        return [self.id_to_token(int(i)) for i in ids]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """3.2's `decode(ids, skip_special_tokens=..., clean_up_tokenization_spaces=True)`."""
        kept = [int(i) for i in ids if not (skip_special_tokens and int(i) in self.special_ids)]
        return clean_up_tokenization(self.convert_tokens_to_string(self.tokens_of(kept)))


def _special_value(value: Any) -> str | None:
    """A special token as saved (a string, or a plain AddedToken dict); None for one with its own
    whitespace rules, which this path does not model."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, dict)
        and isinstance(value.get("content"), str)
        and not any(value.get(k) for k in ("lstrip", "rstrip", "single_word"))
    ):
        return value["content"]
    return None


def load_reference_tokenizer(model_id: str) -> ReferenceTokenizer | None:
    """The 3.2 tokenizer of a T5 or ALBERT model with a SentencePiece vocabulary (`spiece.model`)
    holding all its special tokens and no added tokens; None for any other model."""
    find = model_file_finder(model_id)
    kind = read_model_json(find, "config.json").get("model_type")
    spiece = model_file_finder(model_id, download=True)("spiece.model") if kind in ("t5", "albert") else None
    if kind not in ("t5", "albert") or spiece is None:
        return None
    added = read_model_json(find, "added_tokens.json")
    if added:
        return None
    init = read_model_json(find, "tokenizer_config.json")
    saved = read_model_json(find, "special_tokens_map.json")
    specials = dict(T5_SPECIALS if kind == "t5" else ALBERT_SPECIALS)
    for key in SPECIAL_KEYS:  # 3.2: tokenizer_config.json first, then special_tokens_map.json
        value = init.get(key, saved.get(key))
        if value is None:
            continue
        token = _special_value(value)
        if token is None:
            return None
        specials[key] = token
    extra: list[str | None] = []
    if kind == "t5":
        extra_ids = int(init.get("extra_ids", 100))
        listed = init.get("additional_special_tokens", saved.get("additional_special_tokens"))
        extra = (
            [_special_value(v) for v in listed] if listed else [f"<extra_id_{i}>" for i in range(extra_ids)]
        )
        if any(t is None or not re.fullmatch(r"<extra_id_\d+>", t) for t in extra):
            return None
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=spiece)
    unk = sp.unk_id()
    if any(t != specials["unk_token"] and sp.piece_to_id(t) == unk for t in specials.values()):
        return None  # 3.2 would have added it to the vocabulary: an unusual file this path does not model
    return ReferenceTokenizer(
        kind=kind,
        sp=sp,
        specials=specials,
        extra=[t for t in extra if t is not None],  # (none is None: checked above)
        lower_first=bool(init.get("do_lower_case", False)),
        do_lower_case=bool(init.get("do_lower_case", True)),
        remove_space=bool(init.get("remove_space", True)),
        keep_accents=bool(init.get("keep_accents", False)),
    )


@lru_cache(maxsize=32)
def _paths(model_id: str, config_file: str | None, role: str, qa_decoding: str) -> str:
    ref = load_reference_tokenizer(model_id)
    if role == "qg":
        from q2_metric.models.paper.t5_cross_bias import CROSS_BIAS

        label = REFERENCE if ref is not None else HF
        if (
            read_model_json(model_file_finder(model_id), "config.json").get("model_type") == "t5"
            and read_checkpoint_tensor(model_file_finder(model_id), CROSS_BIAS) is not None
        ):
            label += "+xbias"
        return label
    if role == "qa":
        return REFERENCE if ref is not None and ref.kind == "albert" and qa_decoding == "reference" else HF
    from q2_metric.models.paper.allennlp_input import ALLENNLP, is_allennlp_converted

    return (
        ALLENNLP if is_allennlp_converted(read_model_json(model_file_finder(model_id), "config.json")) else HF
    )


def tokenization_path(model_id: str, role: str, qa_decoding: str = "reference") -> str:
    """The path a backend built from `model_id` for `role` (qg/qa/nli) takes, read from its files
    without loading it: `ref32` or `hf` (NLI: `allennlp10` or `hf`), and for QG `+xbias` when the 3.x cross-attention bias is
    applied (what the loaded backends' `tokenization` says)."""
    return _paths(model_id, model_file_finder(model_id)("config.json"), role, qa_decoding)
