"""The staged question filter: the same scores as asking every question, at most
`num_return_sequences` response-side QA calls per `score` call, never more QA work than the
reference loop."""

from __future__ import annotations

import numpy as np
import pytest
from support.hashed import HashNLI, HashParser, HashQA, HashQG, annotated_pairs

from q2_metric.config import Q2Config
from q2_metric.scorer import Q2Scorer
from q2_metric.testing.reference_loop import reference_q2


class CountingQA(HashQA):
    def __init__(self, responses) -> None:
        self.responses, self.calls, self.response_examples = set(responses), [], 0

    def answer(self, questions, contexts):
        if contexts and contexts[0] in self.responses:
            self.calls.append(len(questions))
            self.response_examples += len(questions)
        return super().answer(questions, contexts)


@pytest.fixture(scope="module")
def setup():
    from q2_metric.models.spacy_parser import SpacyParser

    pairs = annotated_pairs()[:600]
    return pairs, HashParser(SpacyParser(Q2Config()))


def test_staged_filter_same_scores_fewer_calls(setup):
    pairs, parser = setup
    responses, knowledge = [r for r, _ in pairs], [k for _, k in pairs]
    staged_qa = CountingQA(responses)
    staged = Q2Scorer(Q2Config(), parser=parser, qg=HashQG(), qa=staged_qa, nli=HashNLI()).score(
        responses, knowledge
    )
    # asking every question (multi mode's work) and keeping the first valid one per occurrence must
    # give the same scores: compare with the per-example reference loop, which stops early too
    ref_qa = CountingQA(responses)
    expected = [reference_q2(r, k, parser, HashQG(), ref_qa, HashNLI()) for r, k in pairs]
    assert [(r.q2, r.q2_no_nli) for r in staged.responses] == expected
    assert 1 < len(staged_qa.calls) <= Q2Config().num_return_sequences
    assert staged_qa.response_examples <= ref_qa.response_examples
    # asking every question in one call (multi mode), then keeping each occurrence's first valid one
    everything = CountingQA(responses)
    multi = Q2Scorer(
        Q2Config(question_mode="multi"), parser=parser, qg=HashQG(), qa=everything, nli=HashNLI()
    ).score(responses, knowledge)
    assert len(everything.calls) == 1 and everything.response_examples > staged_qa.response_examples
    for s, m in zip(staged.responses, multi.responses):
        first = {}
        for t in m.valid_questions:
            first.setdefault(t.occurrence, t)
        if first:
            kept = sorted(first.values(), key=lambda t: t.occurrence)
            assert s.q2 == np.mean([t.score for t in kept]) and s.q2_no_nli == np.mean(
                [t.score_no_nli for t in kept]
            )
        else:
            assert s.fallback and m.fallback
