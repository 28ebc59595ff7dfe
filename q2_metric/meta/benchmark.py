"""The dialogue-faithfulness benchmark (`q2 meta-eval --dataset NAME=FILE ...`): every metric's
ROC AUC on every labelled set (TRUE's protocol: consistent = positive, 95% percentile-bootstrap
interval), a paired bootstrap p-value against Q² and against the best baseline, and, with a
DEV:TEST pair, each metric's dev-tuned threshold and the balanced accuracy it gives on test.

Scores are oriented as in `meta_stats` (higher = more consistent; BLEU / 100, BERTScore min-max
scaled over all the datasets' responses together, a supplied metric by its declared range), so a
threshold is on that scale. Datasets come from `meta_datasets`, thresholds from `meta_calibrate`,
the tables from `meta_bench_report`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from q2_metric.components import NLIClassifier
from q2_metric.meta.baselines import baseline_scores
from q2_metric.meta.calibrate import calibrate
from q2_metric.meta.datasets import Dataset, DatasetError
from q2_metric.meta.scores import Key, ScoreSpec, check_names, read_scores
from q2_metric.meta.stats import (
    AUC_DRAWS,
    paired_bootstrap_pvalue,
    resample_indices,
    roc_auc_ranks,
    to_unit_scale,
)

Q2_METRICS = ("q2", "q2_no_nli")
BASELINES = ("overlap", "bleu", "bertscore", "e2e_nli")
# scores of one dataset by Q²: dataset -> {"q2": [...], "q2_no_nli": [...]}, and for a set with
# gold spans (RAGTruth) "unsupported_spans": each row's [(start, end), ...] (None: unscored)
Q2Scores = Callable[[Dataset], Mapping[str, Sequence[Any]]]
SPANS_KEY = "unsupported_spans"


# -- the result: read by attribute; `to_dict()` is what benchmark.json holds ---------------------


@dataclass(frozen=True)
class RagTruthSelection:
    """Which rows of a RAGTruth set were read: the split, quality and grounding asked for, and the
    counts of rows, kept and bad rows and of those left out (by split, by quality; kept by task)."""

    split: str
    quality: str
    grounding: str
    rows: int
    kept: int
    bad: int
    left_out_by_split: dict[str, int]
    left_out_by_quality: dict[str, int]
    kept_by_task: dict[str, int]
    limit: int | None = None  # --limit: the first N kept responses

    @classmethod
    def of(cls, selection: Mapping[str, Any]) -> RagTruthSelection:
        """From the dict a RAGTruth `Dataset` holds in `selection`."""
        return cls(**selection)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DatasetInfo:
    """One --dataset: its file, format, label rule, size and consistent responses; a RAGTruth set
    also its selection and bad rows, an LLM-AggreFact set its source datasets."""

    source: str
    format: str
    label_rule: str
    n: int
    consistent: int
    consistent_share: float | None
    selection: RagTruthSelection | None = None
    bad_rows: list[str] | None = None
    datasets: list[str] | None = None
    multilingual: dict[str, Any] | None = None  # a multilingual set's: what was read

    @classmethod
    def of(cls, ds: Dataset) -> DatasetInfo:
        """From a loaded dataset (`Dataset.summary()`)."""
        s = ds.summary()
        return cls(
            s["source"],
            s["format"],
            s["label_rule"],
            s["n"],
            s["consistent"],
            s["consistent_share"],
            RagTruthSelection.of(s["selection"]) if "selection" in s else None,
            s.get("bad_rows"),
            s.get("datasets"),
            s.get("multilingual"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "format": self.format,
            "label_rule": self.label_rule,
            "n": self.n,
            "consistent": self.consistent,
            "consistent_share": self.consistent_share,
        }
        if self.selection is not None:
            out.update(selection=self.selection.to_dict(), bad_rows=list(self.bad_rows or []))
        if self.datasets is not None:
            out["datasets"] = list(self.datasets)
        if self.multilingual is not None:
            out["multilingual"] = dict(self.multilingual)
        return out


@dataclass(frozen=True)
class MetricAuc:
    """One metric on one dataset: ROC AUC, its 95% interval (None: no resample had both classes),
    the resamples kept, and the paired bootstrap p-values against Q² and against the best baseline
    (None: not compared)."""

    roc_auc: float
    low: float | None
    high: float | None
    draws: int
    p_vs_q2: float | None
    p_vs_best_baseline: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DatasetResult:
    """One dataset's ROC AUCs (`metrics[metric]`) and its best baseline (None: no baseline ran)."""

    best_baseline: str | None
    metrics: dict[str, MetricAuc]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Decisions:
    """What a threshold gives on one set (`calibrate.decision_report`): balanced accuracy,
    precision/recall of both classes (None where undefined) and the confusion counts."""

    threshold: float
    n: int
    balanced_accuracy: float | None
    precision: float | None
    recall: float | None
    inconsistent_precision: float | None
    inconsistent_recall: float | None
    tp: int
    fp: int
    tn: int
    fn: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibrated:
    """One metric's dev-tuned threshold and what it gives on dev and on test."""

    threshold: float
    dev: Decisions
    test: Decisions

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> Calibrated:
        """From `calibrate.calibrate`'s dict."""
        return cls(result["threshold"], Decisions(**result["dev"]), Decisions(**result["test"]))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """`--calibrate DEV:TEST`: every metric's threshold tuned on `dev`, applied to `test`."""

    dev: str
    test: str
    metrics: dict[str, Calibrated]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Rates:
    """Precision, recall and F1 (None where undefined) with the counts they come from (`counts`:
    `tp`, `predicted`, `gold`, or LettuceDetect's `overlap`, `predicted`, `gold`)."""

    precision: float | None
    recall: float | None
    f1: float | None
    counts: dict[str, int]

    @classmethod
    def of(cls, figures: Mapping[str, Any]) -> Rates:
        """From `spans.prf`'s dict or `ragtruth.char_lettucedetect`'s."""
        counts = {k: v for k, v in figures.items() if k not in ("precision", "recall", "f1")}
        return cls(figures["precision"], figures["recall"], figures["f1"], counts)

    def to_dict(self) -> dict[str, Any]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, **self.counts}


@dataclass(frozen=True)
class RagTruthFigures:
    """One metric on a RAGTruth set (`ragtruth.score_figures` or `span_figures`): the responses it
    scored, the ids of those it did not, the response level and, for span predictions
    (`kind` "spans"), both character levels; a score (`kind` "score") has its `threshold`."""

    kind: str
    responses: int
    unscored: list[str]
    response: Rates
    threshold: float | None = None
    character_ragtruth: Rates | None = None
    character_lettucedetect: Rates | None = None

    @classmethod
    def of(cls, figures: Mapping[str, Any]) -> RagTruthFigures:
        """From `ragtruth.ragtruth_figures`'s dict of one metric."""
        chars = {
            level: Rates.of(figures[level])
            for level in ("character_ragtruth", "character_lettucedetect")
            if level in figures
        }
        return cls(
            figures["kind"],
            figures["responses"],
            list(figures["unscored"]),
            Rates.of(figures["response"]),
            figures.get("threshold"),
            **chars,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.threshold is not None:
            out["threshold"] = self.threshold
        out.update(responses=self.responses, unscored=list(self.unscored), response=self.response.to_dict())
        for level, rates in (
            ("character_ragtruth", self.character_ragtruth),
            ("character_lettucedetect", self.character_lettucedetect),
        ):
            if rates is not None:
                out[level] = rates.to_dict()
        return out


@dataclass(frozen=True)
class GoldCounts:
    """A RAGTruth set's gold labels: the responses hallucinated (at least one span) and the spans."""

    hallucinated: int
    spans: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class RagTruthSet:
    """A RAGTruth --dataset: its selection, bad rows, gold counts (`hallucinated` responses and
    `spans`), the response-level threshold, and every metric's figures (`metrics[name]`)."""

    selection: RagTruthSelection
    bad_rows: list[str]
    gold: GoldCounts
    threshold: float
    metrics: dict[str, RagTruthFigures]
    by_task: dict[str, dict[str, RagTruthFigures]] = field(default_factory=dict)  # task type -> metric

    def to_dict(self) -> dict[str, Any]:
        return {
            "selection": self.selection.to_dict(),
            "bad_rows": list(self.bad_rows),
            "gold": self.gold.to_dict(),
            "threshold": self.threshold,
            "metrics": {m: f.to_dict() for m, f in self.metrics.items()},
            "by_task": {t: {m: f.to_dict() for m, f in per.items()} for t, per in self.by_task.items()},
        }


@dataclass(frozen=True)
class AggreFactRow:
    """One metric on one source dataset of LLM-AggreFact: the threshold, where it was tuned, the dev
    and test row counts, and the test balanced accuracy; where there is none (no test rows, or rows
    of one class only), None for both and `undefined` saying why."""

    threshold: float | None
    tuned_on: str
    dev: int
    test: int
    balanced_accuracy: float | None
    undefined: str | None = None
    fixed_threshold: float = 0.5  # the benchmark's official rule, nothing tuned
    fixed_balanced_accuracy: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AggreFactMetric:
    """One metric on an LLM-AggreFact set: per source dataset, the unweighted mean of the balanced
    accuracies, and the source datasets left out of it (no balanced accuracy)."""

    datasets: dict[str, AggreFactRow]
    mean_balanced_accuracy: float | None
    left_out: list[str] = field(default_factory=list)
    fixed_threshold: float = 0.5
    mean_fixed_balanced_accuracy: float | None = None
    left_out_fixed: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, figures: Mapping[str, Any]) -> AggreFactMetric:
        """From `aggrefact.per_dataset`'s dict."""
        return cls(
            {name: AggreFactRow(**row) for name, row in figures["datasets"].items()},
            figures["mean_balanced_accuracy"],
            list(figures.get("left_out", [])),
            figures.get("fixed_threshold", 0.5),
            figures.get("mean_fixed_balanced_accuracy"),
            list(figures.get("left_out_fixed", [])),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PublishedBeside:
    """A published figure on a set of this format (`meta.published.beside`), with the run's figure
    of the same measure (`measured`: None where the run has none) and who measured it."""

    measure: str
    label: str
    published: float
    published_by: str
    published_models: str
    paper: str
    table: str | None
    source: str
    note: str
    measured: float | None
    measured_by: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BenchmarkReport:
    """`run_benchmark`'s result: the datasets, where each metric came from (`metrics`: metric -> its
    source), the ROC AUCs (`results[dataset]`), the notes; with a signature its short form and the
    meaningless note (None unless tiny models); the calibration, the RAGTruth and LLM-AggreFact
    figures (empty: no such set), the published figures beside the run's, and the plots' names."""

    draws: int
    seed: int
    datasets: dict[str, DatasetInfo]
    metrics: dict[str, dict[str, Any]]
    results: dict[str, DatasetResult]
    notes: list[str]
    published: dict[str, list[PublishedBeside]]
    confidence: float = 0.95
    decision_rule: str = "consistent iff score > threshold"
    signature: str | None = None
    signature_short: str | None = None
    meaningless: str | None = None
    calibration: Calibration | None = None
    ragtruth: dict[str, RagTruthSet] = field(default_factory=dict)
    aggrefact: dict[str, dict[str, AggreFactMetric]] = field(default_factory=dict)
    # the multilingual sets' own figures (`meta.multilingual.multilingual_figures`), per set
    multilingual: dict[str, dict[str, Any]] = field(default_factory=dict)
    plots: list[str] | None = None  # None: made without figures (the JSON then has no "plots")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`benchmark.json`), keys in the order the report has always had."""
        out: dict[str, Any] = {
            "kind": "benchmark",
            "draws": self.draws,
            "seed": self.seed,
            "confidence": self.confidence,
        }
        if self.signature:
            out.update(
                signature=self.signature, signature_short=self.signature_short, meaningless=self.meaningless
            )
        out.update(
            decision_rule=self.decision_rule,
            datasets={name: d.to_dict() for name, d in self.datasets.items()},
            metrics={m: dict(source) for m, source in self.metrics.items()},
            results={name: r.to_dict() for name, r in self.results.items()},
            notes=list(self.notes),
        )
        if self.calibration is not None:
            out["calibration"] = self.calibration.to_dict()
        if self.ragtruth:
            out["ragtruth"] = {name: r.to_dict() for name, r in self.ragtruth.items()}
        if self.aggrefact:
            out["aggrefact"] = {
                name: {m: f.to_dict() for m, f in per.items()} for name, per in self.aggrefact.items()
            }
        if self.multilingual:
            out["multilingual"] = {name: dict(figs) for name, figs in self.multilingual.items()}
        out["published"] = {name: [p.to_dict() for p in rows] for name, rows in self.published.items()}
        if self.plots is not None:
            out["plots"] = list(self.plots)
        return out


def parse_calibrate(text: str | None, names: Sequence[str]) -> tuple[str, str] | None:
    """`DEV:TEST` -> (dev, test), both names of --dataset."""
    if not text:
        return None
    dev, sep, test = text.partition(":")
    if not sep or not dev or not test:
        raise DatasetError(f"--calibrate '{text}': expected DEV:TEST, two names given with --dataset.")
    for part in (dev, test):
        if part not in names:
            raise DatasetError(
                f"--calibrate '{text}': '{part}' is not a --dataset name (given: {', '.join(names)})."
            )
    return dev, test


def distinct_pairs(datasets: Sequence[Dataset]) -> tuple[list[Key], dict[Key, str]]:
    """Every distinct (response, knowledge) pair, in order of first appearance, and where it is."""
    where: dict[Key, str] = {}
    for ds in datasets:
        for key, place in zip(ds.keys(), ds.where):
            where.setdefault(key, f"--dataset {ds.name}: {place}")
    return list(where), where


def row_ids(datasets: Sequence[Dataset]) -> dict[str, Key]:
    """`NAME:ROW` (ROW 1-based within the dataset) -> its pair, for every row of every dataset: a
    score file's `id` names its response whatever the order of the --dataset arguments."""
    return {f"{ds.name}:{i}": key for ds in datasets for i, key in enumerate(ds.keys(), 1)}


def template_records(datasets: Sequence[Dataset]) -> list[dict[str, str]]:
    """`--write-template`'s rows: each distinct pair once, with the id of its first row."""
    first: dict[Key, str] = {}
    for ident, key in row_ids(datasets).items():
        first.setdefault(key, ident)
    return [
        {"id": ident, "response": key[0], "knowledge": key[1], "message": ""} for key, ident in first.items()
    ]


def auc_with_draws(
    scores: np.ndarray, consistent: np.ndarray, indices: np.ndarray
) -> tuple[float, np.ndarray]:
    """ROC AUC on all responses, and on each resample (NaN where a resample has one class only)."""
    return float(roc_auc_ranks(scores, consistent)[0]), roc_auc_ranks(scores[indices], consistent[indices])


def _interval(boot: np.ndarray) -> tuple[float | None, float | None]:
    kept = boot[~np.isnan(boot)]
    return (float(np.percentile(kept, 2.5)), float(np.percentile(kept, 97.5))) if kept.size else (None, None)


def run_benchmark(
    datasets: Sequence[Dataset],
    *,
    q2: Q2Scores | None = None,
    extra: Sequence[ScoreSpec] = (),
    nlp: Any = None,
    nli: NLIClassifier | None = None,
    bertscore: bool = True,
    draws: int = AUC_DRAWS,
    seed: int = 0,
    calibration: tuple[str, str] | None = None,
    figures: dict[str, bytes] | None = None,
    progress: Callable[[str], None] | None = None,
    signature: str | None = None,
    threshold: float = 0.5,
    span_predictions: Sequence[str] | Mapping[str, Sequence[Any]] = (),
) -> BenchmarkReport:
    """The benchmark (see the module's docstring; `BenchmarkReport.to_dict()` is the JSON form);
    with `figures`, it is filled with a ROC plot and a score-distribution plot per dataset (file name -> PNG bytes).
    `signature` (Q²'s, when `q2` scores) goes into the report with its short form; when it names a
    tiny random model, the report says the numbers are meaningless (`meaningless`, and a note).

    A RAGTruth set also gets `ragtruth[NAME]` (`meta.ragtruth`: response level at `threshold` for
    every score, both character levels for Q²'s unsupported spans and for each
    `span_predictions` NAME=FILE), an LLM-AggreFact set `aggrefact[NAME]` (`meta.aggrefact`), and
    every set the published figures of its format beside the run's (`published[NAME]`).
    `span_predictions` may be given already read (`read_span_files`); either way they are read and
    checked before any work."""
    say = progress or (lambda msg: None)
    notes: list[str] = []
    keys, where = distinct_pairs(datasets)
    check_names(extra)
    spans_read = (
        span_predictions
        if isinstance(span_predictions, Mapping)
        else read_span_files(datasets, span_predictions)
    )
    ids = row_ids(datasets)
    supplied = {
        spec.name: spec.oriented(read_scores(spec, keys, where, ids)) for spec in extra
    }  # checked first
    position = {k: i for i, k in enumerate(keys)}
    index = {ds.name: np.array([position[k] for k in ds.keys()], dtype=int) for ds in datasets}

    if nlp is None:
        from q2_metric.frontend import load_spacy_pipeline

        nlp = load_spacy_pipeline()
    say(f"baselines on the {len(keys):,} distinct responses of {len(datasets)} dataset(s)")
    base = baseline_scores(
        [k[0] for k in keys], [k[1] for k in keys], nlp=nlp, nli=nli, bertscore=bertscore, notes=notes
    )
    union = {m: np.asarray(to_unit_scale(m, list(v)), float) for m, v in base.items()}
    union.update(supplied)
    scores: dict[str, dict[str, np.ndarray]] = {}  # metric -> dataset -> oriented scores
    raw: dict[str, dict[str, np.ndarray]] = {}  # Q²'s, with NaN where unscored
    q2_spans: dict[str, Sequence[Any]] = {}
    if q2 is not None:
        for ds in datasets:
            say(f"Q² on {ds.name} ({len(ds.response):,} responses)")
            for m, values in q2(ds).items():
                if m == SPANS_KEY:
                    q2_spans[ds.name] = values
                    continue
                values = np.asarray(values, float)
                raw.setdefault(m, {})[ds.name] = values
                missing = int(np.isnan(values).sum())
                if missing:
                    notes.append(f"{m} on {ds.name}: {missing} response(s) without a score count as 0.")
                scores.setdefault(m, {})[ds.name] = np.nan_to_num(values, nan=0.0)
    for m, values in union.items():
        scores[m] = {ds.name: values[index[ds.name]] for ds in datasets}

    say(f"ROC AUC with {draws} bootstrap resamples per dataset")
    results: dict[str, DatasetResult] = {}
    for ds in datasets:
        y = np.asarray(ds.consistent, int)
        indices = resample_indices(len(y), draws, seed)
        aucs, boots = {}, {}
        for m in scores:
            aucs[m], boots[m] = auc_with_draws(scores[m][ds.name], y, indices)
        present = [m for m in BASELINES if m in aucs]
        best = max(present, key=lambda m: aucs[m]) if present else None
        per_metric = {}
        for m in scores:
            low, high = _interval(boots[m])
            per_metric[m] = MetricAuc(
                roc_auc=aucs[m],
                low=low,
                high=high,
                draws=int((~np.isnan(boots[m])).sum()),
                p_vs_q2=paired_bootstrap_pvalue(boots[m], boots["q2"])
                if "q2" in boots and m != "q2"
                else None,
                p_vs_best_baseline=paired_bootstrap_pvalue(boots[m], boots[best])
                if best and m != best
                else None,
            )
        results[ds.name] = DatasetResult(best, per_metric)
        if len(set(ds.consistent)) < 2:  # (only RAGTruth's selections get here: its figures need none)
            cls = "consistent" if ds.consistent and ds.consistent[0] else "inconsistent"
            notes.append(
                f"ROC AUC is not defined on {ds.name}: every one of its {len(y):,} responses is {cls}; "
                "its other figures are reported."
            )

    meaningless = None
    if signature:
        from q2_metric.display import tiny_note
        from q2_metric.signature import Signature

        if Signature.parse(signature).tiny():
            meaningless = tiny_note(always=True)
            notes.insert(0, meaningless)
    signature_short = _short_signature(signature) if signature else None
    calibrated = None
    if calibration:
        dev, test = calibration
        y = {ds.name: ds.consistent for ds in datasets}
        calibrated = Calibration(
            dev,
            test,
            {m: Calibrated.of(calibrate(scores[m][dev], y[dev], scores[m][test], y[test])) for m in scores},
        )
    ragtruth, aggrefact, published = _protocols(
        datasets, results, signature_short, scores, raw, q2_spans, spans_read, threshold
    )
    multilingual = _multilingual(datasets, signature_short, scores, raw, q2_spans, spans_read, published)
    plots = None
    if figures is not None:
        say("plots")
        figures.update(benchmark_figures(datasets, scores))
        plots = list(figures)
    return BenchmarkReport(
        draws=draws,
        seed=seed,
        datasets={ds.name: DatasetInfo.of(ds) for ds in datasets},
        metrics={m: _metric_source(m, extra) for m in scores},
        results=results,
        notes=notes,
        published=published,
        signature=signature or None,
        signature_short=signature_short,
        meaningless=meaningless,
        calibration=calibrated,
        ragtruth=ragtruth,
        aggrefact=aggrefact,
        multilingual=multilingual,
        plots=plots,
    )


def _protocols(
    datasets: Sequence[Dataset],
    results: Mapping[str, DatasetResult],
    signature_short: str | None,
    scores: Mapping[str, Mapping[str, np.ndarray]],
    raw: Mapping[str, Mapping[str, np.ndarray]],
    q2_spans: Mapping[str, Sequence[Any]],
    span_predictions: Mapping[str, Sequence[Any]],
    threshold: float,
) -> tuple[dict[str, RagTruthSet], dict[str, dict[str, AggreFactMetric]], dict[str, list[PublishedBeside]]]:
    """RAGTruth's and LLM-AggreFact's figures (per such set), and the published figures beside the
    measured."""
    from q2_metric.meta.aggrefact import aggrefact_figures
    from q2_metric.meta.published import beside
    from q2_metric.meta.ragtruth import TASKS, gold_summary, ragtruth_figures

    ragtruth = [ds for ds in datasets if ds.gold_spans is not None]
    ragtruth_sets: dict[str, RagTruthSet] = {}
    aggrefact_sets: dict[str, dict[str, AggreFactMetric]] = {}
    published: dict[str, list[PublishedBeside]] = {}
    who = "Q²" + (f" ({signature_short})" if signature_short else "")
    if "q2" not in scores:
        who = "Q² (not scored in this run)"
    for ds in ragtruth:
        gold = ds.gold_spans or []
        values = {
            m: [None if np.isnan(v) else float(v) for v in raw[m][ds.name]]
            if m in raw
            else per[ds.name].tolist()
            for m, per in scores.items()
        }
        spans: dict[str, Sequence[Any]] = {}
        if ds.name in q2_spans:
            spans["q2"] = [None if p is None else [tuple(x) for x in p] for p in q2_spans[ds.name]]
        spans.update(span_predictions)  # (of the one RAGTruth set: `read_span_files`)
        figs = ragtruth_figures(ds.ids, gold, values, spans, threshold)
        by_task = {}
        for task in TASKS:  # the same figures on each task type's responses
            rows = [i for i, t in enumerate(ds.task) if t == task]
            if rows:
                part = ragtruth_figures(
                    [ds.ids[i] for i in rows],
                    [gold[i] for i in rows],
                    {m: [v[i] for i in rows] for m, v in values.items()},
                    {m: [p[i] for i in rows] for m, p in spans.items()},
                    threshold,
                )
                by_task[task] = {m: RagTruthFigures.of(f) for m, f in part.items()}
        ragtruth_sets[ds.name] = RagTruthSet(
            RagTruthSelection.of(ds.selection or {}),
            list(ds.bad),
            GoldCounts(**gold_summary(gold)),
            threshold,
            {m: RagTruthFigures.of(f) for m, f in figs.items()},
            by_task,
        )
        q2_figs = figs.get("q2 spans") or {}
        measured = {
            "response_f1": (figs.get("q2") or {}).get("response", {}).get("f1"),
            "char_f1_lettucedetect": (q2_figs.get("character_lettucedetect") or {}).get("f1"),
        }
        languages = sorted(set(ds.langs or []))
        if ds.format == "ragtruth" and ds.langs is None:
            published[ds.name] = [PublishedBeside(**row) for row in beside("ragtruth", measured, who)]
        elif ds.format == "ragtruth" and len(languages) == 1:  # the translated set of one language
            published[ds.name] = [
                PublishedBeside(**row) for row in beside(f"ragtruth:{languages[0]}", measured, who)
            ]
    for ds in datasets:
        if ds.groups is None:
            continue
        figs = aggrefact_figures(
            {m: per[ds.name].tolist() for m, per in scores.items()}, ds.consistent, ds.groups, ds.splits or []
        )
        aggrefact_sets[ds.name] = {m: AggreFactMetric.of(f) for m, f in figs.items()}
        q2_mean = aggrefact_sets[ds.name]["q2"].mean_balanced_accuracy if "q2" in figs else None
        published[ds.name] = [
            PublishedBeside(**row)
            for row in beside("llm-aggrefact", {"mean_balanced_accuracy": q2_mean}, who)
        ]
    for ds in datasets:
        if ds.faithdial is not None:  # FaithDial's tables: the mean Q² of its responses, scored ones
            mine = np.asarray(ds.faithdial, bool)
            means = {
                measure: float(np.nanmean(raw[m][ds.name][mine]))
                if m in raw and mine.any() and not np.isnan(raw[m][ds.name][mine]).all()
                else None
                for measure, m in (("mean_q2_nli", "q2"), ("mean_q2_f1", "q2_no_nli"))
            }
            published[ds.name] = [PublishedBeside(**r) for r in beside("faithdial", means, who)]
    for ds in datasets:
        if ds.format in ("q2-wow", "begin-v1"):
            q2_auc = results[ds.name].metrics.get("q2")
            auc = q2_auc.roc_auc if q2_auc else None
            published[ds.name] = [
                PublishedBeside(**r)
                for r in beside(ds.format, {"roc_auc_best": auc}, who)
                if r["measure"] == "roc_auc_best"
            ]
    return ragtruth_sets, aggrefact_sets, published


def _multilingual(
    datasets: Sequence[Dataset],
    signature_short: str | None,
    scores: Mapping[str, Mapping[str, np.ndarray]],
    raw: Mapping[str, Mapping[str, np.ndarray]],
    q2_spans: Mapping[str, Sequence[Any]],
    span_predictions: Mapping[str, Sequence[Any]],
    published: dict[str, list[PublishedBeside]],
) -> dict[str, dict[str, Any]]:
    """Each multilingual set's figures per language (`meta.multilingual`); SEAHORSE's published
    figures go beside Q²'s (into `published`)."""
    from q2_metric.meta.multilingual import multilingual_figures
    from q2_metric.meta.published import beside

    out: dict[str, dict[str, Any]] = {}
    who = "Q²" + (f" ({signature_short})" if signature_short else "")
    if "q2" not in scores:
        who = "Q² (not scored in this run)"
    for ds in datasets:
        if ds.langs is None:
            continue
        # Q²'s own scores with NaN where unscored: SEAHORSE's figures leave those rows out
        values = {m: (raw[m][ds.name] if m in raw else per[ds.name]) for m, per in scores.items()}
        spans: dict[str, Sequence[Any]] = {}
        if ds.gold_spans is not None:
            if ds.name in q2_spans:
                spans["q2"] = [None if p is None else [tuple(x) for x in p] for p in q2_spans[ds.name]]
            spans.update(span_predictions)
        out[ds.name] = multilingual_figures(ds, values, spans)
        if ds.format == "seahorse":
            everyone = out[ds.name]["by_language"].get("all", {}).get("q2") or {}
            measured = {"pearson_all": everyone.get("pearson"), "roc_auc_all": everyone.get("roc_auc")}
            published[ds.name] = [PublishedBeside(**r) for r in beside("seahorse", measured, who)]
    return out


def read_span_files(datasets: Sequence[Dataset], specs: Sequence[str]) -> dict[str, list[Any]]:
    """Every `--ragtruth-spans NAME=FILE`, read and checked against the one RAGTruth set (name ->
    predictions in its row order): before any work, so that a bad file stops the run before scoring.

    Raises:
        DatasetError: spans without exactly one RAGTruth set, or a name given twice.
        RagTruthError: a bad line of a file (one sentence naming its line).
    """
    from q2_metric.meta.ragtruth import read_span_predictions

    if not specs:
        return {}
    ragtruth = [ds for ds in datasets if ds.gold_spans is not None]
    if len(ragtruth) != 1:
        raise DatasetError(f"--ragtruth-spans needs exactly one RAGTruth --dataset, got {len(ragtruth)}.")
    out: dict[str, list[Any]] = {}
    for spec in specs:
        if ragtruth[0].format == "mu-shroom":  # the task's submission format (soft labels), or spans
            from q2_metric.meta.mushroom import read_predictions

            name, soft = read_predictions(spec, ragtruth[0].ids, ragtruth[0].response)
            predicted: list[Any] = list(soft)
        else:
            name, predicted = read_span_predictions(spec, ragtruth[0].ids, ragtruth[0].response)
        if name in out or name == "q2":
            raise DatasetError(
                f"--ragtruth-spans {spec}: the name '{name}' is "
                + ("Q²'s own spans" if name == "q2" else "given twice")
                + "; give each file its own name."
            )
        out[name] = predicted
    return out


def _short_signature(signature: str) -> str:
    from q2_metric.signature import Signature

    return Signature.parse(signature).short()


def _metric_source(metric: str, extra: Sequence[ScoreSpec]) -> dict:
    spec = next((s for s in extra if s.name == metric), None)
    if spec:
        return {
            "source": str(spec.path),
            "column": spec.column,
            "lower": spec.lower,
            "range": [spec.low, spec.high],
        }
    if metric in Q2_METRICS:
        return {"source": "q2 score (this run)", "scale": "0-1"}
    return {
        "source": "baseline",
        "scale": {"bleu": "BLEU / 100", "bertscore": "min-max over all datasets"}.get(metric, "0-1"),
    }


def figure_name(kind: str, dataset: str) -> str:
    import re

    return f"{kind}_{re.sub(r'[^A-Za-z0-9_.-]', '_', dataset)}.png"


def benchmark_figures(
    datasets: Sequence[Dataset], scores: Mapping[str, Mapping[str, np.ndarray]]
) -> dict[str, bytes]:
    """Per dataset: ROC curves of every metric, and each metric's score histogram by label."""
    from q2_metric.meta import plots as meta_plots

    out = {}
    for ds in datasets:
        y = np.asarray(ds.consistent, int)
        title = f"{ds.name} ({len(y):,} responses)"
        out[figure_name("roc", ds.name)] = meta_plots.roc_curves_png(
            {m: {ds.name: (scores[m][ds.name], y)} for m in scores}, {ds.name: title}
        )
        out[figure_name("scores", ds.name)] = meta_plots.histogram_png(  # one panel per metric
            ds.name,
            {m: (scores[m][ds.name], y) for m in scores},
            {m: meta_plots.label(m) for m in scores},
            xlabels={m: f"{meta_plots.label(m)} score" for m in scores},
        )
    return out
