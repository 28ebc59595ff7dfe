"""The benchmark's tables from `run_benchmark`'s `BenchmarkReport`, read by attribute: Markdown (`benchmark.md`), LaTeX
(`benchmark.tex`, booktabs) and the leaderboard (`leaderboard.csv`, one row per dataset and metric)."""

from __future__ import annotations

from typing import Any

from q2_metric.meta.benchmark import BenchmarkReport, MetricAuc
from q2_metric.meta.plots import label
from q2_metric.meta.report import _tex, _tex_table

LEADERBOARD_COLUMNS = [
    "dataset",
    "metric",
    "n",
    "consistent_share",
    "roc_auc",
    "low",
    "high",
    "p_vs_q2",
    "p_vs_best_baseline",
    "threshold",
    "balanced_accuracy",
    "precision",
    "recall",
    "signature",
]
Q2_ROWS = ("q2", "q2_no_nli")  # the leaderboard rows that Q²'s signature signs


def _f(value: Any, digits: int = 3) -> str:
    from q2_metric.display import figure

    return figure(value, digits)


def _p(value: float | None, draws: int) -> str:
    """A p-value; 0 (no resample on the other side) as below the bootstrap's resolution, 1/draws."""
    return f"<{1 / draws:.2g}" if value == 0 else _f(value)


def auc_cell(r: MetricAuc) -> str:
    """`0.852 [0.826, 0.876]`."""
    return f"{_f(r.roc_auc)} [{_f(r.low)}, {_f(r.high)}]"


def _metrics(report: BenchmarkReport) -> list[str]:
    return list(report.metrics)


def _caption(report: BenchmarkReport) -> str:
    return (
        f"ROC AUC (consistent = positive; 0.5 = chance) with a 95% percentile-bootstrap interval over "
        f"{report.draws} resamples of each dataset's responses (seed {report.seed}, the same resamples "
        "for every metric)."
    )


def render_markdown(report: BenchmarkReport) -> str:
    """The AUC table, the datasets, the p-values, the calibrated decisions and the plots."""
    metrics = _metrics(report)
    warning = [f"**{report.meaningless}**", ""] if report.meaningless else []
    lines = [
        "# Dialogue-faithfulness benchmark",
        "",
        *warning,
        "## ROC AUC [95% interval]",
        "",
        _caption(report),
        "",
        "| dataset | n | consistent | " + " | ".join(label(m) for m in metrics) + " |",
        "|---" * (len(metrics) + 3) + "|",
    ]
    for name, res in report.results.items():
        d = report.datasets[name]
        lines.append(
            f"| {name} | {d.n:,} | {d.consistent_share:.1%} | "
            + " | ".join(auc_cell(res.metrics[m]) for m in metrics)
            + " |"
        )
    lines += ["", "## Datasets", ""]
    for name, d in report.datasets.items():
        lines.append(
            f"- {name}: {d.source} (format {d.format}; {d.label_rule}); {d.consistent:,} of {d.n:,} consistent"
        )
    lines += [
        "",
        "## Paired bootstrap p-values",
        "",
        "Two-sided, from the AUC differences on the same resamples: against Q² (when scored) and against "
        "the dataset's best baseline (named).",
        "",
        "| dataset | metric | vs Q² | vs best baseline |",
        "|---|---|---|---|",
    ]
    for name, res in report.results.items():
        for m in metrics:
            r = res.metrics[m]
            lines.append(
                f"| {name} | {label(m)} | {_p(r.p_vs_q2, r.draws)} | "
                f"{_p(r.p_vs_best_baseline, r.draws)} ({label(res.best_baseline or '-')}) |"
            )
    cal = report.calibration
    if cal:
        lines += [
            "",
            f"## Calibrated decisions: threshold tuned on {cal.dev}, applied to {cal.test}",
            "",
            "Consistent iff score > threshold; the threshold is the lowest of the dev scores with the "
            "highest dev balanced accuracy (scores on the 0-1 scale of the table above). Precision and recall "
            "of the consistent class.",
            "",
            "| metric | threshold | dev bal. acc. | test bal. acc. | test precision | test recall |",
            "|---|---|---|---|---|---|",
        ]
        for m, c in cal.metrics.items():
            lines.append(
                f"| {label(m)} | {c.threshold:.4g} | {_f(c.dev.balanced_accuracy)} | "
                f"{_f(c.test.balanced_accuracy)} | {_f(c.test.precision)} | {_f(c.test.recall)} |"
            )
    lines += (
        ragtruth_markdown(report)
        + multilingual_markdown(report)
        + aggrefact_markdown(report)
        + published_markdown(report)
    )
    if report.plots:
        lines += ["", "## Figures", ""] + [f"![{name[:-4]}]({name})" for name in report.plots]
    if report.signature:
        lines += [
            "",
            "## Signature",
            "",
            f"Q²: `{report.signature_short}`",
            "",
            f"`{report.signature}`",
        ]
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in d.items()) or "none"


def _rt_label(metric: str, report: BenchmarkReport) -> str:
    """The row name of a metric's figures: Q²'s span predictions show as `Q² spans`, a span file by its name."""
    base = metric.removesuffix(" spans")
    shown = label(base) if base in report.metrics else base
    return f"{shown} spans" if metric.endswith(" spans") else shown


def hallucinated_text(responses: int, spans: int) -> str:
    """How many kept responses are hallucinated, and their spans, in words (plurals right).

    >>> hallucinated_text(1, 1)
    '1 kept response is hallucinated (at least one labelled span), with 1 span.'
    >>> hallucinated_text(1200, 0)
    '1,200 kept responses are hallucinated (at least one labelled span), with 0 spans.'
    """
    are = "response is" if responses == 1 else "responses are"
    return (
        f"{responses:,} kept {are} hallucinated (at least one labelled span), "
        f"with {spans:,} span{'' if spans == 1 else 's'}."
    )


def ragtruth_markdown(report: BenchmarkReport) -> list[str]:
    """Per RAGTruth set: the selection's counts, the bad rows, and every metric's figures under
    both character definitions."""
    lines: list[str] = []
    for name, r in report.ragtruth.items():
        sel = r.selection
        kind = {"mu-shroom": "Mu-SHROOM", "psiloqa": "PsiloQA"}.get(report.datasets[name].format, "RAGTruth")
        heading = f"RAGTruth's figures on {kind}" if kind != "RAGTruth" else "RAGTruth"
        lines += [
            "",
            f"## {heading}: {name}",
            "",
            f"Selection: split '{sel.split}' and quality '{sel.quality}' (knowledge: {sel.grounding}). "
            f"Of {sel.rows:,} rows, {sel.kept:,} kept ({_counts(sel.kept_by_task)}), "
            f"{sel.bad:,} bad, left out by split: {_counts(sel.left_out_by_split)}; "
            f"by quality: {_counts(sel.left_out_by_quality)}. {hallucinated_text(r.gold.hallucinated, r.gold.spans)}",
            "",
            f"Response level (RAGTruth's rule: hallucinated iff at least one labelled span); a score flags a "
            f"response iff it is <= {r.threshold:g}, a span prediction iff it holds a span. Character level: "
            "**RAGTruth's** (character sets: union of gold vs union of predicted spans per response; n/a where "
            "nothing to divide by) and **LettuceDetect's** (pairwise overlaps summed, so a character can count "
            "twice; 0 where nothing to divide by; its span_f1).",
            "",
            "| metric | responses | unscored | resp. P | resp. R | resp. F1 | char P (RAGTruth) | char R (RAGTruth) "
            "| char F1 (RAGTruth) | char P (LettuceDetect) | char R (LettuceDetect) | char F1 (LettuceDetect) |",
            "|---" * 12 + "|",
        ]
        for m, f in r.metrics.items():
            cells = []
            for rates in (f.response, f.character_ragtruth, f.character_lettucedetect):
                cells += [_f(rates.precision), _f(rates.recall), _f(rates.f1)] if rates else ["-"] * 3
            lines.append(
                f"| {_rt_label(m, report)} | {f.responses:,} | {len(f.unscored):,} | "
                + " | ".join(cells)
                + " |"
            )
        if r.by_task:
            lines += [
                "",
                "Per task type (the same figures on each task type's responses):",
                "",
                "| metric | task type | responses | resp. P | resp. R | resp. F1 | char F1 (RAGTruth) "
                "| char F1 (LettuceDetect) |",
                "|---" * 8 + "|",
            ]
            for m in r.metrics:
                for task, per in r.by_task.items():
                    f = per[m]
                    chars = [
                        _f(c.f1) if c else "-" for c in (f.character_ragtruth, f.character_lettucedetect)
                    ]
                    lines.append(
                        f"| {_rt_label(m, report)} | {task} | {f.responses:,} | {_f(f.response.precision)} | "
                        f"{_f(f.response.recall)} | {_f(f.response.f1)} | {' | '.join(chars)} |"
                    )
        if r.bad_rows:
            lines += ["", f"Bad rows ({len(r.bad_rows):,}), left out:", ""] + [f"- {b}" for b in r.bad_rows]
        unscored = {m: f.unscored for m, f in r.metrics.items() if f.unscored}
        if unscored:
            lines += ["", "Unscored responses, left out of a metric's figures (by id):", ""]
            lines += [f"- {m}: {', '.join(ids)}" for m, ids in unscored.items()]
    return lines


def _what(what: dict[str, Any]) -> str:
    """What a multilingual set's figures are on, in one line."""
    parts = [f"{k.replace('_', ' ')}: {v}" for k, v in what.items() if k != "set" and not isinstance(v, dict)]
    by_lang = what.get("kept_by_language") or {}
    if by_lang:
        parts.append("kept by language: " + _counts(by_lang))
    return "; ".join(parts)


def multilingual_markdown(report: BenchmarkReport) -> list[str]:
    """Per multilingual set: what its figures are on (set, split, languages, knowledge, the Q²
    model set by its signature), then its per-language figures."""
    lines: list[str] = []
    models = (
        f"Q²'s models: `{report.signature_short}`" if report.signature_short else "Q² not scored in this run"
    )
    for name, figs in report.multilingual.items():
        fmt = report.datasets[name].format
        lines += [
            "",
            f"## {figs['set']}: {name}, per language",
            "",
            f"On {_what(figs['what'])}. {models}.",
            "",
        ]
        by_language = figs["by_language"]
        if fmt == "seahorse":
            lines += [
                "Attribution (question4: Yes = 1) against each metric's scores (higher = more attributable): "
                "ROC AUC, Pearson's and Spearman's ρ; - where undefined (one class, or constant scores).",
                "",
                "| language | metric | n | Yes | ROC AUC | Pearson ρ | Spearman ρ |",
                "|---" * 7 + "|",
            ]
            for lang, per in by_language.items():
                for m, c in per.items():
                    lines.append(
                        f"| {lang} | {_rt_label(m, report)} | {c['n']:,} | {c['yes']:,} | {_f(c['roc_auc'])} | "
                        f"{_f(c['pearson'])} | {_f(c['spearman'])} |"
                    )
        elif fmt == "mu-shroom":
            lines += [
                "Mu-SHROOM's scorer: the mean over a language's outputs of the IoU of hard-label characters (1 "
                "when both are empty) and of Spearman's ρ of per-character soft labels (1 when both are "
                "constant, 0 when one is); `mark nothing` and `mark everything` for reference.",
                "",
                "| language | metric | outputs | IoU | Cor |",
                "|---" * 5 + "|",
            ]
            for lang, per in by_language.items():
                for m, c in per["metrics"].items():
                    lines.append(
                        f"| {lang} | {_rt_label(m, report)} | {c['items']:,} | {_f(c['iou'])} | {_f(c['cor'])} |"
                    )
        else:
            lines += [
                "Character level per language: precision, recall and F1 of the characters inside predicted "
                "spans against those inside gold spans, summed over answers; IoU: the mean per answer (1 when "
                "both are empty).",
                "",
                "| language | metric | answers | char P | char R | char F1 | IoU |",
                "|---" * 7 + "|",
            ]
            for lang, per in by_language.items():
                for m, c in per["metrics"].items():
                    lines.append(
                        f"| {lang} | {_rt_label(m, report)} | {c['answers']:,} | {_f(c['precision'])} | "
                        f"{_f(c['recall'])} | {_f(c['f1'])} | {_f(c['iou'])} |"
                    )
        bad = (report.datasets[name].multilingual or {}).get("bad_rows") or []
        if bad and fmt == "seahorse":
            lines += ["", f"Bad rows ({len(bad):,}), left out:", ""] + [f"- {b}" for b in bad]
    return lines


def aggrefact_markdown(report: BenchmarkReport) -> list[str]:
    """Per LLM-AggreFact set: each metric's threshold and balanced accuracy per source dataset."""
    lines: list[str] = []
    for name, per_metric in report.aggrefact.items():
        lines += [
            "",
            f"## LLM-AggreFact protocol: {name}",
            "",
            "Per source dataset, two figures on its test rows, each in its own column (supported iff "
            "score > threshold; the means are unweighted): the balanced accuracy at a threshold tuned on "
            "its dev rows (its test rows where it has none), and at the fixed threshold 0.5, which the "
            "benchmark's official numbers use.",
            "",
            "| metric | dataset | tuned on | tuned threshold | balanced accuracy, tuned threshold "
            "| balanced accuracy, fixed 0.5 |",
            "|---|---|---|---|---|---|",
        ]
        undefined: dict[str, str] = {}
        for m, r in per_metric.items():
            for ds, d in r.datasets.items():
                t = "n/a" if d.threshold is None else f"{d.threshold:.4g}"
                ba = "not defined" if d.undefined else _f(d.balanced_accuracy)
                fixed = "not defined" if d.fixed_balanced_accuracy is None else _f(d.fixed_balanced_accuracy)
                lines.append(f"| {label(m)} | {ds} | {d.tuned_on} | {t} | {ba} | {fixed} |")
                if d.undefined:
                    undefined[ds] = d.undefined
            kept = len(r.datasets) - len(r.left_out)
            of = f" of {kept} of {len(r.datasets)}" if r.left_out else ""
            kept_fixed = len(r.datasets) - len(r.left_out_fixed)
            of_fixed = f" (of {kept_fixed})" if r.left_out_fixed != r.left_out else ""
            lines.append(
                f"| {label(m)} | **mean**{of} | | | {_f(r.mean_balanced_accuracy)} "
                f"| {_f(r.mean_fixed_balanced_accuracy)}{of_fixed} |"
            )
        if undefined:
            lines += ["", "Source datasets without a balanced accuracy, left out of the mean:", ""]
            lines += [f"- {ds}: {why}, so no balanced accuracy is defined." for ds, why in undefined.items()]
    return lines


def published_markdown(report: BenchmarkReport) -> list[str]:
    """The published figures on the run's sets beside the run's (`meta.published`)."""
    rows = [(name, p) for name, ps in report.published.items() for p in ps]
    if not rows:
        return []
    lines = [
        "",
        "## Published figures beside the measured",
        "",
        "| dataset | figure | published | by (models) | source | measured | by |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in rows:
        where = p.paper + (f", {p.table}" if p.table else "") + (f"; {p.note}" if p.note else "")
        lines.append(
            f"| {name} | {p.label} | {p.published:.4g} | {p.published_by} ({p.published_models}) | "
            f"{where} | {_f(p.measured)} | {p.measured_by} |"
        )
    return lines


def render_latex(report: BenchmarkReport) -> str:
    """The AUC table (datasets x metrics) and the calibrated decisions (needs booktabs)."""
    metrics = _metrics(report)
    rows = [
        [_tex(name)] + [auc_cell(res.metrics[m]) for m in metrics] for name, res in report.results.items()
    ]
    out = ["% q2 meta-eval benchmark tables; needs \\usepackage{booktabs}"]
    if report.signature:
        out.append(f"% Q2 signature: {report.signature}")
    out.append("")
    caption = _caption(report)
    if report.signature:
        caption += f" Q² signature {report.signature_short}."
    if report.meaningless:
        caption = f"{report.meaningless} {caption}"
    out += _tex_table(
        _tex(caption), "tab:q2-benchmark", ["dataset"] + [_tex(label(m)) for m in metrics], rows
    )
    cal = report.calibration
    if cal:
        rows = [
            [
                _tex(label(m)),
                f"{c.threshold:.4g}",
                _f(c.dev.balanced_accuracy),
                _f(c.test.balanced_accuracy),
                _f(c.test.precision),
                _f(c.test.recall),
            ]
            for m, c in cal.metrics.items()
        ]
        out += _tex_table(
            _tex(
                f"Threshold tuned on {cal.dev} (lowest score with the best balanced accuracy), "
                f"applied to {cal.test}; consistent iff score > threshold."
            ),
            "tab:q2-calibration",
            ["metric", "threshold", "dev BA", "test BA", "test P", "test R"],
            rows,
        )
    return "\n".join(out)


def leaderboard(report: BenchmarkReport) -> list[dict[str, Any]]:
    """One record per (dataset, metric); the calibration columns on the calibration's dev and test rows."""
    cal = report.calibration
    out = []
    for name, res in report.results.items():
        d = report.datasets[name]
        for m, r in res.metrics.items():
            row: dict[str, Any] = {
                "dataset": name,
                "metric": m,
                "n": d.n,
                "consistent_share": d.consistent_share,
                "roc_auc": r.roc_auc,
                "low": r.low,
                "high": r.high,
                "p_vs_q2": r.p_vs_q2,
                "p_vs_best_baseline": r.p_vs_best_baseline,
                "signature": report.signature_short if m in Q2_ROWS else None,
            }
            if cal and name in (cal.dev, cal.test):
                c = cal.metrics[m]
                side = c.dev if name == cal.dev else c.test
                row.update(
                    threshold=c.threshold,
                    balanced_accuracy=side.balanced_accuracy,
                    precision=side.precision,
                    recall=side.recall,
                )
            out.append(row)
    return out
