"""Rules 2-7 and 9 pinned with scripted components and hand-computed scores."""

import math

import pytest

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL, NO_ANSWER, Answer, ParsedText
from q2_metric.config import Q2Config
from q2_metric.models.hf_qg import clean_question, qg_input
from q2_metric.steps import question_filter as qf
from q2_metric.steps.response_scores import fallback_score
from q2_metric.steps.span_scores import nli_pair, span_score
from q2_metric.testing.scripted import ScriptedNLI, ScriptedParser, ScriptedQA, ScriptedQG, scripted_scorer

R0 = "Bob Ross hosted The Joy of Painting on PBS."
K0 = "Bob Ross was the host of The Joy of Painting, shown on NBC."
R1 = "I like it."
K1 = "Painting is an art."
R2 = "Paris is in France."
K2 = "Paris is the capital of France."
R3 = "Rome and Oslo."
K3 = "Rome is old."

PARSES = {
    R0: ParsedText(entities=["Bob Ross", "The Joy of Painting", "PBS"], noun_chunks=["bob ross", "I"]),
    R1: ParsedText(noun_chunks=["I", "it"]),
    "What did your friend host?": ParsedText(
        tokens=[("What", "dobj"), ("did", "aux"), ("your", "poss"), ("friend", "nsubj"), ("host", "ROOT")]
    ),
    "What do you like?": ParsedText(
        tokens=[("What", "dobj"), ("do", "aux"), ("you", "nsubj"), ("like", "ROOT")]
    ),
    "Who did you see?": ParsedText(
        tokens=[("Who", "dobj"), ("did", "aux"), ("you", "nsubj"), ("see", "ROOT")]
    ),
}
QUESTIONS = {
    ("Bob Ross", R0): ["Who hosted the show?", "Who did you see?"],
    ("The Joy of Painting", R0): ["What did your friend host?", "What did Bob Ross host?"],
    ("PBS", R0): ["Where was it shown?", "Which network aired it?"],
    ("it", R1): ["What do you like?"],
}
ANSWERS = {
    ("Who hosted the show?", R0): "Bob Ross",
    ("What did Bob Ross host?", R0): "the Joy of Painting",
    ("Where was it shown?", R0): "PBS",
    ("Which network aired it?", R0): "PBS",
    ("Who hosted the show?", K0): "Bob Ross",
    ("What did Bob Ross host?", K0): "The Joy of Painting, shown",
    ("Where was it shown?", K0): "NBC",
    ("Which network aired it?", K0): None,
}
LABELS = {
    nli_pair("What did Bob Ross host?", "The Joy of Painting", "The Joy of Painting, shown"): ENTAILMENT,
    nli_pair("Where was it shown?", "PBS", "NBC"): CONTRADICTION,
    (K1.lower(), R1.lower()): CONTRADICTION,  # the fallback compares lower-cased texts
}


def make_scorer(config=None):
    return scripted_scorer(
        config,
        parser=ScriptedParser(PARSES),
        qg=ScriptedQG(QUESTIONS),
        qa=ScriptedQA(ANSWERS),
        nli=ScriptedNLI(LABELS),
    )


def run(config=None):
    scorer = make_scorer(config)
    return scorer, scorer.score([R0, R1, R2, R3], [K0, K1, K2, K3])


def test_rule2_qg_input_and_prefix():
    assert qg_input("PBS", R0) == f"answer: PBS  context: {R0} </s>"
    assert clean_question("question: Where was it shown?") == "Where was it shown?"
    # the released code: decode(...).replace("question: ", "", 1), wherever it stands, no stripping
    assert clean_question("Which question: is this?") == "Which is this?"
    assert clean_question(" question: a question: b") == " a question: b"


def test_rule6_span_score_table():
    assert span_score(NO_ANSWER, 0.0, None) == 0.0
    assert span_score(Answer("Bob Ross"), 1.0, None) == 1.0
    assert span_score(Answer("Ross"), 0.5, ENTAILMENT) == 1.0
    assert span_score(Answer("Ross"), 0.5, CONTRADICTION) == 0.0
    assert span_score(Answer("Ross"), 0.5, NEUTRAL) == 0.5
    assert nli_pair("Who?", "Bob Ross", "Ross") == ("Who? Ross.", "Who? Bob Ross.")


def test_rule7_fallback_scores():
    assert [fallback_score(x) for x in (ENTAILMENT, NEUTRAL, CONTRADICTION)] == [1.0, 0.5, 0.0]


def test_paper_defaults_hand_computed():
    _, result = run()
    r0, r1, r2, r3 = result.responses
    # R0: Bob Ross F1=1 -> 1; Joy of Painting F1=6/7, entailment -> 1; PBS vs NBC contradiction -> 0
    assert r0.q2 == pytest.approx(2 / 3)
    assert r0.q2_no_nli == pytest.approx((1 + 6 / 7 + 0) / 3)
    statuses = {(t.candidate, t.question): t.status for t in r0.questions}
    # single mode: Bob Ross's rank-0 question is valid, so rank 1 is never parsed nor asked
    assert statuses[("Bob Ross", "Who did you see?")] == qf.UNUSED
    assert statuses[("The Joy of Painting", "What did your friend host?")] == qf.PERSONAL
    assert statuses[("PBS", "Which network aired it?")] == qf.UNUSED
    joy = next(t for t in r0.valid_questions if t.candidate == "The Joy of Painting")
    assert (joy.knowledge_answer, joy.nli_label, joy.score) == ("The Joy of Painting, shown", ENTAILMENT, 1.0)
    assert joy.f1 == pytest.approx(6 / 7) and joy.score_no_nli == pytest.approx(6 / 7)
    # R1: the only question is personal -> end-to-end NLI fallback, contradiction -> 0
    assert (r1.fallback, r1.fallback_label, r1.q2, r1.q2_no_nli) == (True, CONTRADICTION, 0.0, 0.0)
    # R2: both entities answered identically from the knowledge
    assert r2.q2 == 1.0
    # R3: Rome answered (1), Oslo not answerable (0)
    assert r3.q2 == 0.5
    s = result.system
    assert s.q2 == pytest.approx((2 / 3 + 0 + 1 + 0.5) / 4)
    assert s.q2_no_nli == pytest.approx(((1 + 6 / 7) / 3 + 0 + 1 + 0.5) / 4)
    assert s.coverage == pytest.approx(3 / 4)
    assert s.num_valid_questions == 7
    assert s.no_answer_share == pytest.approx(1 / 7)


def test_multi_mode_keeps_every_valid_question():
    _, result = run(Q2Config(question_mode="multi"))
    # R0 now also scores "Which network aired it?" (no answer in the knowledge -> 0)
    assert result.responses[0].q2 == pytest.approx((1 + 1 + 0 + 0) / 4)


def test_personal_filter_off_lets_personal_questions_through():
    _, result = run(Q2Config(personal_filter=False))
    # "What do you like?" is now asked of R1; the scripted QA has no answer -> still fallback
    r1 = result.responses[1]
    assert r1.questions[0].status == qf.NO_MATCH and r1.fallback


def test_dnli_variant_discards_unanswerable_when_one_is_answerable():
    _, result = run(Q2Config.dnli())
    assert result.responses[3].q2 == 1.0  # Oslo discarded, Rome kept
    oslo = next(t for t in result.responses[3].questions if t.candidate == "Oslo")
    assert oslo.status == qf.DISCARDED
    # R0's PBS question is answerable (NBC): nothing discarded, contradiction still counts
    assert result.responses[0].q2 == pytest.approx(2 / 3)


def test_no_nli_option_uses_f1_for_span_scores():
    _, result = run(Q2Config(use_nli=False))
    assert result.responses[0].q2 == pytest.approx((1 + 6 / 7 + 0) / 3)


def test_fallback_off_leaves_uncovered_responses_nan():
    _, result = run(Q2Config(fallback_nli=False))
    assert math.isnan(result.responses[1].q2)
    assert result.system.num_skipped == 1


def test_nli_runs_only_where_answers_differ_and_once_per_stage():
    scorer, _ = run()
    # span NLI for Joy of Painting and PBS (one call), then one fallback (one call)
    assert scorer._nli.calls == [2, 1]


def test_identical_pairs_are_computed_once():
    scorer = make_scorer()
    scorer.score([R2, R2, R2], [K2, K2, K2])
    assert scorer._qg.calls == [2]  # (Paris, R2) and (France, R2)
    assert scorer._qa.calls == [2, 2]  # from the response, then from the knowledge
    assert scorer._parser.calls[0] == 1


def test_stage_calls_do_not_grow_with_batch_size():
    for n in (1, 40):
        scorer = make_scorer()
        responses = [f"Person{i} met Person{i + 1} in City{i}." for i in range(n)]
        knowledge = [f"Person{i} met Person{i + 1}." for i in range(n)]
        result = scorer.score(responses, knowledge)
        assert len(scorer._qg.calls) == 1 and len(scorer._qa.calls) == 2 and len(scorer._nli.calls) <= 1
        assert scorer._qg.calls[0] == 3 * n
        assert all(r.q2 == pytest.approx(2 / 3) for r in result.responses)


def test_signature_records_options():
    _scorer, result = run(Q2Config.dnli())
    sig = str(result.signature)
    assert "personal:no" in sig and "dnli:yes" in sig and "mode:single" in sig
    assert "qg:scripted-ScriptedQG" in sig and "transformers:" in sig
    assert result.signature.to_dict()["qadec"] == "reference-winmax-stride128"
    assert result.signature.to_dict()["fallback"] == "e2e-nli:1/0.5/0-lower"
    assert result.signature.to_dict()["dtype"] == "float32"
    assert run()[1].signature.to_dict()["personal"] == "yes"
    assert run(Q2Config(personal_subjects=("i",)))[1].signature.to_dict()["personal"] == "yes-i/my,your"
