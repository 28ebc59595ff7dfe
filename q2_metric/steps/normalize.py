"""Answer normalisation and token F1, exactly as the released Q² code defines them; and per
language, by a model set's token rules (`TokenRules`), for languages other than English.

`TokenRules` (a model set's `tokens` entry): Unicode NFC first (a letter written with a combining
mark equals its precomposed form), then lower case (`lowercase`), every Unicode punctuation
character (category P*) read as a space, then tokens: "words" splits at Unicode white space;
"characters" (CJK, Thai, ...: scripts written without spaces) makes each character of those
scripts one token, while runs of other characters (Latin words, digits) stay whole tokens, so
that "2021" and "2012" differ; `articles` are dropped as the English rule drops a/an/the.
English (no rules given) keeps the released code's normalisation, byte for byte.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from q2_metric.errors import Q2OptionError

_PUNCT = str.maketrans("", "", string.punctuation)
_STOP = re.compile(r"\b(a|an|the|in|our)\b")
_SPACES = re.compile(" +")


def normalize_answer(text: str) -> str:
    """Lower-case, strip ASCII punctuation, remove a/an/the/in/our, collapse spaces.

    >>> normalize_answer("In the 1980s, our Bob Ross!")
    '1980s bob ross'
    """
    text = text.lower().translate(_PUNCT)
    text = _STOP.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


# Scripts written without spaces between words: each character one token (`TokenRules`,
# split="characters"), by the start of its Unicode name.
UNSPACED_SCRIPTS = (
    "CJK",
    "HIRAGANA",
    "KATAKANA",
    "HALFWIDTH KATAKANA",
    "IDEOGRAPHIC",
    "HANGUL",
    "THAI",
    "LAO",
    "KHMER",
    "MYANMAR",
    "TIBETAN",
)
SPLITS = ("words", "characters")


def _unspaced(char: str) -> bool:
    return unicodedata.name(char, "").startswith(UNSPACED_SCRIPTS)


@dataclass(frozen=True)
class TokenRules:
    """How a language's answers become tokens for token F1 (module docstring).

    >>> TokenRules(articles=("der", "die", "das")).tokens("Die Brücke, über den Rhein!")
    ['brücke', 'über', 'den', 'rhein']
    >>> TokenRules(split="characters").tokens("北京，2021年")
    ['北', '京', '2021', '年']
    """

    split: Literal["words", "characters"] = "words"
    lowercase: bool = True
    articles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise Q2OptionError(f"tokens.split is '{self.split}', not one of {', '.join(SPLITS)}")

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any] | None) -> TokenRules:
        """The rules of a model set's `tokens` entry (`split`, `lowercase`, `articles`; each
        optional: words, lower case, none); `ValueError` in one sentence for an unknown key or value.

        >>> TokenRules.from_entry({"split": "characters"})
        TokenRules(split='characters', lowercase=True, articles=())
        """
        entry = dict(entry or {})
        unknown = sorted(set(entry) - {"split", "lowercase", "articles"})
        if unknown:
            raise Q2OptionError(
                f"tokens has unknown keys {', '.join(unknown)} (known: split, lowercase, articles)"
            )
        articles = entry.get("articles", ())
        if isinstance(articles, str) or not all(isinstance(a, str) for a in articles):
            raise Q2OptionError("tokens.articles must be a list of words")
        return cls(
            split=entry.get("split", "words"),
            lowercase=bool(entry.get("lowercase", True)),
            articles=tuple(articles),
        )

    def tokens(self, text: str) -> list[str]:
        """`text`'s tokens by these rules."""
        text = unicodedata.normalize("NFC", text)
        if self.lowercase:
            text = text.lower()
        text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
        if self.split == "words":
            words = text.split()
        else:
            words, run = [], ""
            for c in text:
                if c.isspace() or _unspaced(c):
                    if run:
                        words.append(run)
                    run = ""
                    if not c.isspace():
                        words.append(c)
                else:
                    run += c
            if run:
                words.append(run)
        dropped = {unicodedata.normalize("NFC", a).lower() for a in self.articles}  # in any case
        return [w for w in words if w.lower() not in dropped]


def answer_tokens(text: str, rules: TokenRules | None = None) -> list[str]:
    """The tokens token F1 compares: the released code's (`normalize_answer`, split at spaces)
    without rules, else `rules.tokens`."""
    return normalize_answer(text).split() if rules is None else rules.tokens(text)


def f1_score(gold: str, prediction: str, rules: TokenRules | None = None) -> float:
    """SQuAD-style token F1 between normalised texts; an empty prediction scores 0. `rules`: a
    language's token rules (default: the released code's English normalisation).

    Examples:
        >>> f1_score("the 1980s", "1980s and 1990s")
        0.5
        >>> f1_score("北京是首都", "北京", TokenRules(split="characters"))
        0.5714285714285715
    """
    if prediction == "":
        return 0.0
    gold_tokens = answer_tokens(gold, rules)
    pred_tokens = answer_tokens(prediction, rules)
    common = Counter(gold_tokens) & Counter(pred_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def answers_match(candidate: str, answer: str, rules: TokenRules | None = None) -> bool:
    """True when two answers are equal after normalisation (`rules`: a language's token rules;
    then equal token lists)."""
    if rules is None:
        return normalize_answer(candidate) == normalize_answer(answer)
    return rules.tokens(candidate) == rules.tokens(answer)
