"""One threshold rule in the whole project (issue 36), the released code's: a score <= T is
inconsistent (`precision_recall.py`: `if score <= threshold` -> ungrounded), in meta-eval's Table 3
as in `q2 score --threshold` (`display.decide`). Expected values by hand."""

from q2_metric.display import CONSISTENT, decide
from q2_metric.meta.stats import classification_report


def test_a_score_at_the_threshold_is_inconsistent():
    r = classification_report([0.5], [0], threshold=0.5)
    assert r["accuracy"] == 1.0 and r["inconsistent"]["recall"] == 1.0
    # 0.51 and 0.9 consistent, 0.5 and 0.2 inconsistent: all four right
    assert classification_report([0.51, 0.9, 0.5, 0.2], [1, 1, 0, 0], threshold=0.5)["accuracy"] == 1.0
    # a consistent response at exactly 0.5 is called inconsistent: 3 of 4
    assert classification_report([0.5, 0.9, 0.1, 0.7], [1, 1, 0, 1], threshold=0.5)["accuracy"] == 0.75


def test_table3_and_q2_score_decide_alike():
    scores = [0.0, 0.25, 0.3, 0.3 + 1e-12, 0.5, 0.7, 1.0]
    for t in (0.0, 0.3, 0.5, 1.0):
        by_decide = [int(decide(s, t) == CONSISTENT) for s in scores]
        # a label equal to the decision makes every prediction right iff both rules agree
        assert classification_report(scores, by_decide, threshold=t)["accuracy"] == 1.0
