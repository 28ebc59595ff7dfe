"""Input checks that run before any model: a clear error naming the index and field."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence, Set
from typing import Any

from q2_metric.errors import Q2InputError

_ACCEPTED = "a sequence of strings (list, tuple, numpy array, pandas Series)"


def _as_list(value: Any, name: str) -> list:
    """The items of an ordered sequence; unordered or keyed collections are refused."""
    if isinstance(value, (str, bytes)):
        raise Q2InputError(f"{name} must be {_ACCEPTED}, got a single {type(value).__name__}")
    if isinstance(value, (Set, Mapping)) or (hasattr(value, "keys") and not hasattr(value, "iloc")):
        raise Q2InputError(
            f"{name} must be {_ACCEPTED}, got {type(value).__name__}, whose order is not "
            "the order of the items; pass a list"
        )
    ndim = getattr(value, "ndim", None)
    if ndim is not None and ndim != 1:
        raise Q2InputError(f"{name} must be one-dimensional {_ACCEPTED}, got {ndim} dimensions")
    if not isinstance(value, Sequence) and not hasattr(value, "__iter__"):
        raise Q2InputError(f"{name} must be {_ACCEPTED}, got {type(value).__name__}")
    return list(value)


# Knowledge given as a list of passages (the RAG shape: retrieved contexts) is one knowledge text:
# its passages joined by a space, in order. The released code takes one knowledge string; a space
# is what ragas' and Inspect's adapters already joined with, and the QA model reads the joined text
# in windows. One rule for every front-end; a fixed rule, so no signature entry: the score is that
# of the joined string given as it is.
PASSAGE_SEPARATOR = " "


def knowledge_text(value: Any) -> Any:
    """A knowledge value as the models read it: a list or tuple of strings (passages) joined by
    `PASSAGE_SEPARATOR`; anything else as it is (a string; another type is the caller's error).

    >>> knowledge_text(["Bob Ross painted.", "He hosted a show."]), knowledge_text("one text")
    ('Bob Ross painted. He hosted a show.', 'one text')
    """
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return PASSAGE_SEPARATOR.join(value)
    return value


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def item_error(
    key: str, texts: Mapping[str, object], history: object = None, history_field: str = "history"
) -> str | None:
    """The one item check: one sentence naming the item (`key`, in its front-end's words: "row 3",
    "item 2") and the field, or None. Each of `texts` (field name -> value, as the models read it:
    knowledge passages already joined by `knowledge_text`) must be a string; `history` None or a
    list of strings (its turns).

    >>> item_error("row 3", {"response": 7, "knowledge": "k"})
    "row 3: field 'response' must be a string, got int."
    >>> item_error("item 1", {}, ["hi", None], "histories")
    "item 1: turn 1 of field 'histories' must be a string, got None."
    """
    for field, value in texts.items():
        if not isinstance(value, str):
            return f"{key}: field '{field}' must be a string, got {_type_name(value)}."
    if history is None:
        return None
    if isinstance(history, (str, bytes)) or not hasattr(history, "__iter__"):
        return f"{key}: field '{history_field}' must be a list of strings, got {_type_name(history)}."
    for j, turn in enumerate(history):
        if not isinstance(turn, str):
            return f"{key}: turn {j} of field '{history_field}' must be a string, got {_type_name(turn)}."
    return None


def validate_inputs(
    responses: Any,
    knowledge: Any,
    response_field: str = "response",
    knowledge_field: str = "knowledge",
    start: int = 0,
) -> tuple[list[str], list[str]]:
    """Check two parallel sequences of strings; return them as lists of plain `str`. Items are
    named from `start` (`item {start + i}`: a batch added after others names its items as the
    whole input does).

    Lists, tuples, numpy arrays and pandas Series (by position) are accepted; sets and dicts are
    refused. A knowledge item may be a list of passages (`knowledge_text`: joined by a space). String subclasses such as `numpy.str_` become plain `str` (tokenizers refuse them).
    """
    responses = _as_list(responses, response_field)
    knowledge = [knowledge_text(k) for k in _as_list(knowledge, knowledge_field)]  # passages joined
    if len(responses) != len(knowledge):
        raise Q2InputError(
            f"{response_field} has {len(responses)} items but {knowledge_field} has {len(knowledge)}; "
            "they must be parallel lists"
        )
    for i, (r, k) in enumerate(zip(responses, knowledge)):
        error = item_error(f"item {start + i}", {response_field: r, knowledge_field: k})
        if error is not None:
            raise Q2InputError(error)
    return [clean_text(str.__str__(r)) for r in responses], [clean_text(str.__str__(k)) for k in knowledge]


_SURROGATE = re.compile("[\ud800-\udfff]")
# Whitespace and control characters (Unicode category Cc: C0, DEL, C1): no text to score.
_BLANK = re.compile(r"[\s\x00-\x1f\x7f-\x9f]*")


def clean_text(text: str) -> str:
    """The text the models read: a lone surrogate (a code point U+D800-U+DFFF that is no character
    and has no UTF-8 form, e.g. from the JSON escape `"\\ud800"`) becomes U+FFFD, the replacement
    character; a surrogate pair becomes the character it encodes. Everything else is kept as it is,
    control characters included (the models take them, as the released code gave them)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# Characters that show nothing: Unicode's Default_Ignorable_Code_Point ranges (zero-width
# spaces and joiners, bidi marks and embeddings, variation selectors, fillers, tags) and the
# blank Braille pattern.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def is_blank(text: str) -> bool:
    """Whether a text has no visible character after NFKC normalisation: only whitespace, control
    characters (NUL, ESC, ...), format characters (Unicode category Cf: zero-width space, bidi
    controls, ...), separators and other default-ignorable code points."""
    if _BLANK.fullmatch(text) is not None:
        return True
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return all(
        (unicodedata.category(ch)[0] in "CZ" and unicodedata.category(ch) not in ("Co", "Cn")) or ch.isspace()
        for ch in text
    )


# spaCy's `nlp.max_length` (its default): spaCy refuses to parse a longer text, and the response
# is parsed for its answer candidates. (The knowledge is read by the QA model in windows.)
MAX_RESPONSE_CHARS = 1_000_000


def empty_reason(response: str, knowledge: str) -> str | None:
    """Why a pair cannot be scored (its score is NaN, left out of the mean), or None: a response or
    knowledge without a visible character (`is_blank`) is empty; a response longer than spaCy
    parses (`MAX_RESPONSE_CHARS`) is one unscored row, never a crash of the whole batch."""
    if is_blank(response):
        return "empty response"
    if is_blank(knowledge):
        return "empty knowledge"
    if len(response) > MAX_RESPONSE_CHARS:
        return f"the response has {len(response):,} characters, above the {MAX_RESPONSE_CHARS:,} spaCy parses"
    return None


# A text "plainly not English": at least this many letters among its first `_LOOK` characters,
# most of them outside the Latin script (Chinese, Cyrillic, Arabic, Devanagari...): the first,
# certain signal of the language gate (`q2_metric.languages.identify`), which tells the languages
# written in Latin letters (French, German) apart with py3langid.
_MIN_LETTERS, _LOOK = 10, 5000


def plainly_not_english(text: str) -> bool:
    """Whether most letters of a text (10 or more) are not Latin ones.

    >>> plainly_not_english("Bob Ross hosted a show."), plainly_not_english("鲍勃·罗斯主持了一个电视节目《欢乐画室》。")
    (False, True)
    """
    letters = latin = 0
    for ch in text[:_LOOK]:
        if ch.isalpha():
            letters += 1
            latin += ch < "\u0250" or "LATIN" in unicodedata.name(ch, "")
    return letters >= _MIN_LETTERS and latin * 2 < letters


def not_english_fields(responses: Sequence[str], knowledge: Sequence[str]) -> list[tuple[int, str]]:
    """(index, field) of each item with a text plainly not English (`plainly_not_english`), each
    field judged alone, so that a Chinese response to English knowledge is one; the field named is
    the first such one (`response`, else `knowledge`).

    >>> not_english_fields(["Bob Ross hosted a show.", "鲍勃·罗斯主持了一个电视节目《欢乐画室》。"], ["Bob Ross.", "Bob Ross hosted The Joy of Painting on PBS."])
    [(1, 'response')]
    """
    out = []
    for i, (r, k) in enumerate(zip(responses, knowledge)):
        field = "response" if plainly_not_english(r) else "knowledge" if plainly_not_english(k) else None
        if field:
            out.append((i, field))
    return out


def not_english_message(count: int, total: int, unit: str, first: str) -> str:
    """The one sentence of the not-English warning: `count` of `total` `unit` (items, rows), the first named."""
    return (
        f"{count} of {total} {unit} are plainly not English (most letters not Latin; first: {first}): "
        "the English model set does not cover them, so they are unverified, not scored (the language "
        "option chooses another model set)."
    )


def warn_if_not_english(responses: Sequence[str], knowledge: Sequence[str]) -> None:
    """One `NotEnglishWarning` for a batch with plainly non-English texts (`not_english_fields`),
    naming how many and the first item, pointed at the caller's line outside this package."""
    import sys
    import warnings

    from q2_metric.errors import NotEnglishWarning

    items = not_english_fields(responses, knowledge)
    if not items:
        return
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith("q2_metric."):
        frame, level = frame.f_back, level + 1
    first, field = items[0]
    warnings.warn(
        not_english_message(len(items), len(responses), "items", f"item {first}, its {field}"),
        NotEnglishWarning,
        stacklevel=level,
    )


def check_histories(
    histories: Sequence[Sequence[str]] | None, count: int, field_name: str = "histories"
) -> list[list[str]]:
    """One list of turns per response (None: no history for any), checked before any model work;
    the turns as the models read them (`clean_text`)."""
    if histories is None:
        return [[] for _ in range(count)]
    if isinstance(histories, str) or len(histories) != count:
        got = "a string" if isinstance(histories, str) else f"{len(histories)} items"
        raise Q2InputError(
            f"field '{field_name}' must hold one list of turns per response ({count}), got {got}"
        )
    out = []
    for i, turns in enumerate(histories):
        error = item_error(f"item {i}", {}, turns, field_name)  # the one item check
        if error is not None:
            raise Q2InputError(error)
        out.append([] if turns is None else [clean_text(str.__str__(t)) for t in turns])
    return out
