"""`q2 demo`'s counts come from the contract's `Outcome` (issue 49: it said "Scored 4 responses"
when 2 were empty and unscored, and took the mean over 4).

Expected values are hand-made from the scripted components' rules (`q2_metric.testing.scripted`:
a capitalised span is a candidate, answered alike when it occurs in the knowledge) and the
engine's stated reasons; nothing is read back from the code under test."""

from q2_metric.cli.demo import not_scored, scored_line
from q2_metric.config import Q2Config
from q2_metric.frontend import Item, score_items
from q2_metric.testing.scripted import scripted_scorer

GOOD = "Bob Ross hosted the show."


def test_the_line_counts_only_what_has_a_score_with_each_reason():
    items = [
        Item("response 0", GOOD, GOOD),  # "Bob Ross" answered alike: 1.0
        Item("response 1", "", GOOD),  # empty
        Item("response 2", "it was fun.", "the show was fun"),  # no capitalised span: no question
        Item("response 3", 7, GOOD),  # bad
        Item("response 4", GOOD, "  "),  # empty knowledge
    ]
    outcome = score_items(scripted_scorer(Q2Config(fallback_nli=False, device="cpu")), items)
    assert outcome.counts == {"scored": 2, "empty": 2, "bad": 1}
    assert outcome.system.num_scored == 1  # response 2: no valid question, fallback off: no number
    assert not_scored(outcome) == {
        "empty response": 1,
        "no valid question (fallback off)": 1,
        "response 3: field 'response' must be a string, got int.": 1,
        "empty knowledge": 1,
    }
    assert scored_line(5, 5, "s.csv", False, not_scored(outcome)).startswith(
        "Scored 1 of the 5 responses from s.csv; 4 not scored (1 empty response, "
    )


def test_all_scored_says_so():
    outcome = score_items(scripted_scorer(), [Item("response 0", GOOD, GOOD), Item("response 1", GOOD, GOOD)])
    assert not_scored(outcome) == {}
    assert scored_line(2, 2, "s.csv", False, not_scored(outcome)) == "Scored 2 responses from s.csv"
