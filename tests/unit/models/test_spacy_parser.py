"""The spaCy parser's cheap dependency parse, which the personal filter reads."""

import csv

import pytest
from support.data import ANNOTATED

from q2_metric import Q2Config
from q2_metric.models.spacy_parser import SpacyParser, trailing_skippable


@pytest.fixture(scope="module")
def parser():
    return SpacyParser(Q2Config())


def question_like_texts() -> list[str]:
    """Questions in the released pipeline's forms about the annotated set's responses and
    knowledge, with the whitespace a generated question may carry (a whitespace token is the one
    the attribute ruler relabels)."""
    with open(ANNOTATED / "dodeca_consistent.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))[:60]
    texts = []
    for r in rows:
        texts += [
            f"what is {r['response'].split(' . ')[0]}?",
            f"who said that {r['knowledge'][:80]}?",
            f"do you know  your {r['topic']} ?",
            f" where did I see {r['topic']}?\n",
        ]
    return texts


def test_dependencies_are_the_full_parse_s_tokens(parser):
    """Expected values: the tokens of the whole pipeline's parse (the released code's `nlp(q)`)."""
    texts = question_like_texts()
    assert trailing_skippable(parser.nlp.pipe_names)  # something is left out on this model
    full = [p.tokens for p in parser.parse(texts)]
    assert parser.dependencies(texts) == full
    assert any(dep == "dep" for tokens in full for _, dep in tokens)  # whitespace relabelled, kept
    assert {"nsubj", "poss"} <= {dep for tokens in full for _, dep in tokens}


PERSONAL_WORDS = {"i", "you", "my", "your"}


def test_questions_without_the_words_are_tokenized_not_parsed(parser):
    """Expected values: the full pipeline's parse (the released code's `nlp(q)`) for every text
    with one of the words among its tokens; for the others, the same tokens with no label. The
    texts include spaCy's contractions, whose exceptions make "I" and "you" out of "Im" and
    "youre" (no search of the text for the words could see them)."""
    texts = question_like_texts() + ["Im sure about it?", "youre a fan of jazz?", "is it mine?"]
    full = [p.tokens for p in parser.parse(texts)]
    assert parser.keeps_tokens
    got = parser.dependencies(texts, PERSONAL_WORDS)
    with_words = [any(w.lower() in PERSONAL_WORDS for w, _ in tokens) for tokens in full]
    assert 0 < sum(with_words) < len(texts)
    assert with_words[-3:] == [True, True, False]
    for tokens, mine, personal in zip(full, got, with_words):
        assert mine == (tokens if personal else [(w, "") for w, _ in tokens])


def test_a_pipeline_that_can_retokenize_parses_every_text():
    """A component outside the token-keeping ones (here spaCy's `merge_noun_chunks`) could make
    the parse's tokens differ from the tokenizer's: then `words` skips nothing."""
    p = SpacyParser(Q2Config())
    p.nlp.add_pipe("merge_noun_chunks")
    texts = ["is it mine?", "what do you like?"]
    assert not p.keeps_tokens
    assert p.dependencies(texts, PERSONAL_WORDS) == [x.tokens for x in p.parse(texts)]
    assert all(dep for tokens in p.dependencies(texts, PERSONAL_WORDS) for _, dep in tokens)
