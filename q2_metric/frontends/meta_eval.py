"""`q2 meta-eval`: the paper's validation of Q² against human consistency labels, as the released
code computes it.

- Table 2: mean score per split (and, for Q², valid questions, no-answer share and coverage).
- Table 3: a score <= threshold (0.5) is *inconsistent*, above it *consistent*; accuracy,
  precision/recall/F1 of both classes, ROC AUC. BLEU is divided by 100 and BERTScore min-max
  scaled to [0, 1] first, as the released code does.
- Table 4: system-level bootstrap over the contexts where exactly one system is inconsistent.

Baselines: overlap (token F1 of spaCy tokens, stop words and punctuation dropped), BLEU (sacrebleu,
0-100), BERTScore (F1, rescaled with baseline) and end-to-end NLI; the knowledge is lower-cased.
Inputs are validated first: a missing or partly empty score column, a non-numeric or out-of-range
score, or a label other than 0/1 stops with one sentence naming the file, column and row.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from q2_metric.validation import Q2InputError

SPLITS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
SYSTEMS = ("dodeca", "memnet")
SHARES = (0.05, 0.10, 0.15, 0.20, 0.25)
RANGES = {"q2": (0.0, 1.0), "q2_no_nli": (0.0, 1.0)}


class MetaEvalInputError(Q2InputError):
    """An input table of the meta-evaluation is incomplete or wrong; the message is one sentence."""


# -- inputs ------------------------------------------------------------------------------------
def read_table(path: str | Path) -> list[dict]:
    """Rows of a CSV file (one sentence when it is missing or cannot be read)."""
    path = Path(path)
    if not path.is_file():
        raise MetaEvalInputError(f"{path}: no such file.")
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def numeric_column(rows: Sequence[dict], column: str, source: str,
                   value_range: tuple[float, float] | None = None) -> list[float]:
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
            raise MetaEvalInputError(f"{source}: column '{column}' {what} at row {i} (line {i + 1}).") from None
        if math.isnan(value) or (value_range and not value_range[0] <= value <= value_range[1]):
            raise MetaEvalInputError(f"{source}: column '{column}' holds {raw} at row {i} (line {i + 1}), "
                                     f"outside [{value_range[0]:g}, {value_range[1]:g}]." if value_range else
                                     f"{source}: column '{column}' holds NaN at row {i} (line {i + 1}).")
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
            raise MetaEvalInputError(f"{source}: column '{column}' holds {raw!r} at row {i} (line {i + 1}); "
                                     "labels must be 0 or 1.")
        out.append(int(float(raw)))
    return out


# -- baselines ---------------------------------------------------------------------------------
def content_tokens(doc) -> list[str]:
    """Lower-cased spaCy tokens without stop words and punctuation (the released overlap)."""
    return [tok.text.lower() for tok in doc if not tok.is_stop and not tok.is_punct]


def token_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Token F1 of two token lists; 0 when nothing is shared.

    >>> token_f1(["paris", "capital"], ["paris", "city"])
    0.5
    """
    same = sum((Counter(gold) & Counter(pred)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def overlap_scores(responses: Sequence[str], knowledge: Sequence[str], nlp) -> list[float]:
    """Overlap(r, k): token F1 of the lower-cased knowledge (gold) and the response."""
    k_docs = list(nlp.pipe([k.lower() for k in knowledge]))
    r_docs = list(nlp.pipe(list(responses)))
    return [token_f1(content_tokens(k), content_tokens(r)) for k, r in zip(k_docs, r_docs)]


def bleu_scores(responses: Sequence[str], knowledge: Sequence[str]) -> list[float]:
    """Per-response sacrebleu corpus BLEU against the lower-cased knowledge, on the 0-100 scale."""
    import sacrebleu

    return [sacrebleu.corpus_bleu([r], [[k.lower()]]).score for r, k in zip(responses, knowledge)]


def bertscore_scores(responses: Sequence[str], knowledge: Sequence[str]) -> list[float] | None:
    """BERTScore F1 (lang="en", rescaled with baseline) against the lower-cased knowledge; None
    when bert-score or its model is unavailable (it is optional)."""
    try:
        import bert_score

        _, _, f1 = bert_score.score(list(responses), [k.lower() for k in knowledge], lang="en",
                                    rescale_with_baseline=True, verbose=False)
    except Exception:  # noqa: BLE001 - not installed, or its model cannot be loaded offline
        return None
    return [float(x) for x in f1]


def e2e_nli_scores(responses: Sequence[str], knowledge: Sequence[str], nli) -> list[float]:
    """End-to-end NLI: premise = the lower-cased knowledge, hypothesis = the response."""
    from q2_metric.response_scores import fallback_score

    return [fallback_score(label) for label in nli.classify([k.lower() for k in knowledge], list(responses))]


def baseline_scores(responses: Sequence[str], knowledge: Sequence[str], *, nlp, nli=None,
                    bertscore: bool = True, notes: list[str] | None = None) -> dict[str, list[float]]:
    """Every available baseline's scores."""
    out = {"overlap": overlap_scores(responses, knowledge, nlp), "bleu": bleu_scores(responses, knowledge)}
    if bertscore:
        bert = bertscore_scores(responses, knowledge)
        if bert is not None:
            out["bertscore"] = bert
        elif notes is not None and not any(n.startswith("BERTScore") for n in notes):
            notes.append("BERTScore baseline skipped: bert-score is not installed or its model is unavailable.")
    if nli is not None:
        out["e2e_nli"] = e2e_nli_scores(responses, knowledge, nli)
    return out


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
    """A score <= threshold predicts *inconsistent*; `consistent[i]` is 1 for consistent.

    >>> classification_report([0.9, 0.5, 0.6, 0.1], [1, 0, 0, 0])["accuracy"]
    0.75
    """
    pred = [int(s > threshold) for s in scores]
    out = {"threshold": threshold, "n": len(scores),
           "accuracy": sum(p == y for p, y in zip(pred, consistent)) / len(scores) if scores else float("nan")}
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
        return {"mean": self.mean, "low": self.low, "high": self.high, "no_correlation": self.no_correlation,
                "repetitions": self.repetitions, "sample_size": self.sample_size, "shares": list(self.shares)}


def simulate_systems(consistent: np.ndarray, inconsistent: np.ndarray, rng: np.random.Generator,
                     shares: Sequence[float] = SHARES, sample_size: int = 350) -> list[float]:
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


def system_bootstrap(consistent_scores: Sequence[float], inconsistent_scores: Sequence[float],
                     shares: Sequence[float] = SHARES, sample_size: int = 350, repetitions: int = 1000,
                     seed: int = 0) -> BootstrapResult:
    """Spearman of the simulated systems' scores against their quality ranks (fewer inconsistent
    responses = better), over `repetitions`: mean and 2.5/97.5 percentiles (linear
    interpolation) of the repetitions where it is defined."""
    cons, incons = np.asarray(consistent_scores, float), np.asarray(inconsistent_scores, float)
    if len(cons) != len(incons) or not len(cons):
        raise ValueError("need one consistent and one inconsistent score per context")
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, len(shares) + 1)[::-1]
    rhos = [spearman(ranks, simulate_systems(cons, incons, rng, shares, sample_size)) for _ in range(repetitions)]
    kept = [r for r in rhos if not math.isnan(r)]
    nan = float("nan")
    return BootstrapResult(mean=float(np.mean(kept)) if kept else nan,
                           low=float(np.percentile(kept, 2.5)) if kept else nan,
                           high=float(np.percentile(kept, 97.5)) if kept else nan,
                           no_correlation=len(rhos) - len(kept), repetitions=repetitions,
                           sample_size=sample_size, shares=tuple(shares))


# -- the whole evaluation ----------------------------------------------------------------------
@dataclass
class AnnotatedSet:
    """The four split tables and the cross annotation, with where each came from."""

    splits: dict[str, list[dict]]
    cross: list[dict]
    sources: dict[str, str]

    @classmethod
    def from_dir(cls, directory: str | Path, **overrides: str | None) -> "AnnotatedSet":
        """`DIR/{split}.csv` and `DIR/cross_annotation.csv`; `overrides` maps a split (or
        `cross`) to another file."""
        directory = Path(directory) if directory else None
        sources = {}
        for name in (*SPLITS, "cross"):
            path = overrides.get(name)
            if path is None:
                if directory is None:
                    raise MetaEvalInputError(f"no file for {name}: pass --annotated-dir or --{name.replace('_', '-')}.")
                path = directory / ("cross_annotation.csv" if name == "cross" else f"{name}.csv")
            sources[name] = str(path)
        data = {name: read_table(path) for name, path in sources.items()}
        return cls({s: data[s] for s in SPLITS}, data["cross"], sources)


def run_meta_eval(data: AnnotatedSet, *, q2_metrics: Sequence[str] = ("q2", "q2_no_nli"), prefix: str = "",
                  baselines_only: bool = False, threshold: float = 0.5, seed: int = 0,
                  repetitions: int = 1000, sample_size: int = 350, nlp=None, nli=None, bertscore: bool = True,
                  pr_png: str | None = None,
                  progress: Callable[[str], None] | None = None) -> dict:
    """Tables 2-4 as one JSON-ready dict. Inputs are validated before any computation."""
    notes: list[str] = []
    metrics = [] if baselines_only else _present_metrics(data, q2_metrics, prefix)
    scores: dict[str, dict[str, list[float]]] = {s: {} for s in SPLITS}
    cross_scores: dict[str, dict[str, list[float]]] = {s: {} for s in SYSTEMS}
    for split in SPLITS:  # validation first: nothing is computed on part of the data
        for m in metrics:
            scores[split][m] = numeric_column(data.splits[split], prefix + m, data.sources[split], RANGES.get(m))
    labels = {s: label_column(data.cross, f"{s}_label", data.sources["cross"]) for s in SYSTEMS}
    for s in SYSTEMS:
        for m in metrics:
            cross_scores[s][m] = numeric_column(data.cross, f"{s}_{m}", data.sources["cross"], RANGES.get(m))
    if nlp is None:
        from q2_metric.models.spacy_parser import load_spacy
        nlp = load_spacy()
    for split in SPLITS:
        if progress:
            progress(f"baselines: {split}")
        rows = data.splits[split]
        scores[split].update(baseline_scores([r["response"] for r in rows], [r["knowledge"] for r in rows],
                                             nlp=nlp, nli=nli, bertscore=bertscore, notes=notes))

    table2 = {}
    for split in SPLITS:
        table2[split] = {m: float(np.mean(v)) for m, v in scores[split].items()}
        table2[split]["n"] = len(data.splits[split])
        if not baselines_only:
            table2[split].update(_question_stats(data.splits[split], prefix))

    all_metrics = list(scores[SPLITS[0]])
    consistent = [int(s.endswith("_consistent")) for s in SPLITS for _ in data.splits[s]]
    table3 = {}
    for m in all_metrics:
        pooled = to_unit_scale(m, [v for s in SPLITS for v in scores[s][m]])
        table3[m] = {**classification_report(pooled, consistent, threshold), "roc_auc": roc_auc(pooled, consistent)}

    one = [i for i in range(len(data.cross)) if labels["dodeca"][i] + labels["memnet"][i] == 1]
    for s in SYSTEMS:
        if progress:
            progress(f"baselines: cross annotation, {s}")
        rows = [data.cross[i] for i in one]
        base = baseline_scores([r[f"{s}_response"] for r in rows], [r["knowledge"] for r in rows],
                               nlp=nlp, nli=nli, bertscore=bertscore, notes=notes)
        cross_scores[s] = {**{m: [v[i] for i in one] for m, v in cross_scores[s].items()}, **base}
    table4 = {}
    for m in cross_scores["dodeca"]:
        bad_is_dodeca = [labels["dodeca"][i] == 1 for i in one]
        good = [cross_scores["memnet" if d else "dodeca"][m][j] for j, d in enumerate(bad_is_dodeca)]
        bad = [cross_scores["dodeca" if d else "memnet"][m][j] for j, d in enumerate(bad_is_dodeca)]
        result = system_bootstrap(good, bad, sample_size=sample_size, repetitions=repetitions, seed=seed)
        table4[m] = {**result.to_dict(), "contexts": len(one)}
    report = {"threshold": threshold, "seed": seed, "sources": data.sources, "table2": table2,
              "table3": table3, "table4": table4, "contexts_one_inconsistent": len(one), "notes": notes}
    if pr_png and "q2" in table3:
        pooled = [v for s in SPLITS for v in scores[s]["q2"]]
        report["pr_curve_png"] = pr_curve_png(pooled, consistent, pr_png)
    return report


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
            raise MetaEvalInputError(f"{data.sources[name]}: column '{col}' is missing (score the file with "
                                     "`q2 score`, or pass --baselines-only).")
    return out


def _question_stats(rows: Sequence[dict], prefix: str) -> dict[str, float]:
    """Valid questions, no-answer share and coverage of one split, from `q2 score` columns."""
    cols = [prefix + c for c in ("num_questions", "num_no_answer", "fallback")]
    if not rows or not all(c in rows[0] for c in cols):
        return {}
    questions = sum(int(float(r[cols[0]] or 0)) for r in rows)
    no_answer = sum(int(float(r[cols[1]] or 0)) for r in rows)
    covered = sum(str(r[cols[2]]).strip().lower() in ("false", "0", "") for r in rows)
    return {"valid_questions": questions, "no_answer_share": no_answer / questions if questions else float("nan"),
            "coverage": covered / len(rows)}


def pr_curve_png(scores: Sequence[float], consistent: Sequence[int], path: str, label: str = "Q²") -> str:
    """Precision-recall curve of the inconsistent class (low score = inconsistent), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import precision_recall_curve

    precision, recall, _ = precision_recall_curve([1 - y for y in consistent], [-s for s in scores])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(recall, precision, label=label)
    ax.set_xlabel("recall (inconsistent)")
    ax.set_ylabel("precision (inconsistent)")
    ax.set_title("Q² precision-recall, annotated WoW responses")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def render_markdown(report: dict) -> str:
    """The report as Markdown tables, with the paper's figures beside Q²."""
    from q2_metric.card_text import PAPER_ACCURACY, PAPER_SPEARMAN

    t2 = report["table2"]
    metrics = [m for m in t2[SPLITS[0]] if m != "n"]
    lines = ["# Q² meta-evaluation", "", "## Table 2: mean score per split", "",
             "| metric | " + " | ".join(SPLITS) + " |", "|---" * (len(SPLITS) + 1) + "|"]
    for m in metrics:
        lines.append(f"| {m} | " + " | ".join(_fmt(t2[s].get(m)) for s in SPLITS) + " |")
    lines.append("| n | " + " | ".join(str(t2[s]["n"]) for s in SPLITS) + " |")
    lines.append("\nBLEU on the 0-100 scale. Paper (Q², Table 2): dodeca inconsistent 0.238, consistent 0.696; "
                 "MemNet inconsistent 0.135, consistent 0.756.")
    lines += ["", f"## Table 3: classification (score <= {report['threshold']} is inconsistent)", "",
              "| metric | accuracy | ROC AUC | incons. P | incons. R | incons. F1 | cons. P | cons. R | cons. F1 |",
              "|---|---|---|---|---|---|---|---|---|"]
    for m, r in report["table3"].items():
        i, c = r["inconsistent"], r["consistent"]
        lines.append(f"| {m} | {r['accuracy']:.3f} | {r['roc_auc']:.3f} | {i['precision']:.3f} | {i['recall']:.3f} | "
                     f"{i['f1']:.3f} | {c['precision']:.3f} | {c['recall']:.3f} | {c['f1']:.3f} |")
    lines.append(f"\nBLEU / 100 and BERTScore min-max scaled before thresholding. Paper: Q² accuracy {PAPER_ACCURACY:.1%}.")
    first = next(iter(report["table4"].values()), None)
    if first:
        lines += ["", "## Table 4: system-level bootstrap", "",
                  f"{report['contexts_one_inconsistent']} contexts with exactly one inconsistent system; one sample "
                  f"of {first['sample_size']} per repetition shared by the systems; inconsistent shares "
                  f"{first['shares']}; {first['repetitions']} repetitions; seed {report['seed']}.", "",
                  "| metric | mean Spearman | 2.5% | 97.5% | no correlation |", "|---|---|---|---|---|"]
        for m, r in report["table4"].items():
            lines.append(f"| {m} | {_fmt(r['mean'], 4)} | {_fmt(r['low'], 4)} | {_fmt(r['high'], 4)} | "
                         f"{r['no_correlation']} |")
        lines.append(f"\nPaper: Q² {PAPER_SPEARMAN}.")
    if report.get("pr_curve_png"):
        lines += ["", f"![precision-recall]({Path(report['pr_curve_png']).name})"]
    if report["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines) + "\n"


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return "nan" if math.isnan(value) else f"{value:.{digits}f}"
