"""Stage "response scores", span scores -> response score, with the end-to-end NLI fallback."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL, NLIClassifier
from q2_metric.results import Pair
from q2_metric.steps.unique import unique_call


def mean(values: Sequence[float]) -> float:
    """numpy's mean (pairwise summation), bit for bit the released code's; NaN when empty."""
    return float(np.mean(values)) if len(values) else float("nan")


def fallback_score(label: str, scores: tuple[float, float, float] = (1.0, 0.5, 0.0)) -> float:
    """End-to-end NLI (premise = knowledge, hypothesis = response) -> a response score.

    >>> fallback_score("neutral")
    0.5
    """
    entail, neutral, contradict = scores
    return {ENTAILMENT: entail, NEUTRAL: neutral, CONTRADICTION: contradict}[label]


def fallback_pair(response: str, knowledge: str, lowercase: bool = True) -> tuple[str, str]:
    """(premise, hypothesis) of the end-to-end NLI: the knowledge and the response, lower-cased by
    default as in the released code.

    >>> fallback_pair("Paris is in France.", "Paris is the capital of France.")
    ('paris is the capital of france.', 'paris is in france.')
    """
    return (knowledge.lower(), response.lower()) if lowercase else (knowledge, response)


def score_responses(
    pairs: Sequence[Pair],
    nli: NLIClassifier | None,
    *,
    fallback: bool,
    lowercase: bool = True,
    scores: tuple[float, float, float] = (1.0, 0.5, 0.0),
) -> None:
    """Stage "response scores": the mean span score of each response with a valid question;
    end-to-end NLI (one call over the distinct pairs) for the others, or NaN when the fallback is off.

    Args:
        pairs: the batch, with span scores set.
        nli: the NLI backend of the fallback.
        fallback: whether a response with no valid question falls back to end-to-end NLI.
        lowercase: lower-case premise and hypothesis, as the released code does.
        scores: the fallback's score for entailment, neutral and contradiction.
    """
    uncovered = [p for p in pairs if not p.result.valid_questions]
    nli_pairs = [fallback_pair(p.response, p.knowledge, lowercase) for p in uncovered] if fallback else []
    labels = unique_call(nli_pairs, lambda ps: nli.classify([a for a, _ in ps], [b for _, b in ps]))
    count_windows = getattr(nli, "windows", None)
    for p in pairs:
        r, vq = p.result, p.result.valid_questions
        if vq:
            r.q2 = mean([t.score for t in vq])
            r.q2_no_nli = mean([t.score_no_nli for t in vq])
        elif fallback:
            premise, hypothesis = fallback_pair(p.response, p.knowledge, lowercase)
            r.fallback, r.fallback_label = True, labels[(premise, hypothesis)]
            r.fallback_windows = count_windows(premise, hypothesis) if count_windows else 1
            r.q2 = r.q2_no_nli = fallback_score(r.fallback_label, scores)
        else:
            r.reason = "no valid question (fallback off)"  # why it is NaN; the engine words the sentence
