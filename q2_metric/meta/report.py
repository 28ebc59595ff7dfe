"""The meta-evaluation report as Markdown (`meta_eval.md`, figures embedded) and LaTeX
(`meta_eval.tex`, one booktabs table per table), from `run_meta_eval`'s `MetaEvalReport`, read by
attribute."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from q2_metric.meta.evaluation import MetaEvalReport

SPLITS = ("dodeca_inconsistent", "dodeca_consistent", "memnet_inconsistent", "memnet_consistent")
SETS = ("split", "cross")


def _fmt(value: Any, digits: int = 3) -> str:
    from q2_metric.display import figure

    return figure(value, digits)


def _metrics(report: MetaEvalReport) -> list[str]:
    return list(report.table2[SPLITS[0]].means)


def _stat_rows(report: MetaEvalReport) -> list[str]:
    return [
        m for m in ("valid_questions", "no_answer_share", "coverage") if m in report.table2[SPLITS[0]].stats
    ]


def _table4_caption(report: MetaEvalReport) -> str:
    first = next(iter(report.table4.values())).bootstrap
    return (
        f"{report.contexts_one_inconsistent} contexts with exactly one inconsistent system; one sample "
        f"of {first.sample_size} per repetition shared by the systems; inconsistent shares "
        f"{list(first.shares)}; {first.repetitions} repetitions; seed {report.seed}."
    )


def _true_caption(report: MetaEvalReport) -> str:
    t = report.true
    sets = "; ".join(f"{s.title}: {s.inconsistent} of {s.n} inconsistent" for s in t.sets.values())
    return (
        f"ROC AUC of each score against the human label, consistent = positive (0.5 = chance, 1 = every "
        f"consistent response outscores every inconsistent one). Interval: 95% percentile bootstrap over "
        f"{t.draws} resamples of the responses (with replacement, seed {t.seed}, the same resamples "
        f"for every metric). {sets}."
    )


def render_markdown(report: MetaEvalReport) -> str:
    """The report as Markdown tables, with the paper's figures beside Q², and the plots."""
    from q2_metric.version import PAPER_ACCURACY, PAPER_SPEARMAN, PAPER_VALUES

    t2 = report.table2
    lines = [
        "# Q² meta-evaluation",
        "",
        "## Table 2: mean score per split",
        "",
        "| metric | " + " | ".join(SPLITS) + " |",
        "|---" * (len(SPLITS) + 1) + "|",
    ]
    for m in _metrics(report) + _stat_rows(report):
        lines.append(f"| {m} | " + " | ".join(_fmt(t2[s].value(m)) for s in SPLITS) + " |")
    lines.append("| n | " + " | ".join(str(t2[s].n) for s in SPLITS) + " |")
    lines.append(
        "\nEach metric on its own scale (BLEU 0-100). Paper (Q², Table 2): "
        + "; ".join(
            f"{'dodeca' if system == 'dodecaDialogue' else system} "
            + ", ".join(f"{label} {PAPER_VALUES[system, label]}" for label in ("inconsistent", "consistent"))
            for system in ("dodecaDialogue", "MemNet")
        )
        + "."
    )
    lines += [
        "",
        f"## Table 3: classification (consistent iff score > {report.threshold})",
        "",
        "| metric | accuracy | ROC AUC | incons. P | incons. R | incons. F1 | cons. P | cons. R | cons. F1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m, r in report.table3.items():
        i, c = r.inconsistent, r.consistent
        lines.append(
            f"| {m} | {_fmt(r.accuracy)} | {_fmt(r.roc_auc)} | {_fmt(i.precision)} | "
            f"{_fmt(i.recall)} | {_fmt(i.f1)} | {_fmt(c.precision)} | {_fmt(c.recall)} | "
            f"{_fmt(c.f1)} |"
        )
    lines.append(
        f"\nOn the 600 split responses. BLEU / 100 and BERTScore min-max scaled before thresholding; "
        f"a supplied metric mapped to [0, 1] by its declared range (and reversed when lower means "
        f"consistent). Paper: Q² accuracy {PAPER_ACCURACY:.1%}."
    )
    if report.table4:
        lines += [
            "",
            "## Table 4: system-level bootstrap",
            "",
            _table4_caption(report),
            "",
            "| metric | mean Spearman | 2.5% | 97.5% | no correlation |",
            "|---|---|---|---|---|",
        ]
        for m, row in report.table4.items():
            b = row.bootstrap
            lines.append(
                f"| {m} | {_fmt(b.mean, 4)} | {_fmt(b.low, 4)} | {_fmt(b.high, 4)} | {b.no_correlation} |"
            )
        lines.append(f"\nPaper: Q² {PAPER_SPEARMAN}.")
    true = report.true
    if true is not None:
        titles = [true.sets[s].title for s in SETS]
        lines += [
            "",
            "## TRUE protocol: ROC AUC with 95% intervals",
            "",
            _true_caption(report),
            "",
            f"| metric | {titles[0]} | 95% interval | {titles[1]} | 95% interval |",
            "|---|---|---|---|---|",
        ]
        for m, per_set in true.metrics.items():
            cells = [
                f"{_fmt(per_set[s].auc)} | [{_fmt(per_set[s].low)}, {_fmt(per_set[s].high)}]" for s in SETS
            ]
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
    supplied = {m: d for m, d in report.metrics.items() if "column" in d}
    if supplied:
        lines += ["", "## Supplied metrics", ""]
        for m, d in supplied.items():
            lines.append(
                f"- {m}: column '{d['column']}' of {d['source']}, range [{d['range'][0]:g}, "
                f"{d['range'][1]:g}], "
                + ("lower = more consistent" if d["lower"] else "higher = more consistent")
            )
    plots = report.plots or []
    if plots:
        lines += ["", "## Figures", ""]
        captions = {
            "pr_curve.png": "Precision-recall, detecting inconsistent responses",
            "roc_curve.png": "ROC curves, consistent = positive",
        }
        for name in plots:
            caption = captions.get(
                name, f"Score histogram by label: {name[5:-4]}" if name.startswith("hist_") else name
            )
            lines += [f"![{caption}]({name})", ""]
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(lines).rstrip() + "\n"


_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
    "<=": r"$\le$",
    ">=": r"$\ge$",
    "<": "$<$",
    ">": "$>$",
    "²": "$^2$",
}


def _tex(text: Any) -> str:
    """Escape LaTeX specials in one pass; Q² becomes Q$^2$, <= $\\le$, >= $\\ge$, > $>$ and < $<$."""
    return re.sub(r"<=|>=|[\\&%$#_{}~^²<>]", lambda m: _TEX[m.group(0)], str(text))


def _tex_table(caption: str, label: str, header: list[str], rows: list[list[str]]) -> list[str]:
    return (
        [
            r"\begin{table}[t]",
            r"\centering",
            r"\small",
            r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
            r"\toprule",
            " & ".join(header) + r" \\",
            r"\midrule",
        ]
        + [" & ".join(row) + r" \\" for row in rows]
        + [
            r"\bottomrule",
            r"\end{tabular}",
            rf"\caption{{{caption}}}",
            rf"\label{{{label}}}",
            r"\end{table}",
            "",
        ]
    )


def render_latex(report: MetaEvalReport) -> str:
    """Every table as a LaTeX `table` (needs \\usepackage{booktabs})."""
    t2 = report.table2
    out = ["% q2 meta-eval tables; needs \\usepackage{booktabs}", ""]
    split_heads = [_tex(s.replace("_", " ")) for s in SPLITS]
    rows = [[_tex(m)] + [_fmt(t2[s].value(m)) for s in SPLITS] for m in _metrics(report) + _stat_rows(report)]
    rows.append(["n"] + [str(t2[s].n) for s in SPLITS])
    out += _tex_table(
        "Mean score per split (each metric on its own scale; BLEU 0--100).",
        "tab:q2-means",
        ["metric"] + split_heads,
        rows,
    )
    rows = [
        [
            _tex(m),
            _fmt(r.accuracy),
            _fmt(r.roc_auc),
            _fmt(r.inconsistent.precision),
            _fmt(r.inconsistent.recall),
            _fmt(r.inconsistent.f1),
            _fmt(r.consistent.precision),
            _fmt(r.consistent.recall),
            _fmt(r.consistent.f1),
        ]
        for m, r in report.table3.items()
    ]
    out += _tex_table(
        _tex(
            f"Classification of the 600 split responses; consistent iff score > "
            f"{report.threshold} (P/R/F1 of the inconsistent and consistent classes)."
        ),
        "tab:q2-classification",
        [
            "metric",
            "acc.",
            "ROC AUC",
            "incons. P",
            "incons. R",
            "incons. F1",
            "cons. P",
            "cons. R",
            "cons. F1",
        ],
        rows,
    )
    if report.table4:
        bootstraps = {m: row.bootstrap for m, row in report.table4.items()}
        rows = [
            [_tex(m), _fmt(b.mean, 4), _fmt(b.low, 4), _fmt(b.high, 4), str(b.no_correlation)]
            for m, b in bootstraps.items()
        ]
        out += _tex_table(
            _tex("System-level bootstrap Spearman. " + _table4_caption(report)),
            "tab:q2-system",
            ["metric", "mean", "2.5\\%", "97.5\\%", "no corr."],
            rows,
        )
    true = report.true
    if true is not None:
        heads = [_tex(true.sets[s].title) for s in SETS]
        rows = [
            [_tex(m)] + [f"{_fmt(p[s].auc)} [{_fmt(p[s].low)}, {_fmt(p[s].high)}]" for s in SETS]
            for m, p in true.metrics.items()
        ]
        out += _tex_table(_tex(_true_caption(report)), "tab:q2-true", ["metric"] + heads, rows)
    return "\n".join(out)
