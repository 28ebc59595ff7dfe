"""`meta.agreement.compare`: the paper's configuration against a faster one on the same pairs.

The expected figures are computed by hand below from scripted components (nothing is read from
the code under test): the fast configuration's components differ from the base's in one question,
one knowledge answer and two NLI labels, chosen so that each stage's count and each figure is known."""

from __future__ import annotations

import math

import pytest

from q2_metric.meta.agreement import compare
from q2_metric.testing.scripted import ScriptedNLI, ScriptedQA, ScriptedQG, scripted_scorer

# candidates are runs of capitalised words (ScriptedParser); questions "what about X?"; the QA
# finds X in the text; NLI: entailment iff the hypothesis occurs in the premise, else neutral
R = ["Alice met Bob.", "Carol lives in Rome.", "Dave sang in Oslo.", "it was fun."]
K = ["Alice met Bob in Paris.", "Carol lives in Milan.", "Dave danced in Oslo.", "the show was fun"]
DAVE = {("what about Dave?", K[2]): "Dave Smith"}  # F1 2/3: NLI decides (entailment by the default rule)


def scorers():
    base = scripted_scorer(qa=ScriptedQA(DAVE))
    fast = scripted_scorer(
        qg=ScriptedQG({("Bob", R[0]): ["who is Bob?"]}),  # pair 0: Bob's question differs (and is invalid)
        qa=ScriptedQA({**DAVE, ("what about Rome?", K[1]): "Milan"}),  # pair 1: the knowledge answers Milan
        nli=ScriptedNLI(
            {
                ("what about Rome? Milan.", "what about Rome? Rome."): "entailment",
                ("what about Dave? Dave Smith.", "what about Dave? Dave."): "contradiction",
            }
        ),
    )
    return base, fast


def test_hand_computed_agreement():
    base, fast = scorers()
    report = compare(R, K, fast=fast, base=base, labels=[1, 0, 1, 0])
    # scores by hand:
    # pair 0: base Alice 1, Bob 1 -> 1.0; fast Alice 1 (Bob's question invalid) -> 1.0
    # pair 1: base Carol 1, Rome no answer 0 -> 0.5; fast Rome: Milan, F1 0, entailment -> 1 -> 1.0
    # pair 2: base Dave entailment 1, Oslo 1 -> 1.0; fast Dave contradiction 0 -> 0.5
    # pair 3: no candidate: fallback NLI, neutral in both -> 0.5
    assert [r.base_q2 for r in report.responses] == [1.0, 0.5, 1.0, 0.5]
    assert [r.fast_q2 for r in report.responses] == [1.0, 1.0, 0.5, 0.5]
    stages = {s.stage: (s.compared, s.differ) for s in report.stages}
    assert stages == {
        "questions": (6, 1),  # 2 + 2 + 2 questions, Bob's differs
        "response answers": (5, 0),  # the 5 identical questions, answered alike on the response
        "knowledge answers": (5, 1),  # Rome: no answer vs Milan
        "span NLI labels": (1, 1),  # Dave: entailment vs contradiction (Rome had no NLI in the base run)
        "fallback NLI labels": (1, 0),  # pair 3 fell back in both, neutral in both
    }
    assert report.stages[0].share == pytest.approx(1 / 6)
    change = report.score_change()
    # |change| = 0, 0.5, 0.5, 0: mean 0.25; 95th percentile: position 0.95 * 3 = 2.85 of [0, 0, .5, .5] -> 0.5
    assert change == {"mean_abs": 0.25, "p95_abs": 0.5, "max_abs": 0.5, "mean": 0.0}
    # at 0.5 (inconsistent iff <= 0.5): pair 1 inconsistent -> consistent, pair 2 the other way
    assert report.flipped == 2 and [r.flipped for r in report.responses] == [False, True, True, False]
    # ranks: base [3.5, 1.5, 3.5, 1.5], fast [3.5, 3.5, 1.5, 1.5]: centred [1,-1,1,-1] . [1,1,-1,-1] = 0
    assert report.spearman() == pytest.approx(0.0)
    assert report.base_q2 == report.fast_q2 == 0.75
    # labels [1, 0, 1, 0]: base separates them (AUC 1, both recalls 1); fast [1, 1, .5, .5]:
    # pairs (1,1) tie .5, (1,.5) 1, (.5,1) 0, (.5,.5) .5 -> AUC 2/4; each class half recalled
    assert report.labels == {
        "base": {"roc_auc": 1.0, "balanced_accuracy": 1.0},
        "fast": {"roc_auc": 0.5, "balanced_accuracy": 0.5},
    }
    per = report.responses
    assert (per[0].questions_differ, per[0].questions_compared, per[0].answers_compared) == (1, 2, 2)
    assert (per[1].answers_differ, per[1].answers_compared, per[1].labels_compared) == (1, 4, 0)
    assert (per[2].labels_differ, per[2].labels_compared) == (1, 1)
    assert (per[3].labels_differ, per[3].labels_compared) == (0, 1)
    assert report.base_seconds > 0 and report.fast_seconds > 0 and report.speed_ratio > 0
    assert report.base_signature.startswith("q2:") and report.fast_signature.startswith("q2:")
    text = report.text()
    assert "Decisions flipped at threshold 0.5: 2 of 4 (50.0%)" in text and "ROC AUC 0.5000" in text


def test_same_configuration_agrees_fully_on_varying_tiny_models(tiny_config):
    """The same float32 configuration twice: nothing differs, and the scores (which vary row to
    row on the tiny models) keep their order."""
    from support.data import sample_rows

    rows = sample_rows()[:10]
    responses, knowledge = [r["response"] for r in rows], [r["knowledge"] for r in rows]
    report = compare(
        responses, knowledge, fast={"qa_batch_size": 2}, base=tiny_config.replace(decoding="greedy")
    )
    assert all(s.differ == 0 for s in report.stages)
    assert report.stages[0].compared > 0
    assert report.flipped == 0 and report.score_change()["max_abs"] == 0.0
    scores = [r.base_q2 for r in report.compared]
    assert len(set(scores)) > 1  # the tiny models' scores vary with the text: the order means something
    assert report.spearman() == pytest.approx(1.0)
    assert report.base_signature == report.fast_signature


def test_int8_against_float32_on_tiny_models_is_signed(tiny_config):
    from support.data import sample_rows

    rows = sample_rows()[:4]
    report = compare(
        [r["response"] for r in rows],
        [r["knowledge"] for r in rows],
        fast={"quantize": "int8"},
        base=tiny_config.replace(decoding="greedy"),
    )
    assert "|quant:int8-dynamic-qa,nli|" in report.fast_signature and "quant:" not in report.base_signature
    assert report.stages[0].differ == 0  # T5 is not quantized: the same questions
    assert all(not math.isnan(r.base_q2) for r in report.responses)
