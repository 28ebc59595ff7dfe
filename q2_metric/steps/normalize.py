"""Answer normalisation and token F1, exactly as the released Q² code defines them."""

from __future__ import annotations

import re
import string
from collections import Counter

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


def f1_score(gold: str, prediction: str) -> float:
    """SQuAD-style token F1 between normalised texts; an empty prediction scores 0.

    Examples:
        >>> f1_score("the 1980s", "1980s and 1990s")
        0.5
    """
    if prediction == "":
        return 0.0
    gold_tokens = normalize_answer(gold).split()
    pred_tokens = normalize_answer(prediction).split()
    common = Counter(gold_tokens) & Counter(pred_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def answers_match(candidate: str, answer: str) -> bool:
    """True when two answers are equal after normalisation."""
    return normalize_answer(candidate) == normalize_answer(answer)
