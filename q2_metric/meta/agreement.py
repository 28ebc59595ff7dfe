"""How far a fast configuration moves Q² from the paper's, measured on the user's own pairs.

`compare` scores the same (response, knowledge) pairs with a base configuration (default: the
paper's, float32) and a faster one (e.g. `dtype="bfloat16"` or `quantize="int8"`), in the same
process, and reports:

- per model stage, the share of model outputs that differ: questions generated differently (the
  same candidate occurrence and rank, another text), answers on the response and on the knowledge
  (for the same question, asked in both runs), span NLI labels (the same question and answers
  compared in both) and fallback NLI labels (responses that fell back in both);
- per response, its two scores and decisions and how many of its questions, answers and labels
  differ;
- the score change over responses scored by both: mean, 95th percentile (numpy's linear
  interpolation) and maximum of |fast - base|, and the mean signed change;
- the decisions that flip at a threshold (default the paper's 0.5; `display.decide`);
- Spearman's rank correlation of the two score lists;
- with labels (1 = consistent), each configuration's ROC AUC and balanced accuracy
  (`meta.stats`);
- the seconds each configuration took to score (models loaded and one pair scored by each before
  the clock starts) and their ratio, measured in the same run;
- both signatures.

`q2 agree` is its command line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from q2_metric.config import Q2Config
from q2_metric.display import check_threshold, decide
from q2_metric.errors import Q2InputError
from q2_metric.frontend import CheckedItem, configure, language_checked, score_checked
from q2_metric.results import Q2Result, QuestionTrace, ResponseScore
from q2_metric.scorer import Q2Scorer
from q2_metric.telemetry.events import caller_context
from q2_metric.validation import validate_inputs

# the stages compared, in the engine's order
STAGES = ("questions", "response answers", "knowledge answers", "span NLI labels", "fallback NLI labels")


@dataclass
class StageAgreement:
    """Model outputs of one stage compared between the two runs, and how many differ."""

    stage: str
    compared: int = 0
    differ: int = 0

    @property
    def share(self) -> float:
        """The share that differs (NaN when nothing could be compared)."""
        return self.differ / self.compared if self.compared else float("nan")


@dataclass
class ResponseAgreement:
    """One response in both runs."""

    index: int
    base_q2: float
    fast_q2: float
    base_decision: str | None
    fast_decision: str | None
    questions_differ: int = 0
    questions_compared: int = 0
    answers_differ: int = 0
    answers_compared: int = 0
    labels_differ: int = 0
    labels_compared: int = 0

    @property
    def change(self) -> float:
        return self.fast_q2 - self.base_q2

    @property
    def flipped(self) -> bool:
        return (
            None not in (self.base_decision, self.fast_decision) and self.base_decision != self.fast_decision
        )


@dataclass
class AgreementReport:
    """What `compare` measured (see the module docstring)."""

    threshold: float
    stages: list[StageAgreement]
    responses: list[ResponseAgreement]
    base_seconds: float
    fast_seconds: float
    base_signature: str
    fast_signature: str
    base_q2: float
    fast_q2: float
    labels: dict[str, dict[str, float]] | None = (
        None  # {"base": {"roc_auc":..., "balanced_accuracy":...}, "fast": ...}
    )
    num_labelled: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def compared(self) -> list[ResponseAgreement]:
        """The responses scored in both runs."""
        return [r for r in self.responses if not (math.isnan(r.base_q2) or math.isnan(r.fast_q2))]

    def score_change(self) -> dict[str, float]:
        """mean, p95 and max of |fast - base|, and the mean signed change, over `compared`."""
        import numpy as np

        changes = np.array([r.change for r in self.compared], dtype=float)
        if not changes.size:
            return {
                "mean_abs": float("nan"),
                "p95_abs": float("nan"),
                "max_abs": float("nan"),
                "mean": float("nan"),
            }
        absolute = np.abs(changes)
        return {
            "mean_abs": float(absolute.mean()),
            "p95_abs": float(np.percentile(absolute, 95)),
            "max_abs": float(absolute.max()),
            "mean": float(changes.mean()),
        }

    @property
    def flipped(self) -> int:
        return sum(r.flipped for r in self.responses)

    def spearman(self) -> float:
        from q2_metric.meta.stats import spearman

        pairs = self.compared
        return (
            spearman([r.base_q2 for r in pairs], [r.fast_q2 for r in pairs])
            if len(pairs) > 1
            else float("nan")
        )

    @property
    def speed_ratio(self) -> float:
        """How many times faster the fast configuration scored (base seconds / fast seconds)."""
        return self.base_seconds / self.fast_seconds if self.fast_seconds > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON-ready figures (NaN as None via `options.json_safe` at the writer)."""
        return {
            "threshold": self.threshold,
            "num_responses": len(self.responses),
            "num_compared": len(self.compared),
            "stages": {
                s.stage: {"compared": s.compared, "differ": s.differ, "share": s.share} for s in self.stages
            },
            "score_change": self.score_change(),
            "decisions_flipped": self.flipped,
            "flip_share": self.flipped / len(self.compared) if self.compared else float("nan"),
            "spearman": self.spearman(),
            "base_q2": self.base_q2,
            "fast_q2": self.fast_q2,
            "labels": self.labels,
            "num_labelled": self.num_labelled,
            "base_seconds": self.base_seconds,
            "fast_seconds": self.fast_seconds,
            "speed_ratio": self.speed_ratio,
            "base_signature": self.base_signature,
            "fast_signature": self.fast_signature,
            "responses": [{**asdict(r), "change": r.change, "flipped": r.flipped} for r in self.responses],
        }

    def text(self) -> str:
        """The report as a few lines of text."""

        from q2_metric.display import figure

        def pct(x: float) -> str:
            return figure(x, spec=".1%")

        def num(x: float, spec: str = ".4f") -> str:  # NaN (nothing to compare, one class only) as n/a
            return figure(x, spec=spec)

        sc = self.score_change()
        n = len(self.compared)
        lines = [
            f"Compared {n} of {len(self.responses)} responses (scored in both runs).",
            f"{'stage':<22}{'compared':>10}{'differ':>9}{'share':>9}",
        ]
        lines += [f"{s.stage:<22}{s.compared:>10}{s.differ:>9}{pct(s.share):>9}" for s in self.stages]
        lines.append(
            f"Q2 change |fast - base|: mean {num(sc['mean_abs'])}, 95th percentile {num(sc['p95_abs'])}, "
            f"max {num(sc['max_abs'])} (mean signed {num(sc['mean'], '+.4f')}); system Q2 "
            f"{num(self.base_q2)} -> {num(self.fast_q2)}"
        )
        lines.append(
            f"Decisions flipped at threshold {self.threshold:g}: {self.flipped} of {n}"
            f" ({pct(self.flipped / n if n else float('nan'))}); Spearman rank correlation "
            f"{num(self.spearman())}"
        )
        if self.labels:
            for name in ("base", "fast"):
                f = self.labels[name]
                lines.append(
                    f"{name}: ROC AUC {num(f['roc_auc'])}, balanced accuracy {num(f['balanced_accuracy'])} "
                    f"(at {self.threshold:g}, {self.num_labelled} labelled responses)"
                )
        lines.append(
            f"Speed: base {self.base_seconds:.2f} s, fast {self.fast_seconds:.2f} s: "
            f"{num(self.speed_ratio, '.2f')}x (measured in this run)"
        )
        lines.append(f"base: {self.base_signature}\nfast: {self.fast_signature}")
        return "\n".join(lines)


def _traces(r: ResponseScore) -> dict[tuple[int, int], QuestionTrace]:
    return {(q.occurrence, q.rank): q for q in r.questions}


def compare_results(
    base: Q2Result, fast: Q2Result, threshold: float = 0.5, labels: Sequence[int] | None = None
) -> AgreementReport:
    """The agreement of two results of the same pairs (times left at 0; `compare` measures them)."""
    threshold = check_threshold(threshold)
    if len(base.responses) != len(fast.responses):
        raise Q2InputError("The two results must score the same responses.")
    stages = {name: StageAgreement(name) for name in STAGES}
    rows = []
    for b, f in zip(base.responses, fast.responses):
        row = ResponseAgreement(b.index, b.q2, f.q2, decide(b.q2, threshold), decide(f.q2, threshold))
        tb, tf = _traces(b), _traces(f)
        for key in sorted(set(tb) | set(tf)):
            qb, qf = tb.get(key), tf.get(key)
            row.questions_compared += 1
            if qb is None or qf is None or qb.question != qf.question:
                row.questions_differ += 1
                continue
            for stage, side in (("response answers", "response"), ("knowledge answers", "knowledge")):
                a = (getattr(qb, f"{side}_answer"), getattr(qb, f"{side}_has_answer"))
                c = (getattr(qf, f"{side}_answer"), getattr(qf, f"{side}_has_answer"))
                if a[0] is None or c[0] is None:  # not asked in one of the runs
                    continue
                row.answers_compared += 1
                row.answers_differ += a != c  # the text, and "no answer" apart from an empty answer
                stages[stage].compared += 1
                stages[stage].differ += a != c
            if (
                qb.nli_label is not None
                and qf.nli_label is not None
                and ((qb.response_answer, qb.knowledge_answer) == (qf.response_answer, qf.knowledge_answer))
            ):
                row.labels_compared += 1
                row.labels_differ += qb.nli_label != qf.nli_label
                stages["span NLI labels"].compared += 1
                stages["span NLI labels"].differ += qb.nli_label != qf.nli_label
        stages["questions"].compared += row.questions_compared
        stages["questions"].differ += row.questions_differ
        if b.fallback and f.fallback:
            row.labels_compared += 1
            row.labels_differ += b.fallback_label != f.fallback_label
            stages["fallback NLI labels"].compared += 1
            stages["fallback NLI labels"].differ += b.fallback_label != f.fallback_label
        rows.append(row)
    report = AgreementReport(
        threshold,
        list(stages.values()),
        rows,
        0.0,
        0.0,
        str(base.signature),
        str(fast.signature),
        base.q2,
        fast.q2,
    )
    if labels is not None:
        report.labels, report.num_labelled = _label_figures(base, fast, labels, threshold)
    return report


def _label_figures(
    base: Q2Result, fast: Q2Result, labels: Sequence[int], threshold: float
) -> tuple[dict[str, dict[str, float]], int]:
    from q2_metric.meta.stats import classification_report, roc_auc

    if len(labels) != len(base.responses):
        raise Q2InputError(
            f"{len(labels)} labels for {len(base.responses)} responses; give one label per response."
        )
    keep = [i for i, (b, f) in enumerate(zip(base.responses, fast.responses)) if b.scored and f.scored]
    gold = [int(labels[i]) for i in keep]
    out = {}
    for name, result in (("base", base), ("fast", fast)):
        scores = [result.responses[i].q2 for i in keep]
        report = classification_report(scores, gold, threshold) if keep else None
        balanced = (
            (report["consistent"]["recall"] + report["inconsistent"]["recall"]) / 2
            if report
            else float("nan")
        )
        out[name] = {"roc_auc": roc_auc(scores, gold), "balanced_accuracy": balanced}
    return out, len(keep)


def fast_config(base: Q2Config, fast: Q2Config | Mapping[str, Any]) -> Q2Config:
    """The fast configuration: a `Q2Config` as given, or the base with the options of a mapping
    (checked by `frontend.configure`, as every front-end checks options; e.g. `{"dtype": "bfloat16"}`)."""
    if isinstance(fast, Q2Config):
        return fast
    options = {name: getattr(base, name) for name in base.to_dict()}
    return configure({**options, **fast})  # a cross-option rule: Q2Config's Q2OptionError


def _scorer(what: Q2Scorer | Q2Config) -> Q2Scorer:
    return what if isinstance(what, Q2Scorer) else Q2Scorer(what)


def compare(
    responses: Sequence[str],
    knowledge: Sequence[str],
    fast: Q2Scorer | Q2Config | Mapping[str, Any],
    base: Q2Scorer | Q2Config | None = None,
    *,
    labels: Sequence[int] | None = None,
    threshold: float = 0.5,
) -> AgreementReport:
    """Score the pairs with `base` (default: the paper's configuration) and with `fast`, and
    report how far apart they are (see the module docstring).

    Args:
        responses, knowledge: the pairs, as `Q2Scorer.score` takes them.
        fast: a `Q2Config`, a scorer, or options applied over the base's configuration
            (e.g. `{"dtype": "bfloat16"}`, `{"quantize": "int8"}`).
        base: a `Q2Config` or a scorer (default `Q2Config.paper()`).
        labels: one per response, 1 = consistent: adds each configuration's ROC AUC and balanced
            accuracy at `threshold`.
        threshold: the decision threshold (inconsistent iff Q² <= it), default the paper's 0.5.

    Returns:
        The `AgreementReport`, speed measured with every model loaded before the clock starts.
    """
    base_scorer = _scorer(base if base is not None else Q2Config.paper())
    fast_scorer = fast if isinstance(fast, Q2Scorer) else Q2Scorer(fast_config(base_scorer.config, fast))
    # both runs score the same pairs: a bad one refuses the call before any work, in the engine's words
    responses, knowledge = validate_inputs(responses, knowledge)
    language = base_scorer.config.language  # the language gate of the one item check
    items = [
        language_checked(CheckedItem(f"item {i}", r, k, None, threshold, caller_context()), language)
        for i, (r, k) in enumerate(zip(responses, knowledge))
    ]  # checked once
    base_scorer.load()
    fast_scorer.load()
    if len(items) > 1:  # one untimed pair each first: kernel set-up is not charged to either run
        score_checked(base_scorer, items[:1], emit=False)
        score_checked(fast_scorer, items[:1], emit=False)
    t0 = time.perf_counter()
    base_result = score_checked(base_scorer, items).as_result()  # the run compared: its events
    t1 = time.perf_counter()
    fast_result = score_checked(fast_scorer, items, emit=False).as_result()
    t2 = time.perf_counter()
    report = compare_results(base_result, fast_result, threshold, labels)
    report.base_seconds, report.fast_seconds = t1 - t0, t2 - t1
    return report


__all__ = [
    "STAGES",
    "AgreementReport",
    "ResponseAgreement",
    "StageAgreement",
    "compare",
    "compare_results",
    "fast_config",
]
