"""`q2 meta-eval`: the paper's validation of Q² against human consistency labels, as the released
code computes it, and the TRUE protocol (Honovich et al., 2022) that the field compares metrics by.

- Table 2: mean score per split (and, for Q², valid questions, no-answer share and coverage).
- Table 3: a score <= threshold (0.5) is *inconsistent*, above it *consistent* (the released
  code's rule, as `q2 score --threshold`: `display.decide`); accuracy,
  precision/recall/F1 of both classes, ROC AUC. BLEU is divided by 100 and BERTScore min-max
  scaled to [0, 1] first, as the released code does.
- Table 4: system-level bootstrap over the contexts where exactly one system is inconsistent.
- TRUE: ROC AUC of each metric's score against the human label (consistent = positive) with a
  95% percentile-bootstrap interval, on the 600 split responses and on the 1,088 responses of
  the cross annotation.

Metrics: Q² and Q² without NLI (`q2 score` columns), the baselines (`meta_baselines`), and any
user-supplied metric (`meta_scores`). Statistics are pure functions in `meta_stats`, figures in
`meta_plots`, the Markdown and LaTeX reports in `meta_report`. Inputs are validated first: a
missing or partly empty score column, a non-numeric or out-of-range score, or a label other than
0/1 stops with one sentence naming the file, column and row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from q2_metric.components import NLIClassifier
from q2_metric.errors import Q2InputError
from q2_metric.meta.baselines import baseline_scores
from q2_metric.meta.scores import Key, ScoreSpec, read_scores
from q2_metric.meta.stats import (
    AUC_DRAWS,
    AucInterval,
    BootstrapResult,
    classification_report,
    resample_indices,
    roc_auc,
    roc_auc_interval,
    system_bootstrap,
    to_unit_scale,
)

SPLITS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
SYSTEMS = ("dodeca", "memnet")
RANGES = {"q2": (0.0, 1.0), "q2_no_nli": (0.0, 1.0)}


class MetaEvalInputError(Q2InputError):
    """An input table of the meta-evaluation is incomplete or wrong; the message is one sentence."""


# -- the result: read by attribute; `to_dict()` is what meta_eval.json holds ---------------------


@dataclass(frozen=True)
class SplitMeans:
    """Table 2, one split: each metric's mean score (on its own scale), the number of responses, and
    for Q² the question statistics (`valid_questions`, `no_answer_share`, `coverage`) when known."""

    means: dict[str, float]
    n: int
    stats: dict[str, float]

    def value(self, name: str) -> float | None:
        """A metric's mean or a statistic by name (None when absent)."""
        return self.means.get(name, self.stats.get(name))

    def to_dict(self) -> dict[str, Any]:
        return {**self.means, "n": self.n, **self.stats}


@dataclass(frozen=True)
class ClassScores:
    """Precision, recall and F1 of one class."""

    precision: float
    recall: float
    f1: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Classification:
    """Table 3, one metric: the decisions at `threshold` against the labels, and the ROC AUC."""

    threshold: float
    n: int
    accuracy: float
    consistent: ClassScores
    inconsistent: ClassScores
    roc_auc: float

    @classmethod
    def of(cls, report: dict[str, Any], roc_auc: float) -> Classification:
        """From `stats.classification_report`'s dict and the ROC AUC."""
        return cls(
            report["threshold"],
            report["n"],
            report["accuracy"],
            ClassScores(**report["consistent"]),
            ClassScores(**report["inconsistent"]),
            roc_auc,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SystemRanking:
    """Table 4, one metric: the system-level bootstrap over `contexts` contexts."""

    bootstrap: BootstrapResult
    contexts: int

    def to_dict(self) -> dict[str, Any]:
        return {**self.bootstrap.to_dict(), "contexts": self.contexts}


@dataclass(frozen=True)
class SetInfo:
    """One annotated set of the TRUE protocol: its title, size and inconsistent responses."""

    title: str
    n: int
    inconsistent: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TrueTable:
    """The TRUE protocol: each metric's ROC AUC interval on each set (`metrics[metric][set]`)."""

    draws: int
    seed: int
    confidence: float
    sets: dict[str, SetInfo]
    metrics: dict[str, dict[str, AucInterval]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "draws": self.draws,
            "seed": self.seed,
            "confidence": self.confidence,
            "sets": {name: info.to_dict() for name, info in self.sets.items()},
            "metrics": {
                m: {name: a.to_dict() for name, a in per_set.items()} for m, per_set in self.metrics.items()
            },
        }


@dataclass(frozen=True)
class MetaEvalReport:
    """`run_meta_eval`'s result: Tables 2-4 and the TRUE table, with where each metric came from
    (`metrics`: metric -> its source), the notes and, with figures, the plots' file names."""

    threshold: float
    seed: int
    sources: dict[str, str]
    metrics: dict[str, dict[str, Any]]
    table2: dict[str, SplitMeans]
    table3: dict[str, Classification]
    table4: dict[str, SystemRanking]
    true: TrueTable
    contexts_one_inconsistent: int
    notes: list[str]
    plots: list[str] | None = None  # None: made without figures (the JSON then has no "plots")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`meta_eval.json`), keys in the order the report has always had."""
        out: dict[str, Any] = {
            "threshold": self.threshold,
            "seed": self.seed,
            "sources": dict(self.sources),
            "metrics": {m: dict(d) for m, d in self.metrics.items()},
            "table2": {s: row.to_dict() for s, row in self.table2.items()},
            "table3": {m: row.to_dict() for m, row in self.table3.items()},
            "table4": {m: row.to_dict() for m, row in self.table4.items()},
            "true": self.true.to_dict(),
            "contexts_one_inconsistent": self.contexts_one_inconsistent,
            "notes": list(self.notes),
        }
        if self.plots is not None:
            out["plots"] = list(self.plots)
        return out


# -- inputs ------------------------------------------------------------------------------------
def read_split(path: str | Path) -> list[dict]:
    """The rows of an annotated split or score file, read by the one table reader (`io.read_table`);
    one sentence when it is missing or a row cannot be read."""
    from q2_metric import io

    path = Path(path)
    if not path.is_file():
        raise MetaEvalInputError(f"{path}: no such file.")
    rows, _ = io.read_table(path)
    bad = next((r for r in rows if r.error), None)
    if bad is not None:
        raise MetaEvalInputError(f"{path}: {bad.error}.")
    return [r.fields for r in rows]


def numeric_column(
    rows: Sequence[dict], column: str, source: str, value_range: tuple[float, float] | None = None
) -> list[float]:
    """Every value of `column` as a float; any missing, empty, non-numeric or out-of-range value
    raises `MetaEvalInputError` naming the file, column and row (row 1 = the first data row)."""
    if rows and column not in rows[0]:
        raise MetaEvalInputError(f"{source}: column '{column}' is missing.")
    values = []
    for i, row in enumerate(rows, 1):
        raw = (row.get(column) or "").strip()
        try:
            value = float(raw)
        except ValueError:
            what = "is empty" if not raw else f"holds {raw!r}, not a number"
            raise MetaEvalInputError(
                f"{source}: column '{column}' {what} at row {i} (line {i + 1})."
            ) from None
        if math.isnan(value) or (value_range and not value_range[0] <= value <= value_range[1]):
            raise MetaEvalInputError(
                f"{source}: column '{column}' holds {raw} at row {i} (line {i + 1}), "
                f"outside [{value_range[0]:g}, {value_range[1]:g}]."
                if value_range
                else f"{source}: column '{column}' holds NaN at row {i} (line {i + 1})."
            )
        values.append(value)
    return values


def label_column(rows: Sequence[dict], column: str, source: str) -> list[int]:
    """Human labels (1 = inconsistent, 0 = consistent); anything else raises."""
    if rows and column not in rows[0]:
        raise MetaEvalInputError(f"{source}: column '{column}' is missing.")
    out = []
    for i, row in enumerate(rows, 1):
        raw = (row.get(column) or "").strip()
        if raw not in ("0", "1", "0.0", "1.0"):
            raise MetaEvalInputError(
                f"{source}: column '{column}' holds {raw!r} at row {i} (line {i + 1}); labels must be 0 or 1."
            )
        out.append(int(float(raw)))
    return out


# -- the whole evaluation ----------------------------------------------------------------------
@dataclass
class AnnotatedSet:
    """The four split tables and the cross annotation, with where each came from."""

    splits: dict[str, list[dict]]
    cross: list[dict]
    sources: dict[str, str]

    @classmethod
    def from_dir(cls, directory: str | Path, **overrides: str | None) -> AnnotatedSet:
        """`DIR/{split}.csv` and `DIR/cross_annotation.csv`; `overrides` maps a split (or
        `cross`) to another file."""
        folder = Path(directory) if directory else None
        sources = {}
        for name in (*SPLITS, "cross"):
            path = overrides.get(name)
            if path is None:
                if folder is None:
                    raise MetaEvalInputError(
                        f"no file for {name}: pass --annotated-dir or --{name.replace('_', '-')}."
                    )
                sources[name] = str(folder / ("cross_annotation.csv" if name == "cross" else f"{name}.csv"))
            else:
                sources[name] = str(path)
        data = {name: read_split(path) for name, path in sources.items()}
        return cls({s: data[s] for s in SPLITS}, data["cross"], sources)

    def responses(self) -> dict[str, Responses]:
        """The two TRUE sets: `split` (the four split files, in SPLITS order) and `cross` (every
        dodeca response of the cross annotation, then every MemNet one), labels as consistent = 1."""

        def text(rows: list[dict], column: str, source: str) -> list[str]:
            if rows and column not in rows[0]:
                raise MetaEvalInputError(f"{source}: column '{column}' is missing.")
            return [r[column] or "" for r in rows]

        split_r, split_k, split_y, split_g, split_where = [], [], [], [], []
        for s in SPLITS:
            rows, source = self.splits[s], self.sources[s]
            split_r += text(rows, "response", source)
            split_k += text(rows, "knowledge", source)
            split_y += [int(s.endswith("_consistent"))] * len(rows)
            split_g += [s] * len(rows)
            split_where += [f"{source} row {i}" for i in range(1, len(rows) + 1)]
        source = self.sources["cross"]
        knowledge = text(self.cross, "knowledge", source)
        cross_r, cross_y, cross_where = [], [], []
        for system in SYSTEMS:
            cross_r += text(self.cross, f"{system}_response", source)
            cross_y += [1 - y for y in label_column(self.cross, f"{system}_label", source)]
            cross_where += [f"{source} row {i} ({system})" for i in range(1, len(self.cross) + 1)]
        return {
            "split": Responses(split_r, split_k, split_y, split_g, split_where),
            "cross": Responses(
                cross_r,
                knowledge * len(SYSTEMS),
                cross_y,
                [s for s in SYSTEMS for _ in self.cross],
                cross_where,
            ),
        }

    def template(self) -> tuple[list[Key], dict[Key, str], list[dict]]:
        """The distinct (response, knowledge) pairs of both sets, in order of first appearance
        (split files, then the cross annotation), where each first appears, and the template's
        records (with the user turn, `message`, of the first appearance)."""
        keys: list[Key] = []
        where: dict[Key, str] = {}
        records = []
        messages = [r.get("message", "") for s in SPLITS for r in self.splits[s]] + [
            r.get("message", "") for _ in SYSTEMS for r in self.cross
        ]
        both = self.responses()
        for i, (key, place) in enumerate(
            zip([*both["split"].keys(), *both["cross"].keys()], [*both["split"].where, *both["cross"].where])
        ):
            if key not in where:
                keys.append(key)
                where[key] = place
                records.append({"response": key[0], "knowledge": key[1], "message": messages[i]})
        return keys, where, records


@dataclass
class Responses:
    """One TRUE set: each response with its knowledge, label (consistent = 1), group (a split or a
    system) and where it is (file and row)."""

    response: list[str]
    knowledge: list[str]
    consistent: list[int]
    group: list[str]
    where: list[str]

    def keys(self) -> list[Key]:
        return list(zip(self.response, self.knowledge))


def set_titles(sets: dict[str, Responses]) -> dict[str, str]:
    """ "600 split responses", "1,088 cross-annotated responses" (with the sizes of this run)."""
    return {
        "split": f"{len(sets['split'].consistent):,} split responses",
        "cross": f"{len(sets['cross'].consistent):,} cross-annotated responses",
    }


def run_meta_eval(
    data: AnnotatedSet,
    *,
    q2_metrics: Sequence[str] = ("q2", "q2_no_nli"),
    prefix: str = "",
    baselines_only: bool = False,
    threshold: float = 0.5,
    seed: int = 0,
    repetitions: int = 1000,
    sample_size: int = 350,
    auc_draws: int = AUC_DRAWS,
    extra: Sequence[ScoreSpec] = (),
    nlp: Any = None,
    nli: NLIClassifier | None = None,
    bertscore: bool = True,
    figures: dict[str, bytes] | None = None,
    progress: Callable[[str], None] | None = None,
) -> MetaEvalReport:
    """Tables 2-4 and the TRUE table (`MetaEvalReport.to_dict()` is the JSON form); with `figures`,
    it is filled with the plots (file name -> PNG bytes). Every input (Q² columns, labels, `extra` score files) is
    validated before any computation."""
    notes: list[str] = []
    sets = data.responses()
    metrics = [] if baselines_only else _present_metrics(data, q2_metrics, prefix)
    raw: dict[str, dict[str, np.ndarray]] = {}  # metric -> set -> scores on the metric's own scale
    for m in metrics:
        split = [
            v
            for s in SPLITS
            for v in numeric_column(data.splits[s], prefix + m, data.sources[s], RANGES.get(m))
        ]
        cross = [
            v
            for s in SYSTEMS
            for v in numeric_column(data.cross, f"{s}_{m}", data.sources["cross"], RANGES.get(m))
        ]
        raw[m] = {"split": np.array(split), "cross": np.array(cross)}
    keys, where, _ = data.template()
    position = {k: i for i, k in enumerate(keys)}
    index = {name: np.array([position[k] for k in r.keys()], dtype=int) for name, r in sets.items()}
    names = [spec.name for spec in extra]
    if len(set(names)) < len(names):
        raise MetaEvalInputError(
            f"--scores: the name '{next(n for n in names if names.count(n) > 1)}' is given twice."
        )
    supplied = {spec.name: read_scores(spec, keys, where) for spec in extra}

    if nlp is None:
        from q2_metric.frontend import load_spacy_pipeline

        nlp = load_spacy_pipeline()
    if progress:
        progress(f"baselines on the {len(keys)} distinct responses")
    base = baseline_scores(
        [k[0] for k in keys], [k[1] for k in keys], nlp=nlp, nli=nli, bertscore=bertscore, notes=notes
    )
    for m, values in [*base.items(), *supplied.items()]:
        values = np.asarray(values, float)
        raw[m] = {name: values[idx] for name, idx in index.items()}
    specs = {spec.name: spec for spec in extra}

    def oriented(m: str, name: str) -> np.ndarray:
        if m in specs:
            return specs[m].oriented(raw[m][name])
        return np.asarray(to_unit_scale(m, raw[m][name]), float)

    scores = {m: {name: oriented(m, name) for name in sets} for m in raw}
    labels = {name: np.array(r.consistent) for name, r in sets.items()}
    groups = {name: np.array(r.group) for name, r in sets.items()}

    table2 = {}
    for s in SPLITS:
        mask = groups["split"] == s
        table2[s] = SplitMeans(
            {m: float(np.mean(raw[m]["split"][mask])) for m in raw},
            int(mask.sum()),
            {} if baselines_only else _question_stats(data.splits[s], prefix),
        )

    table3 = {
        m: Classification.of(
            classification_report(list(scores[m]["split"]), list(labels["split"]), threshold),
            roc_auc(list(scores[m]["split"]), list(labels["split"])),
        )
        for m in raw
    }

    if progress:
        progress("system-level bootstrap (Table 4)")
    cross_labels = {s: labels["cross"][groups["cross"] == s] for s in SYSTEMS}
    one = np.flatnonzero(cross_labels["dodeca"] + cross_labels["memnet"] == 1)  # one consistent, one not
    table4 = {}
    for m in raw:
        per_system = {s: scores[m]["cross"][groups["cross"] == s][one] for s in SYSTEMS}
        dodeca_good = cross_labels["dodeca"][one] == 1
        good = np.where(dodeca_good, per_system["dodeca"], per_system["memnet"])
        bad = np.where(dodeca_good, per_system["memnet"], per_system["dodeca"])
        result = system_bootstrap(good, bad, sample_size=sample_size, repetitions=repetitions, seed=seed)
        table4[m] = SystemRanking(result, len(one))

    if progress:
        progress(f"ROC AUC with {auc_draws} bootstrap resamples (TRUE protocol)")
    true_sets = {}
    for name, r in sets.items():
        draws = resample_indices(len(r.consistent), auc_draws, seed)
        true_sets[name] = {m: roc_auc_interval(scores[m][name], labels[name], draws) for m in raw}
    true = TrueTable(
        draws=auc_draws,
        seed=seed,
        confidence=0.95,
        sets={
            name: SetInfo(
                set_titles(sets)[name], len(r.consistent), int(len(r.consistent) - sum(r.consistent))
            )
            for name, r in sets.items()
        },
        metrics={m: {name: true_sets[name][m] for name in sets} for m in raw},
    )
    plots = None
    if figures is not None:
        if progress:
            progress("plots")
        figures.update(make_figures(raw, scores, labels, set_titles(sets)))
        plots = list(figures)
    return MetaEvalReport(
        threshold=threshold,
        seed=seed,
        sources=data.sources,
        metrics={m: _metric_source(m, specs) for m in raw},
        table2=table2,
        table3=table3,
        table4=table4,
        true=true,
        contexts_one_inconsistent=len(one),
        notes=notes,
        plots=plots,
    )


def make_figures(
    raw: dict[str, dict[str, np.ndarray]],
    scores: dict[str, dict[str, np.ndarray]],
    labels: dict[str, np.ndarray],
    titles: dict[str, str],
) -> dict[str, bytes]:
    """PR curves, ROC curves and one histogram per metric, as PNG bytes by file name."""
    from q2_metric.meta import plots as meta_plots

    curves = {m: {name: (scores[m][name], labels[name]) for name in labels} for m in scores}
    out = {
        "pr_curve.png": meta_plots.pr_curves_png(curves, titles),
        "roc_curve.png": meta_plots.roc_curves_png(curves, titles),
    }
    for m in raw:
        out[meta_plots.histogram_name(m)] = meta_plots.histogram_png(
            m, {name: (raw[m][name], labels[name]) for name in labels}, titles
        )
    return out


def _metric_source(metric: str, specs: dict[str, ScoreSpec]) -> dict:
    if metric in specs:
        spec = specs[metric]
        return {
            "source": str(spec.path),
            "column": spec.column,
            "lower": spec.lower,
            "range": [spec.low, spec.high],
        }
    if metric in ("q2", "q2_no_nli"):
        return {"source": "q2 score columns", "lower": False, "range": [0.0, 1.0]}
    return {"source": "baseline", "lower": False}


def _present_metrics(data: AnnotatedSet, wanted: Sequence[str], prefix: str) -> list[str]:
    """Q² columns to evaluate: the first (`q2`) must be everywhere; another is used when every
    file has it, and is an error when only some do."""
    tables = {**{s: data.splits[s] for s in SPLITS}, "cross": data.cross}

    def has(name: str, col: str) -> bool:
        rows = tables[name]
        cols = [f"{s}_{col}" for s in SYSTEMS] if name == "cross" else [prefix + col]
        return bool(rows) and all(c in rows[0] for c in cols)

    out = []
    for i, m in enumerate(wanted):
        present = {name: has(name, m) for name in tables}
        if all(present.values()):
            out.append(m)
        elif i == 0 or any(present.values()):
            name = next(n for n, ok in present.items() if not ok)
            col = f"dodeca_{m}' and 'memnet_{m}" if name == "cross" else prefix + m
            raise MetaEvalInputError(
                f"{data.sources[name]}: column '{col}' is missing (score the file with "
                "`q2 score`, or pass --baselines-only)."
            )
    return out


def _question_stats(rows: Sequence[dict], prefix: str) -> dict[str, float]:
    """Valid questions, no-answer share and coverage of one split, from `q2 score` columns."""
    cols = [prefix + c for c in ("num_questions", "num_no_answer", "fallback")]
    if not rows or not all(c in rows[0] for c in cols):
        return {}
    questions = sum(int(float(r[cols[0]] or 0)) for r in rows)
    no_answer = sum(int(float(r[cols[1]] or 0)) for r in rows)
    covered = sum(str(r[cols[2]]).strip().lower() in ("false", "0", "") for r in rows)
    return {
        "valid_questions": questions,
        "no_answer_share": no_answer / questions if questions else float("nan"),
        "coverage": covered / len(rows),
    }
