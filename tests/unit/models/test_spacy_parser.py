"""The spaCy parser's cheap dependency parse, which the personal filter reads."""

import csv

import pytest
from support.data import SHARED

from q2_metric import Q2Config
from q2_metric.models.spacy_parser import SpacyParser, trailing_skippable


@pytest.fixture(scope="module")
def parser():
    return SpacyParser(Q2Config())


def question_like_texts() -> list[str]:
    """Questions in the released pipeline's forms about the annotated set's responses and
    knowledge, with the whitespace a generated question may carry (a whitespace token is the one
    the attribute ruler relabels)."""
    with open(SHARED / "dodeca_consistent.csv", newline="", encoding="utf-8") as f:
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
