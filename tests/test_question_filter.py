"""Rules 3-4: the personal filter and the question filter."""

from q2_metric import question_filter as qf
from q2_metric.components import NO_ANSWER, Answer
from q2_metric.config import Q2Config
from q2_metric.models.spacy_parser import SpacyParser


def test_personal_rule_on_dependency_labels():
    assert qf.is_personal([("What", "dobj"), ("do", "aux"), ("you", "nsubj"), ("like", "ROOT")])
    assert qf.is_personal([("Where", "advmod"), ("is", "ROOT"), ("My", "poss"), ("dog", "nsubj")])
    # "you" as an object is not personal; "I" as nsubj is
    assert not qf.is_personal([("Who", "nsubj"), ("loves", "ROOT"), ("you", "dobj")])
    assert qf.is_personal([("I", "nsubj")])
    assert not qf.is_personal([("their", "poss"), ("dog", "nsubj")])


def test_personal_rule_with_real_parse():
    parser = SpacyParser(Q2Config())
    questions = ["What do you like to watch?", "What is your favourite show?",
                 "Who hosted The Joy of Painting?"]
    flags = [qf.is_personal(p.tokens) for p in parser.parse(questions)]
    assert flags == [True, True, False]


def test_valid_question_needs_an_answer_equal_to_the_candidate():
    assert qf.is_valid_question("The Joy of Painting", Answer("joy of painting!"))
    assert not qf.is_valid_question("Bob Ross", Answer("Ross"))
    assert not qf.is_valid_question("Bob Ross", NO_ANSWER)


def test_single_mode_keeps_the_top_ranked_valid_question():
    statuses = [qf.PERSONAL, qf.NO_MATCH, qf.VALID, qf.VALID]
    assert qf.select_questions(statuses, "single") == [qf.PERSONAL, qf.NO_MATCH, qf.VALID, qf.UNUSED]
    assert qf.select_questions(statuses, "multi") == statuses
