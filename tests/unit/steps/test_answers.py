"""The knowledge answers stage returns what it found (`KnowledgeAnswer`), and the DNLI rule's `kept`.
Expected values are worked out by hand from the scripted QA's answers."""

from __future__ import annotations

import pytest

from q2_metric.results import VALID, Pair, QuestionTrace, ResponseScore
from q2_metric.steps.answers import answer_from_knowledge
from q2_metric.testing.scripted import ScriptedQA

KNOWLEDGE = "Bob Ross hosted The Joy of Painting on PBS."


def _pair(*candidates: str) -> Pair:
    pair = Pair("response", KNOWLEDGE, ResponseScore(0, float("nan"), float("nan")))
    pair.result.questions = [
        QuestionTrace(c, f"q {c}", 0, VALID, occurrence=j) for j, c in enumerate(candidates)
    ]
    return pair


def test_each_valid_question_gets_its_answer_and_f1_and_nothing_is_written_on_the_trace():
    pair = _pair("Bob Ross", "PBS")
    qa = ScriptedQA({("q Bob Ross", KNOWLEDGE): "ross", ("q PBS", KNOWLEDGE): None})
    found = answer_from_knowledge([pair], qa)
    assert [(a.trace.candidate, a.text, a.has_answer, a.kept) for a in found] == [
        ("Bob Ross", "ross", True, True),
        ("PBS", "", False, True),
    ]
    # token F1 of "bob ross" and "ross": precision 1, recall 1/2 -> 2/3; "no answer" -> 0
    assert found[0].f1 == pytest.approx(2 / 3) and found[1].f1 == 0.0
    assert [t.knowledge_answer for t in pair.result.questions] == [None, None]  # the engine records them
    assert qa.calls == [2]


def test_dnli_keeps_only_the_answerable_ones_and_all_when_none_is():
    some = _pair("Bob Ross", "PBS")
    none = _pair("Paris")
    qa = ScriptedQA(
        {("q Bob Ross", KNOWLEDGE): "Bob Ross", ("q PBS", KNOWLEDGE): None, ("q Paris", KNOWLEDGE): None}
    )
    found = answer_from_knowledge([some, none], qa, discard_unanswerable=True)
    assert [(a.trace.candidate, a.kept) for a in found] == [
        ("Bob Ross", True),
        ("PBS", False),
        ("Paris", True),
    ]
    assert [a.unanswered for a in found] == [False, True, True]


def test_token_rules_of_a_language_give_the_f1():
    """A Chinese candidate and answer by characters: "北京" against "北京市" shares 2 of 3
    characters: precision 2/3, recall 1 -> F1 0.8; the English rule sees two different words: 0."""
    from q2_metric.steps.normalize import TokenRules

    knowledge = "北京市是首都"
    pair = Pair("response", knowledge, ResponseScore(0, float("nan"), float("nan")))
    pair.result.questions = [QuestionTrace("北京", "q", 0, VALID, occurrence=0)]
    qa = ScriptedQA({("q", knowledge): "北京市"})
    (by_characters,) = answer_from_knowledge([pair], qa, rules=TokenRules(split="characters"))
    assert by_characters.f1 == pytest.approx(0.8)
    (english,) = answer_from_knowledge([pair], qa)
    assert english.f1 == 0.0
