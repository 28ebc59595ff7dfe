"""The meta-evaluation's statistics, as pure functions: Table 3's thresholded classification and
ROC AUC, the TRUE protocol's ROC AUC with a bootstrap interval, and Table 4's system-level bootstrap.

Scores are *oriented*: higher means more consistent, and `consistent[i]` is 1 for a consistent
response (the TRUE convention: the positive class is "consistent").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from q2_metric.display import is_consistent
from q2_metric.errors import Q2InputError

AUC_DRAWS = 1000  # bootstrap resamples behind each ROC AUC interval
SHARES = (0.05, 0.10, 0.15, 0.20, 0.25)  # inconsistent shares of the simulated systems (Table 4)


# -- Table 3 -----------------------------------------------------------------------------------
def to_unit_scale(metric: str, scores: Sequence[float]) -> list[float]:
    """BLEU / 100; BERTScore min-max scaled over all responses; others unchanged."""
    if metric == "bleu":
        return [s / 100 for s in scores]
    if metric == "bertscore":
        lo = min(scores)
        hi = max(s - lo for s in scores) or 1.0
        return [(s - lo) / hi for s in scores]
    return list(scores)


def classification_report(scores: Sequence[float], consistent: Sequence[int], threshold: float = 0.5) -> dict:
    """Predictions by `display.decide` (the released code's rule: a score <= threshold is
    *inconsistent*); `consistent[i]` is 1 for consistent.

    >>> classification_report([0.9, 0.5, 0.6, 0.1], [1, 0, 0, 0])["accuracy"]
    0.75
    """
    pred = [int(is_consistent(s, threshold)) for s in scores]
    out: dict[str, Any] = {
        "threshold": threshold,
        "n": len(scores),
        "accuracy": sum(p == y for p, y in zip(pred, consistent)) / len(scores) if scores else float("nan"),
    }
    for name, cls in (("consistent", 1), ("inconsistent", 0)):
        tp = sum(p == cls and y == cls for p, y in zip(pred, consistent))
        fp = sum(p == cls and y != cls for p, y in zip(pred, consistent))
        fn = sum(p != cls and y == cls for p, y in zip(pred, consistent))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[name] = {"precision": precision, "recall": recall, "f1": f1}
    return out


def roc_auc(scores: Sequence[float], consistent: Sequence[int]) -> float:
    """Probability that a consistent response outscores an inconsistent one (ties count half).

    >>> roc_auc([0.9, 0.5, 0.5, 0.1], [1, 1, 0, 0])
    0.875
    """
    pos = [s for s, y in zip(scores, consistent) if y == 1]
    neg = [s for s, y in zip(scores, consistent) if y == 0]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


# -- Table 4 -----------------------------------------------------------------------------------
def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    import warnings

    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: NaN, counted by the caller
        return float(spearmanr(x, y)[0])


@dataclass(frozen=True)
class BootstrapResult:
    mean: float
    low: float
    high: float
    no_correlation: int  # repetitions whose system scores were all equal (Spearman undefined)
    repetitions: int
    sample_size: int
    shares: tuple[float, ...]

    def to_dict(self) -> dict:
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "no_correlation": self.no_correlation,
            "repetitions": self.repetitions,
            "sample_size": self.sample_size,
            "shares": list(self.shares),
        }


def simulate_systems(
    consistent: np.ndarray,
    inconsistent: np.ndarray,
    rng: np.random.Generator,
    shares: Sequence[float] = SHARES,
    sample_size: int = 350,
) -> list[float]:
    """One repetition: ONE sample of contexts with replacement, shared by every simulated system;
    for share c, round(c * size) of its positions (without replacement) take the inconsistent
    response, the rest the consistent one; a system's score is the mean."""
    sample = rng.integers(0, len(consistent), size=sample_size)
    scores = []
    for share in shares:
        bad = np.zeros(sample_size, dtype=bool)
        bad[rng.choice(sample_size, size=round(share * sample_size), replace=False)] = True
        scores.append(float(np.mean(np.where(bad, inconsistent[sample], consistent[sample]))))
    return scores


def system_bootstrap(
    consistent_scores: Sequence[float],
    inconsistent_scores: Sequence[float],
    shares: Sequence[float] = SHARES,
    sample_size: int = 350,
    repetitions: int = 1000,
    seed: int = 0,
) -> BootstrapResult:
    """Spearman of the simulated systems' scores against their quality ranks (fewer inconsistent
    responses = better), over `repetitions`: mean and 2.5/97.5 percentiles (linear
    interpolation) of the repetitions where it is defined."""
    cons, incons = np.asarray(consistent_scores, float), np.asarray(inconsistent_scores, float)
    if len(cons) != len(incons) or not len(cons):
        raise Q2InputError("The bootstrap needs one consistent and one inconsistent score per context.")
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, len(shares) + 1)[::-1]
    rhos = [
        spearman(ranks, simulate_systems(cons, incons, rng, shares, sample_size)) for _ in range(repetitions)
    ]
    kept = [r for r in rhos if not math.isnan(r)]
    nan = float("nan")
    return BootstrapResult(
        mean=float(np.mean(kept)) if kept else nan,
        low=float(np.percentile(kept, 2.5)) if kept else nan,
        high=float(np.percentile(kept, 97.5)) if kept else nan,
        no_correlation=len(rhos) - len(kept),
        repetitions=repetitions,
        sample_size=sample_size,
        shares=tuple(shares),
    )


# -- the TRUE protocol -------------------------------------------------------------------------
def roc_auc_ranks(scores: np.ndarray, consistent: np.ndarray) -> np.ndarray:
    """ROC AUC by the Mann-Whitney rank sum (ties get their average rank, i.e. count half), the
    same number as `roc_auc`; `scores` and `consistent` may be 2-D (one resample per row).
    NaN where a row has only one class."""
    from scipy.stats import rankdata

    scores = np.atleast_2d(np.asarray(scores, float))
    pos = np.atleast_2d(np.asarray(consistent)).astype(bool)
    ranks = rankdata(scores, axis=1)
    n_pos = pos.sum(axis=1)
    n_neg = pos.shape[1] - n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = ((ranks * pos).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)


def resample_indices(n: int, draws: int = AUC_DRAWS, seed: int = 0) -> np.ndarray:
    """`draws` resamples of n responses with replacement (a `draws` x n index matrix); one matrix
    per annotated set, shared by every metric so that their intervals are paired."""
    return np.random.default_rng(seed).integers(0, n, size=(draws, n))


@dataclass(frozen=True)
class AucInterval:
    auc: float
    low: float
    high: float
    n: int
    inconsistent: int
    draws: int  # resamples with both classes (those without are dropped)

    def to_dict(self) -> dict:
        return {
            "roc_auc": self.auc,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "inconsistent": self.inconsistent,
            "draws": self.draws,
        }


def roc_auc_interval(scores: Sequence[float], consistent: Sequence[int], indices: np.ndarray) -> AucInterval:
    """ROC AUC on all responses, and the 2.5/97.5 percentiles (linear interpolation) of the ROC AUC
    over the resamples in `indices` (percentile bootstrap, 95%)."""
    s, y = np.asarray(scores, float), np.asarray(consistent, int)
    if len(s) != len(y) or (indices.size and indices.max() >= len(s)):
        raise Q2InputError(
            "The ROC AUC interval needs one label per score, and resamples of the same responses."
        )
    boot = roc_auc_ranks(s[indices], y[indices]) if indices.size else np.array([])
    boot = boot[~np.isnan(boot)]
    nan = float("nan")
    return AucInterval(
        auc=float(roc_auc_ranks(s, y)[0]),
        low=float(np.percentile(boot, 2.5)) if boot.size else nan,
        high=float(np.percentile(boot, 97.5)) if boot.size else nan,
        n=len(s),
        inconsistent=int((y == 0).sum()),
        draws=int(boot.size),
    )


def paired_bootstrap_pvalue(boot_a: np.ndarray, boot_b: np.ndarray) -> float | None:
    """Two-sided p-value that two metrics' AUCs are equal, from their AUCs on the SAME resamples
    (rows with one class only, NaN for both, dropped): twice the smaller share of resamples on
    either side of 0 of the difference, at most 1; None without resamples.

    >>> paired_bootstrap_pvalue(np.array([0.7, 0.8, 0.6, 0.9]), np.array([0.6, 0.7, 0.65, 0.5]))
    0.5
    """
    diff = np.asarray(boot_a, float) - np.asarray(boot_b, float)
    diff = diff[~np.isnan(diff)]
    if not diff.size:
        return None
    return float(min(1.0, 2 * min(np.mean(diff <= 0), np.mean(diff >= 0))))
