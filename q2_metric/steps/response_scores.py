"""Stage "response scores", span scores -> response score, with the end-to-end NLI fallback."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from q2_metric.components import CONTRADICTION, ENTAILMENT, NEUTRAL, NLIClassifier
from q2_metric.results import Pair
from q2_metric.steps.span_scores import SpanScore
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


class ResponseOutcome(NamedTuple):
    """The score of one response (the engine records it on the response's `ResponseScore`)."""

    q2: float
    q2_no_nli: float
    fallback_label: str | None = None  # end-to-end NLI's label; None: not scored by the fallback
    fallback_windows: int = 0  # premise windows of the fallback NLI
    reason: str | None = None  # why the score is NaN (no valid question, fallback off)
    fallback_cut: bool = False  # the fallback NLI's pair was cut to the model's window
    fallback_parts: int = 0  # the hypothesis's parts the fallback NLI read (1: whole)

    @property
    def fallback(self) -> bool:
        return self.fallback_label is not None


def score_responses(
    pairs: Sequence[Pair],
    spans: Sequence[SpanScore],
    nli: NLIClassifier | None,
    *,
    fallback: bool,
    lowercase: bool = True,
    scores: tuple[float, float, float] = (1.0, 0.5, 0.0),
) -> list[ResponseOutcome]:
    """Stage "response scores": the mean span score of each response with a valid question;
    end-to-end NLI (one call over the distinct pairs) for the others, or NaN when the fallback is off.

    Args:
        pairs: the batch.
        spans: the span scores stage's output (each names its pair; in the order of the traces).
        nli: the NLI backend of the fallback (needed when `fallback` is on).
        fallback: whether a response with no valid question falls back to end-to-end NLI.
        lowercase: lower-case premise and hypothesis, as the released code does.
        scores: the fallback's score for entailment, neutral and contradiction.

    Returns:
        One `ResponseOutcome` per pair, in their order.
    """
    by_pair: dict[int, list[SpanScore]] = {}
    for s in spans:
        by_pair.setdefault(id(s.answer.pair), []).append(s)
    uncovered = [p for p in pairs if id(p) not in by_pair]
    labels: dict[tuple[str, str], str] = {}
    count_windows = reading = None
    if fallback and uncovered:
        if nli is None:
            raise ValueError("the end-to-end NLI fallback needs an NLI component")
        classify = nli.classify
        labels = unique_call(
            [fallback_pair(p.focused(), p.knowledge, lowercase) for p in uncovered],
            lambda ps: classify([a for a, _ in ps], [b for _, b in ps]),
        )
        count_windows = getattr(nli, "windows", None)
        reading = getattr(nli, "reading", None)
    out = []
    for p in pairs:
        mine = by_pair.get(id(p))
        if mine:
            out.append(ResponseOutcome(mean([s.score for s in mine]), mean([s.score_no_nli for s in mine])))
        elif fallback:
            premise, hypothesis = fallback_pair(p.focused(), p.knowledge, lowercase)
            label = labels[(premise, hypothesis)]
            score = fallback_score(label, scores)
            if reading is not None:  # windows, parts and cut (`components.NLIReading`)
                read = reading(premise, hypothesis)
                out.append(ResponseOutcome(score, score, label, read.windows, None, read.cut, read.parts))
                continue
            windows = count_windows(premise, hypothesis) if count_windows else 1
            out.append(ResponseOutcome(score, score, label, windows, fallback_parts=1))
        else:
            # why it is NaN; the engine words the sentence
            out.append(ResponseOutcome(float("nan"), float("nan"), reason="no valid question (fallback off)"))
    return out
