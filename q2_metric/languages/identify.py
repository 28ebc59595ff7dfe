"""Which language a text is in, as far as the chosen model set is concerned: the gate of the one
item check (`frontend.check_items`, and the Python API's `Q2Scorer.score`), before any model work.

The rule, for a model set of language L (`Q2Config.language`), field by field:

1. the script, first and certain: when L is English, a text whose letters are mostly not Latin
   (`validation.plainly_not_english`: 10 letters or more) is not English;
2. py3langid (BSD-3-Clause, its model inside the package; chosen in docs/multilingual.md), with
   normalized probabilities: a text is in another language only when py3langid gives L a
   probability below `FLOOR` (1%) and that other language at least `SURE` (50%); a text mostly
   in Latin letters is judged only from `MIN_WORDS` (3) words on ("Zoë sang." was judged
   Acehnese at 0.65). A short or mixed text that py3langid is unsure about keeps the benefit of
   the doubt (a word or two gets a nearly even spread over py3langid's 140 languages, under 1%
   each). On the repository's 3,690 English texts (the annotated Wizard of Wikipedia set, the bundled sample, BEGIN's dev files)
   none is gated: the most py3langid gives another language is 0.498 ("Is it like surfing or
   skateboarding?": Frisian, English 0.40), and the least it gives English on a text of three
   words or more is 0.032 ("Who is Kurt Cobain?"). Of the 65 non-English short sentences of
   `benchmarks/langid_short.py` (13 languages), 64 are told apart from English, each named by its
   language; the other has two words ("İstasyon nerede?") (`tests/unit/languages/test_identify.py`).

An item with a field in a language its set does not cover is left `unverified`, with one
sentence naming the item, the field and the language (`language_problem`): never an English
score of a text the English models cannot read.
"""

from __future__ import annotations

import functools
import threading
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from q2_metric.validation import is_blank, plainly_not_english

FLOOR = 0.01  # below this normalized probability of the set's language, a text is in another one
SURE = (
    0.5  # ... when py3langid gives that other language at least this (a text too short to judge: ~1/140 each)
)
NO_LANGUAGE = "zxx"  # py3langid's label of a text with no linguistic content
# A text mostly in Latin letters with fewer words than this is not judged by py3langid: a name and
# a verb ("Zoë sang.") was judged Acehnese at 0.65, English 0.001.
MIN_WORDS = 3
ENGLISH = "en"
_LOCK = threading.Lock()

# Names of the languages a sentence names most often; other codes are shown as they are.
NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ru": "Russian",
    "sv": "Swedish",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "zh": "Chinese",
}


@functools.lru_cache(maxsize=1)
def _identifier() -> Any:
    """py3langid's identifier, its model unpacked in memory: its own loader unpacks it into a
    temporary file, which fails on a full disk (or under a file-size limit) before any scoring."""
    import io
    import lzma
    from array import array

    import numpy as np
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    def unsigned(values: Any) -> array:  # the automaton's tables, as py3langid keeps them
        out = array({2: "H", 4: "I", 8: "L"}[values.dtype.itemsize])
        out.frombytes(np.ascontiguousarray(values).tobytes())
        return out

    path = Path(MODEL_FILE) if Path(MODEL_FILE).is_absolute() else Path(MODEL_DIR) / MODEL_FILE
    with lzma.open(path) as packed, np.load(io.BytesIO(packed.read()), allow_pickle=False) as data:
        return LanguageIdentifier(
            np.asarray(data["ptc"]),
            np.asarray(data["pc"]),
            data["classes"].tolist(),
            unsigned(data["nextmove"]),
            data["out_feat"].tolist(),
            norm_probs=True,
            tk_row=unsigned(data["nextmove_row"]),
        )


# py3langid's varieties folded into the language a model set is keyed by (their probabilities
# summed): Wu and Cantonese are Chinese, Moroccan and Egyptian Arabic are Arabic, Nynorsk is
# Norwegian, Hebrew's ancient form Hebrew.
VARIETIES = {"wuu": "zh", "yue": "zh", "ary": "ar", "arz": "ar", "nn": "no", "uzs": "uz", "hbo": "he"}


def probabilities(text: str) -> dict[str, float]:
    """py3langid's normalized probability of each language it knows for `text`, its varieties
    folded into their language (`VARIETIES`)."""
    with _LOCK:  # one identifier, shared by threads
        ranked = _identifier().rank(text)
    out: dict[str, float] = {}
    for code, p in ranked:
        key = VARIETIES.get(code, code)
        out[key] = out.get(key, 0.0) + float(p)
    return out


def language_name(code: str) -> str:
    """`German (de)`; a code without a name here is shown as itself."""
    name = NAMES.get(code)
    return f"{name} ({code})" if name else f"'{code}'"


def other_language(text: str, language: str) -> str | None:
    """The language `text` is in when it is plainly not `language` (the module's rule), else None.

    >>> other_language("Bob Ross hosted a show on PBS.", "en") is None
    True
    >>> other_language("Der Rhein fließt durch Basel und Köln.", "en")
    'de'
    >>> other_language("鲍勃·罗斯主持了一个电视节目《欢乐画室》。", "en")
    'zh'
    """
    if is_blank(text):
        return None
    certain = language == ENGLISH and plainly_not_english(text)
    probs = probabilities(text)
    best = max(probs, key=probs.__getitem__)
    if certain:
        return best if best != ENGLISH else "und"
    if language not in probs:  # a language py3langid does not know: it cannot judge
        return None
    if _words(text) < MIN_WORDS and _mostly_latin(text):
        return None  # too short to tell apart the languages written in Latin letters
    sure = probs[best] >= SURE and best not in (language, NO_LANGUAGE)
    return best if sure and probs[language] < FLOOR else None


def _words(text: str) -> int:
    """The words of a text (white-space separated, each with a letter)."""
    return sum(any(c.isalpha() for c in word) for word in text.split())


def _mostly_latin(text: str) -> bool:
    """Whether at least half of a text's letters are Latin ones (as `plainly_not_english` counts)."""
    letters = [c for c in text if c.isalpha()]
    latin = sum(c < "\u0250" or "LATIN" in unicodedata.name(c, "") for c in letters)
    return latin * 2 >= len(letters)


def language_problem(key: str, texts: Mapping[str, str], language: str) -> str | None:
    """One sentence naming the item (`key`), the first field in a language the `language` set does
    not cover, and that language; None when every field is in it (or may be)."""
    for field, text in texts.items():
        found = other_language(text, language)
        if found is not None:
            shown = "a script other than Latin" if found == "und" else language_name(found)
            return f"{key}: field '{field}' is in {shown}, which the {language_name(language)} model set does not cover."
    return None


__all__ = ["FLOOR", "NAMES", "language_name", "language_problem", "other_language", "probabilities"]
