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
    span_predictions: Sequence[str] = (),
) -> dict:
    """The benchmark as one JSON-ready dict (see the module's docstring); with `figures`, it is
    filled with a ROC plot and a score-distribution plot per dataset (file name -> PNG bytes).
    `signature` (Q²'s, when `q2` scores) goes into the report with its short form; when it names a
    tiny random model, the report says the numbers are meaningless (`meaningless`, and a note).

    A RAGTruth set also gets `ragtruth[NAME]` (`meta.ragtruth`: response level at `threshold` for
    every score, both character levels for Q²'s unsupported spans and for each
    `span_predictions` NAME=FILE), an LLM-AggreFact set `aggrefact[NAME]` (`meta.aggrefact`), and
    every set the published figures of its format beside the run's (`published[NAME]`)."""
    say = progress or (lambda msg: None)
    notes: list[str] = []
    keys, where = distinct_pairs(datasets)
    check_names(extra)
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
    results: dict[str, dict[str, Any]] = {}
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
            per_metric[m] = {
                "roc_auc": aucs[m],
                "low": low,
                "high": high,
                "draws": int((~np.isnan(boots[m])).sum()),
                "p_vs_q2": paired_bootstrap_pvalue(boots[m], boots["q2"])
                if "q2" in boots and m != "q2"
                else None,
                "p_vs_best_baseline": paired_bootstrap_pvalue(boots[m], boots[best])
                if best and m != best
                else None,
            }
        results[ds.name] = {"best_baseline": best, "metrics": per_metric}

    meaningless = None
    if signature:
        from q2_metric.display import tiny_note
        from q2_metric.signature import Signature

        if Signature.parse(signature).tiny():
            meaningless = tiny_note(always=True)
            notes.insert(0, meaningless)
    report: dict[str, Any] = {
        "kind": "benchmark",
        "draws": draws,
        "seed": seed,
        "confidence": 0.95,
        **(
            {
                "signature": signature,
                "signature_short": _short_signature(signature),
                "meaningless": meaningless,
            }
            if signature
            else {}
        ),
        "decision_rule": "consistent iff score > threshold",
        "datasets": {ds.name: ds.summary() for ds in datasets},
        "metrics": {m: _metric_source(m, extra) for m in scores},
        "results": results,
        "notes": notes,
    }
    if calibration:
        dev, test = calibration
        y = {ds.name: ds.consistent for ds in datasets}
        report["calibration"] = {
            "dev": dev,
            "test": test,
            "metrics": {m: calibrate(scores[m][dev], y[dev], scores[m][test], y[test]) for m in scores},
        }
    _protocols(report, datasets, scores, raw, q2_spans, span_predictions, threshold)
    if figures is not None:
        say("plots")
        figures.update(benchmark_figures(datasets, scores))
        report["plots"] = list(figures)
    return report


def _protocols(
    report: dict[str, Any],
    datasets: Sequence[Dataset],
    scores: Mapping[str, Mapping[str, np.ndarray]],
    raw: Mapping[str, Mapping[str, np.ndarray]],
    q2_spans: Mapping[str, Sequence[Any]],
    span_predictions: Sequence[str],
    threshold: float,
) -> None:
    """RAGTruth's and LLM-AggreFact's figures, and the published figures beside the measured."""
    from q2_metric.meta.aggrefact import aggrefact_figures
    from q2_metric.meta.published import beside
    from q2_metric.meta.ragtruth import gold_summary, ragtruth_figures, read_span_predictions

    ragtruth = [ds for ds in datasets if ds.gold_spans is not None]
    if span_predictions and len(ragtruth) != 1:
        raise DatasetError(f"--ragtruth-spans needs exactly one RAGTruth --dataset, got {len(ragtruth)}.")
    published: dict[str, Any] = {}
    who = "Q²" + (f" ({report['signature_short']})" if report.get("signature_short") else "")
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
        spans = {}
        if ds.name in q2_spans:
            spans["q2"] = [None if p is None else [tuple(x) for x in p] for p in q2_spans[ds.name]]
        for spec in span_predictions:
            name, predicted = read_span_predictions(spec, ds.ids, ds.response)
            spans[name] = predicted
        figs = ragtruth_figures(ds.ids, gold, values, spans, threshold)
        report.setdefault("ragtruth", {})[ds.name] = {
            "selection": ds.selection,
            "bad_rows": list(ds.bad),
            "gold": gold_summary(gold),
            "threshold": threshold,
            "metrics": figs,
        }
        q2_figs = figs.get("q2 spans") or {}
        measured = {
            "response_f1": (figs.get("q2") or {}).get("response", {}).get("f1"),
            "char_f1_lettucedetect": (q2_figs.get("character_lettucedetect") or {}).get("f1"),
        }
        published[ds.name] = beside("ragtruth", measured, who)
    for ds in datasets:
        if ds.groups is None:
            continue
        figs = aggrefact_figures(
            {m: per[ds.name].tolist() for m, per in scores.items()}, ds.consistent, ds.groups, ds.splits or []
        )
        report.setdefault("aggrefact", {})[ds.name] = figs
        published[ds.name] = beside(
            "llm-aggrefact",
            {"mean_balanced_accuracy": (figs.get("q2") or {}).get("mean_balanced_accuracy")},
            who,
        )
    for ds in datasets:
        if ds.format in ("q2-wow", "begin-v1"):
            auc = report["results"][ds.name]["metrics"].get("q2", {}).get("roc_auc")
            rows = [
                r for r in beside(ds.format, {"roc_auc_best": auc}, who) if r["measure"] == "roc_auc_best"
            ]
            published[ds.name] = rows
    report["published"] = published


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
        out[figure_name("scores", ds.name)] = meta_plots.histogram_png(
            ds.name, {m: (scores[m][ds.name], y) for m in scores}, {m: meta_plots.label(m) for m in scores}
        )
    return out
