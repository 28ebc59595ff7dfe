"""The batched engine equals a per-example loop in the released code's order on all 1,688
annotated responses, with scripted components whose outputs depend on their inputs only."""

from __future__ import annotations

import pytest
from support.hashed import HashNLI, HashParser, HashQA, HashQG, annotated_pairs

from q2_metric.config import Q2Config
from q2_metric.scorer import Q2Scorer
from q2_metric.testing.reference_loop import reference_q2


@pytest.fixture(scope="module")
def components():
    from q2_metric.models.spacy_parser import SpacyParser

    return HashParser(SpacyParser(Q2Config())), HashQG(), HashQA(), HashNLI()


@pytest.mark.parametrize(
    "config",
    [Q2Config(), Q2Config(question_mode="multi"), Q2Config.dnli(), Q2Config.dnli(question_mode="multi")],
    ids=["paper-single", "paper-multi", "dnli-single", "dnli-multi"],
)
def test_engine_equals_reference_loop_on_annotated_set(components, config):
    parser, qg, qa, nli = components
    pairs = annotated_pairs()
    assert len(pairs) == 1688
    result = Q2Scorer(config, parser=parser, qg=qg, qa=qa, nli=nli).score(
        [r for r, _ in pairs], [k for _, k in pairs]
    )
    mismatches = []
    for (response, knowledge), res in zip(pairs, result.responses):
        expected = reference_q2(
            response,
            knowledge,
            parser,
            qg,
            qa,
            nli,
            single=config.question_mode == "single",
            remove_personal=config.personal_filter,
            dnli=config.discard_unanswerable_if_any_answerable,
        )
        if (res.q2, res.q2_no_nli) != expected:
            mismatches.append((response, (res.q2, res.q2_no_nli), expected))
    assert not mismatches, f"{len(mismatches)} differ, e.g. {mismatches[:3]}"
    # the scripted decisions exercise every branch
    traces = [t for r in result.responses for t in r.questions]
    statuses = {t.status for t in traces}
    assert {"valid", "no_match"} <= statuses
    assert (config.question_mode == "single") == ("unused" in statuses)
    assert config.personal_filter == ("personal" in statuses)
    assert any(r.fallback for r in result.responses) and any(t.nli_label for t in traces)
    assert any(len(r.candidates) != len(set(r.candidates)) for r in result.responses)  # repeated candidates
