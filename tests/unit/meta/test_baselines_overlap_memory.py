"""The overlap baseline streams its tokenized documents: at any time only a pair or so is alive,
however many pairs there are (it used to keep every Doc of both sides until the end), with the
same scores as a hand computation."""

import pytest
import spacy

from q2_metric.meta.baselines import overlap_scores


class Token:
    def __init__(self, text):
        self.text, self.is_stop, self.is_punct = text, text in {"the", "is", "a"}, text in {".", ","}


class Doc(list):
    alive = 0
    peak = 0

    def __init__(self, text):
        super().__init__(Token(w) for w in text.replace(".", " .").split())
        Doc.alive += 1
        Doc.peak = max(Doc.peak, Doc.alive)

    def __del__(self):
        Doc.alive -= 1


class CountingTokenizer:
    """A whitespace tokenizer that counts the documents alive at once."""

    def pipe(self, texts, batch_size=1000):
        for text in texts:
            yield Doc(text)


class Nlp:
    tokenizer = CountingTokenizer()


def test_documents_are_not_kept():
    n = 2000
    responses = [f"Paris is the capital {i}." for i in range(n)]
    knowledge = [f"The capital of France is Paris {i}." for i in range(n)]
    Doc.alive = Doc.peak = 0
    scores = overlap_scores(responses, knowledge, Nlp(), batch_size=16)
    assert len(scores) == n
    assert Doc.peak <= 4  # a pair being scored (and the next being made), not 2 * n
    # by hand: response {paris, capital, i}, knowledge {capital, of, france, paris, i}:
    # 3 shared, precision 3/3, recall 3/5, F1 = 2 * 1 * 0.6 / 1.6 = 0.75
    assert scores[0] == scores[-1] == pytest.approx(0.75)


def test_same_scores_with_spacy_in_any_batch_size():
    nlp = spacy.blank("en")
    responses = ["Paris is the capital of France.", "I love dogs!", ""]
    knowledge = ["PARIS is the capital city of France.", "Cats are nice.", "Anything."]
    # by hand (spaCy's English stop words: is, the, of): {paris, capital, france} vs
    # {paris, capital, city, france}: 3 shared, P 1, R 3/4, F1 6/7; nothing shared; empty response: 0
    for batch in (1, 2, 256):
        assert overlap_scores(responses, knowledge, nlp, batch_size=batch) == pytest.approx([6 / 7, 0.0, 0.0])
