"""Rules 3-4: the personal filter and the question filter."""

from q2_metric.components import NO_ANSWER, Answer
from q2_metric.config import Q2Config
from q2_metric.models.spacy_parser import SpacyParser
from q2_metric.results import QuestionTrace
from q2_metric.steps import question_filter as qf


def test_personal_rule_on_dependency_labels():
    assert qf.is_personal([("What", "dobj"), ("do", "aux"), ("you", "nsubj"), ("like", "ROOT")])
    assert qf.is_personal([("Where", "advmod"), ("is", "ROOT"), ("My", "poss"), ("dog", "nsubj")])
    # "you" as an object is not personal; "I" as nsubj is
    assert not qf.is_personal([("Who", "nsubj"), ("loves", "ROOT"), ("you", "dobj")])
    assert qf.is_personal([("I", "nsubj")])
    assert not qf.is_personal([("their", "poss"), ("dog", "nsubj")])


def test_personal_rule_with_real_parse():
    parser = SpacyParser(Q2Config())
    questions = [
        "What do you like to watch?",
        "What is your favourite show?",
        "Who hosted The Joy of Painting?",
    ]
    flags = [qf.is_personal(p.tokens) for p in parser.parse(questions)]
    assert flags == [True, True, False]


def test_valid_question_needs_an_answer_equal_to_the_candidate():
    assert qf.is_valid_question("The Joy of Painting", Answer("joy of painting!"))
    assert not qf.is_valid_question("Bob Ross", Answer("Ross"))
    assert not qf.is_valid_question("Bob Ross", NO_ANSWER)


def test_single_mode_asks_rank_by_rank_and_stops_at_the_first_valid_question():
    from q2_metric.results import Pair, ResponseScore
    from q2_metric.testing.scripted import ScriptedParser, ScriptedQA

    response = "Miami is in Florida."
    qa = ScriptedQA(
        {
            ("q0 miami", response): "Florida",
            ("q1 miami", response): "Miami",
            ("q0 florida", response): "Florida",
        }
    )
    pair = Pair(response, "", ResponseScore(0, 0.0, 0.0, candidates=["Miami", "Florida"]))
    pair.result.questions = [
        QuestionTrace(c, f"q{r} {c.lower()}", r, qf.UNUSED, occurrence=j)
        for j, c in enumerate(["Miami", "Florida"])
        for r in range(3)
    ]
    calls = qf.filter_questions([pair], ScriptedParser(), qa, mode="single", personal_filter=True)
    assert [t.status for t in pair.result.questions] == [
        qf.NO_MATCH,
        qf.VALID,
        qf.UNUSED,
        qf.VALID,
        qf.UNUSED,
        qf.UNUSED,
    ]
    assert calls == 2 and qa.calls == [2, 1]  # rank 0 for both, rank 1 only for Miami


def test_the_filter_tells_the_parser_which_words_make_a_question_personal():
    """The words passed are exactly those `is_personal` reads (lower-cased): a parser may leave a
    question without them unparsed, since no label of it can make the question personal."""
    from q2_metric.components import ParsedText
    from q2_metric.results import Pair, ResponseScore
    from q2_metric.testing.scripted import ScriptedQA

    class Recording:
        def __init__(self):
            self.asked = []

        def parse(self, texts):
            return [ParsedText(tokens=[(w, "nsubj") for w in t.split()]) for t in texts]

        def dependencies(self, texts, words=None):
            self.asked.append((list(texts), words))
            return [[(w, "nsubj" if w.lower() in words else "") for w in t.split()] for t in texts]

    response = "Miami is in Florida."
    questions = ["where is Miami", "where do You live", "where is OUR home"]
    pair = Pair(response, "", ResponseScore(0, 0.0, 0.0, candidates=["Miami"] * 3))
    pair.result.questions = [
        QuestionTrace("Miami", q, 0, qf.UNUSED, occurrence=i) for i, q in enumerate(questions)
    ]
    parser = Recording()
    qf.filter_questions(
        [pair], parser, ScriptedQA({}), mode="multi", personal_filter=True, possessives=("My", "Our")
    )
    assert parser.asked == [(questions, {"i", "you", "my", "our"})]
    assert [t.status for t in pair.result.questions] == [qf.NO_MATCH, qf.PERSONAL, qf.NO_MATCH]


def test_a_languages_token_rules_decide_the_match():
    """German articles: "die Brücke" answered "Brücke" matches when "die" is an article; the
    English rule keeps "die" (no match). Without rules the released rule is unchanged."""
    from q2_metric.steps.normalize import TokenRules

    german = TokenRules(articles=("der", "die", "das"))
    assert qf.is_valid_question("die Brücke", Answer("Brücke"), german)
    assert not qf.is_valid_question("die Brücke", Answer("Brücke"))
    assert qf.is_valid_question("the bridge", Answer("Bridge"))
    # a letter with a combining mark and its precomposed form are one letter under the rules
    assert qf.is_valid_question("Cafe\u0301", Answer("café"), german)
    assert not qf.is_valid_question("Cafe\u0301", Answer("café"))
    assert not qf.is_valid_question("Brücke", NO_ANSWER, german)


def test_the_filter_passes_the_rules_on():
    from q2_metric.results import Pair, ResponseScore
    from q2_metric.steps.normalize import TokenRules
    from q2_metric.testing.scripted import ScriptedParser, ScriptedQA

    response = "Wir gingen über die Brücke."
    qa = ScriptedQA({("q", response): "Brücke"})
    pair = Pair(response, "", ResponseScore(0, 0.0, 0.0, candidates=["die Brücke"]))
    pair.result.questions = [QuestionTrace("die Brücke", "q", 0, qf.UNUSED, occurrence=0)]
    rules = TokenRules(articles=("die",))
    qf.filter_questions([pair], ScriptedParser(), qa, mode="single", personal_filter=False, rules=rules)
    assert [t.status for t in pair.result.questions] == [qf.VALID]
