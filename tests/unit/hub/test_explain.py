"""The one explanation sentence per response (`explain.reason_line`): written by the engine into
`ResponseScore.reason`, so `q2 score`'s `reason` column, `evaluate`'s details and the harness's
explanation say the same. Expected sentences are written by hand from the scripted components'
rules (`q2_metric/testing/scripted.py`: candidates = capitalised runs, question "what about X?",
answer = X where the text contains it, NLI entailment iff the hypothesis occurs in the premise)."""

from __future__ import annotations

import csv

from q2_metric.components import CONTRADICTION
from q2_metric.corpus.files import score_file
from q2_metric.display import reason_line
from q2_metric.results import ResponseScore
from q2_metric.testing.scripted import ScriptedNLI, scripted_scorer

RESPONSES = [
    "Bob Ross hosted a show.",  # one valid question, same answer from the knowledge
    "Bob Ross met Steve Ross.",  # two valid questions: one the same, one unanswered
    "it was fun.",  # no candidate: fallback, neutral
    "",  # empty
    "Bob Ross liked PBS.",  # the knowledge writes "pbs": the same answer after normalisation
]
KNOWLEDGE = [
    "Bob Ross hosted a show.",
    "Bob Ross painted.",
    "painting is fun for many.",
    "Bob Ross.",
    "Bob Ross was on pbs.",
]
EXPECTED = [
    "The question was answered the same way from the knowledge.",
    "1 of 2 questions was answered the same way from the knowledge; 1 was not answered by the knowledge.",
    "No valid question (the response has no answer candidate); end-to-end NLI: the knowledge neither "
    "entails nor contradicts the response.",
    "Not scored: empty response.",
    "All 2 questions were answered the same way from the knowledge.",
]


def test_engine_writes_one_sentence_per_response():
    result = scripted_scorer().score(RESPONSES, KNOWLEDGE)
    assert [r.reason for r in result.responses] == EXPECTED
    # the function every front-end calls gives the same sentence on the finished result
    assert [reason_line(r) for r in result.responses] == EXPECTED
    assert [d["reason"] for d in result.to_dict(details=True)["details"]] == EXPECTED  # evaluate's details


def test_fallback_sentence_names_its_label_and_fallback_off_is_not_scored():
    contradicts = ScriptedNLI(rule=lambda premise, hypothesis: CONTRADICTION)
    result = scripted_scorer(nli=contradicts).score(["it was fun."], ["painting is fun."])
    assert result.responses[0].reason == (
        "No valid question (the response has no answer candidate); end-to-end "
        "NLI: the knowledge contradicts the response."
    )
    from q2_metric.config import Q2Config

    off = scripted_scorer(Q2Config(fallback_nli=False)).score(["it was fun."], ["painting is fun."])
    assert off.responses[0].reason == "Not scored: no valid question (fallback off)."


def test_fallback_over_knowledge_windows_says_how_labels_combine():
    res = ResponseScore(0, 0.5, 0.5, fallback=True, fallback_label="neutral", fallback_windows=3)
    assert reason_line(res) == (
        "No valid question (the response has no answer candidate); end-to-end NLI: the knowledge neither entails "
        "nor contradicts the response, read in 3 knowledge windows (entailment if any window entails, else "
        "contradiction if any contradicts, else neutral)."
    )


def test_q2_score_reason_column_is_the_sentence(tmp_path):
    data = tmp_path / "in.csv"
    with open(data, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["response", "knowledge"])
        writer.writerows(zip(RESPONSES, KNOWLEDGE))
    score_file(scripted_scorer(), data, tmp_path / "out.csv", cache_dir=tmp_path / "cache")
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        assert [row["reason"] for row in csv.DictReader(f)] == EXPECTED
    # a second run reads every response from the cache: the same sentences
    score_file(scripted_scorer(), data, tmp_path / "again.csv", cache_dir=tmp_path / "cache")
    with open(tmp_path / "again.csv", newline="", encoding="utf-8") as f:
        assert [row["reason"] for row in csv.DictReader(f)] == EXPECTED


def test_evaluate_details_reason_is_the_sentence():
    import evaluate

    import q2_metric

    metric = evaluate.load(q2_metric.module_path())
    metric.scorer = lambda config: scripted_scorer(config)  # the module's scorer, scripted
    out = metric.compute(predictions=RESPONSES, references=KNOWLEDGE, return_details=True)
    assert [d["reason"] for d in out["details"]] == EXPECTED


def test_a_question_whose_token_f1_is_0_is_not_partly_matched():
    """Neutral (or no span NLI) with a token F1 of 0: no word in common, so no "partly matched"
    (issue 49). Hand-built traces: F1 0.5 neutral is partly matched, F1 0 neutral is not."""
    from q2_metric.results import QuestionTrace

    def trace(f1, nli):
        return QuestionTrace(
            "x", "q?", 0, "valid", knowledge_answer="a", knowledge_has_answer=True, f1=f1, nli_label=nli
        )

    res = ResponseScore(0, 0.25, 0.25, questions=[trace(0.5, "neutral"), trace(0.0, "neutral")])
    assert reason_line(res) == (
        "1 of 2 questions was partly matched (token F1, NLI neutral); 1 was answered with no word "
        "in common (token F1 0, NLI neutral)."
    )
    assert reason_line(ResponseScore(0, 0.0, 0.0, questions=[trace(0.0, None)])) == (
        "The question was answered with no word in common (token F1 0, NLI neutral)."
    )


def test_every_reason_sentence_has_a_verb():
    """Each verdict's sentence is a sentence: before, "The question not answered by the knowledge."
    and "The question contradicted." had no verb. Expected sentences written by hand."""
    from q2_metric.display import span_reason
    from q2_metric.results import QuestionTrace, Span

    def trace(f1, nli, answered=True):
        return QuestionTrace(
            "x", "q?", 0, "valid", knowledge_answer="a", knowledge_has_answer=answered, f1=f1, nli_label=nli
        )

    one = {
        "The question was answered the same way from the knowledge.": trace(1.0, None),
        "The question was answered differently, but NLI found the answers consistent (entailment).": trace(
            0.5, "entailment"
        ),
        "The question was partly matched (token F1, NLI neutral).": trace(0.5, "neutral"),
        "The question was answered with no word in common (token F1 0, NLI neutral).": trace(0.0, "neutral"),
        "The question was answered in contradiction of the response (NLI).": trace(0.0, "contradiction"),
        "The question was not answered by the knowledge.": trace(0.0, None, answered=False),
    }
    for sentence, t in one.items():
        assert reason_line(ResponseScore(0, 0.5, 0.5, questions=[t])) == sentence
    two = ResponseScore(0, 0.0, 0.0, questions=[trace(0.0, "contradiction"), trace(0.0, "contradiction")])
    assert reason_line(two) == "All 2 questions were answered in contradiction of the response (NLI)."
    span = Span(0, 1, "x", "x", 0, supported=False, knowledge_has_answer=False, f1=0.0)
    assert span_reason(span) == "Its question was not answered by the knowledge."
    assert span_reason(Span(0, 1, "x", "x", 0)) == "No valid question was asked about it."
