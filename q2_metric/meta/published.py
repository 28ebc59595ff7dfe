"""Published figures of the benchmarks `q2 meta-eval` measures, each with its source, table and
the models behind it: the one table that the reports print beside the measured figures and that
the Hub card shows (`render_markdown`). The Q² paper's own figures are `version`'s.

`source` names where a figure was checked (a paper's table, or its authors' own repository or
leaderboard); a figure whose table number could not be checked in its paper has `table` None, and
`note` says so. FaithDial's Q² figures (Dziri et al., 2022, Tables 5 and 8: the mean Q²-F1 and
Q²-NLI of each system's generated responses) are re-typed from the paper, each with its table and
the system (`system`: the generator, what it was trained on and what it was tested on).
"""

from __future__ import annotations

from dataclasses import dataclass

from q2_metric.version import PAPER, PAPER_ACCURACY, PAPER_SPEARMAN, PAPER_VALUES

GRANITE = "Padhi et al., 2024, Granite Guardian (arXiv 2412.07724), on TRUE's sets (Honovich et al., 2022)"
GRANITE_PDF = "github.com/ibm-granite/granite-guardian/blob/946455e/technical_report.pdf, Table 8"
LETTUCE = "Kovács and Recski, 2025, LettuceDetect (arXiv 2502.17125)"
LETTUCE_DOCS = "github.com/KRLabsOrg/LettuceDetect/blob/102f7f2/docs"  # its authors' repository


@dataclass(frozen=True)
class Published:
    """One published figure: on what (`benchmark`, its `measure`), by which metric and models."""

    benchmark: str  # the format of the set it is on: q2-wow, begin-v1, ragtruth, llm-aggrefact, ...
    measure: str  # a key of `measured_figures`
    metric: str
    models: str
    value: float
    paper: str
    table: str | None
    source: str
    note: str = ""
    system: str = ""  # the responses a figure is on, where it is a system's (FaithDial's tables)


Q2_MODELS = "the paper's (T5-base QG, ALBERT-xlarge SQuAD 2.0 QA, AllenNLP RoBERTa-large SNLI)"

FIGURES: tuple[Published, ...] = (
    *(
        Published(
            "q2-wow",
            f"mean_q2.{system}.{label}",
            "Q²",
            Q2_MODELS,
            value,
            f"Honovich et al., 2021 ({PAPER})",
            "Table 2",
            PAPER,
            f"mean Q² of {system}'s {label} responses",
        )
        for (system, label), value in PAPER_VALUES.items()
    ),
    Published(
        "q2-wow",
        "accuracy@0.5",
        "Q²",
        Q2_MODELS,
        PAPER_ACCURACY,
        f"Honovich et al., 2021 ({PAPER})",
        "Table 3",
        PAPER,
        "accuracy, consistent iff Q² > 0.5",
    ),
    Published(
        "q2-wow",
        "bootstrap_spearman",
        "Q²",
        Q2_MODELS,
        PAPER_SPEARMAN,
        f"Honovich et al., 2021 ({PAPER})",
        "Table 4",
        PAPER,
        "system-level Spearman, mean over the bootstrap",
    ),
    # TRUE's dialogue sets: the best ROC AUC on each in Granite Guardian's Table 8 (issue 50 quoted
    # 91.3 and 94.6 as TRUE's; they are Granite-Guardian-3.0-8B's; issue 50's 86.7 on BEGIN is in no source
    # checked, the table's best there is WeCheck-0.4B's 0.864)
    Published(
        "begin-v1",
        "roc_auc_best",
        "WeCheck-0.4B",
        "DeBERTaV3, NLI warm-up, then weakly labelled synthetic data",
        0.864,
        GRANITE,
        "Table 8",
        GRANITE_PDF,
        "ROC AUC on TRUE's BEGIN, the best in the table; a figure of 86.7 sometimes quoted for it is in no source checked",
    ),
    Published(
        "q2-wow",
        "roc_auc_best",
        "Granite-Guardian-3.0-8B",
        "Granite 3.0 8B instruct, fine-tuned for risk detection (IBM)",
        0.913,
        GRANITE,
        "Table 8",
        GRANITE_PDF,
        "ROC AUC on TRUE's Q² set, the best in the table; it is Granite Guardian's paper's figure, not TRUE's",
    ),
    Published(
        "dialfact",
        "roc_auc_best",
        "Granite-Guardian-3.0-8B",
        "Granite 3.0 8B instruct, fine-tuned for risk detection (IBM)",
        0.946,
        GRANITE,
        "Table 8",
        GRANITE_PDF,
        "ROC AUC on TRUE's DialFact, the best in the table; it is Granite Guardian's paper's figure, not TRUE's",
    ),
    Published(
        "ragtruth",
        "response_f1",
        "LettuceDetect-large-v1",
        "ModernBERT-large token classifier (395M), trained on RAGTruth",
        0.7922,
        LETTUCE,
        None,
        f"the paper's abstract (arXiv 2502.17125v1); {LETTUCE_DOCS}/README.md",
        "example-level F1 on RAGTruth's test set; the paper's table not read",
    ),
    Published(
        "ragtruth",
        "char_f1_lettucedetect",
        "LettuceDetect-large-v1",
        "ModernBERT-large token classifier (395M), trained on RAGTruth",
        0.5893,
        LETTUCE,
        None,
        f"{LETTUCE_DOCS}/code-hallucination/results_generative.md",
        "span-level (its character-overlap) F1 on RAGTruth's test set; the paper's table not read",
    ),
    Published(
        "ragtruth",
        "response_f1",
        "RAG-HAT",
        "fine-tuned Llama-3-8B",
        0.839,
        "Song et al., 2024, RAG-HAT (EMNLP Industry)",
        None,
        f"{LETTUCE_DOCS}/README.md and .../docs/benchmarks.md (RAG-HAT's figure as LettuceDetect cites it)",
        "response-level F1 on RAGTruth's test set; RAG-HAT's own table not read",
    ),
    Published(
        "llm-aggrefact",
        "mean_balanced_accuracy",
        "Bespoke-MiniCheck-7B",
        "InternLM2.5-7B fine-tuned (Bespoke Labs)",
        0.774,
        "LLM-AggreFact leaderboard (llm-aggrefact.github.io), of Tang et al., 2024, MiniCheck "
        "(EMNLP; arXiv 2404.10774)",
        None,
        "the leaderboard's source as of 2024-10-22, "
        "github.com/rin2401/llm-aggrefact/blob/a42c9d2/src/app/data.tsx (a copy of it): its 11 "
        "per-dataset figures, whose unweighted mean is the leaderboard's Average",
        "mean balanced accuracy over the 11 datasets; a leaderboard figure, in no paper table (the "
        "model is later than the MiniCheck paper); the leaderboard showed 77.1 before 2024-08-09; "
        "a figure of 77.2 sometimes quoted is in no source checked",
    ),
)

FAITHDIAL = "Dziri et al., 2022, FaithDial (TACL; arXiv 2204.10757)"
FAITHDIAL_SOURCE = "the paper (arXiv 2204.10757), re-typed"
# FaithDial's Tables 5 and 8 (table, trained on, tested on, generator, Q²-F1, Q²-NLI; percent): Q² of
# each system's generated responses, computed with the Q² authors' released code (its README)
FAITHDIAL_ROWS = (
    ("5", "WoW", "FaithDial", "GPT2", 42.2, 51.4),
    ("5", "WoW", "FaithDial", "DialoGPT", 41.4, 52.5),
    ("5", "WoW", "FaithDial", "DoHA", 63.3, 70.1),
    ("5", "WoW", "FaithDial", "T5", 67.7, 75.2),
    ("5", "WoW", "FaithDial", "T5-CTRL", 70.3, 76.2),
    ("5", "WoW", "FaithDial", "T5-LossTruncation", 71.2, 79.4),
    ("5", "FaithDial", "FaithDial", "GPT2", 58.4, 69.8),
    ("5", "FaithDial", "FaithDial", "DialoGPT", 56.5, 66.2),
    ("5", "FaithDial", "FaithDial", "DoHA", 69.1, 78.3),
    ("5", "FaithDial", "FaithDial", "T5", 70.4, 79.5),
    ("5", "FaithDial", "FaithDial", "T5-CTRL", 72.4, 81.5),
    ("5", "FaithDial", "FaithDial", "T5-LossTruncation", 71.9, 80.2),
    ("5", "FaithDial", "FaithDial", "T5-InfoNCE", 70.8, 80.9),
    ("5", "WoW then FaithDial", "FaithDial", "GPT2", 62.3, 73.4),
    ("5", "WoW then FaithDial", "FaithDial", "DialoGPT", 54.5, 65.6),
    ("5", "WoW then FaithDial", "FaithDial", "DoHA", 66.7, 77.4),
    ("5", "WoW then FaithDial", "FaithDial", "T5", 70.2, 80.1),
    ("5", "WoW then FaithDial", "FaithDial", "T5-CTRL", 73.4, 83.5),
    ("5", "WoW then FaithDial", "FaithDial", "T5-LossTruncation", 70.2, 79.1),
    ("5", "WoW then FaithDial", "FaithDial", "T5-InfoNCE", 69.8, 79.8),
    ("8", "TopicalChat", "TopicalChat", "T5", 46.2, 53.2),
    ("8", "FaithDial", "TopicalChat", "T5", 57.3, 67.1),
    ("8", "CMU-DoG", "CMU-DoG", "T5", 39.5, 49.2),
    ("8", "FaithDial", "CMU-DoG", "T5", 50.5, 57.3),
    ("8", "WoW", "WoW", "T5", 69.4, 72.1),
    ("8", "FaithDial", "WoW", "T5", 72.9, 79.7),
)


def _faithdial() -> tuple[Published, ...]:
    out = []
    for table, trained, tested, model, f1, nli in FAITHDIAL_ROWS:
        where = (
            "on FaithDial's test split"
            if tested == "FaithDial"
            else f"on {tested}, " + ("in domain" if trained == tested else "zero-shot")
        )
        for measure, metric, value in (("mean_q2_f1", "Q²-F1", f1), ("mean_q2_nli", "Q²-NLI", nli)):
            note = f"the mean over the system's generated responses {where}"
            if metric == "Q²-NLI" and trained == "WoW" and model == "T5":
                note += " (footnote 6: Q²-NLI may not be robust to partial hallucinations)"
            out.append(
                Published(
                    "faithdial",
                    measure,
                    metric,
                    f"{Q2_MODELS}; the Q² authors' released code",
                    round(value / 100, 4),
                    FAITHDIAL,
                    f"Table {table}",
                    f"{FAITHDIAL_SOURCE}, Table {table}",
                    note,
                    f"{model}, trained on {trained}, tested on {tested}",
                )
            )
    return tuple(out)


FIGURES = FIGURES + _faithdial()

SEAHORSE = "Clark et al., 2023, SEAHORSE (Findings of EMNLP 2023; arXiv 2305.13194)"
EUROBERT = "github.com/KRLabsOrg/LettuceDetect/blob/1081044/docs/EUROBERT.md, Synthetic Multilingual Results"
# the translated RAGTruth: per language, (EuroBERT-610M's F1, GPT-4.1-mini's F1), in percent
EUROBERT_F1 = {
    "zh": (77.27, 60.23),
    "fr": (73.13, 62.37),
    "de": (74.95, 60.91),
    "it": (74.71, 61.06),
    "es": (73.25, 62.40),
    "pl": (73.05, 59.27),
}
EUROBERT_NOTE = (
    "the table does not name its level; set beside the response-level F1 (a response flagged iff it "
    "has a predicted span), a reading not checked in LettuceDetect's evaluation code"
)

# the multilingual sets' published figures: kept out of `FIGURES` (the Hub card's table) until the
# card is rewritten with them; `beside` and `figures_for` read both
MULTILINGUAL: tuple[Published, ...] = (
    Published(
        "seahorse",
        "pearson_all",
        "mT5-XXL trained on SEAHORSE's Q4 ratings (google/seahorse-xxl-q4)",
        "mT5-XXL",
        0.59,
        SEAHORSE,
        None,
        "",
        "attribution (Q4) on SEAHORSE's test split, all six languages together; the table number and "
        "whether its ρ is Pearson's (as read here) were not checked in the paper",
    ),
    Published(
        "seahorse",
        "roc_auc_all",
        "mT5-XXL trained on SEAHORSE's Q4 ratings (google/seahorse-xxl-q4)",
        "mT5-XXL",
        0.85,
        SEAHORSE,
        None,
        "",
        "attribution (Q4) on SEAHORSE's test split, all six languages together; the table number was "
        "not checked in the paper",
    ),
    *(
        Published(
            f"ragtruth:{lang}",
            "response_f1",
            metric,
            models,
            round(value / 100, 6),
            LETTUCE,
            None,
            EUROBERT,
            EUROBERT_NOTE,
        )
        for lang, (eurobert, gpt) in EUROBERT_F1.items()
        for metric, models, value in (
            (
                "LettuceDetect (EuroBERT-610M)",
                "EuroBERT-610M fine-tuned on the translated RAGTruth",
                eurobert,
            ),
            ("GPT-4.1-mini (few-shot, LettuceDetect's prompt)", "GPT-4.1-mini", gpt),
        )
    ),
)

MEASURES = {
    "pearson_all": "Pearson's ρ, all languages",
    "roc_auc_all": "ROC AUC, all languages",
    "mean_q2_nli": "mean Q²-NLI",
    "mean_q2_f1": "mean Q²-F1",
    "roc_auc_best": "ROC AUC",
    "response_f1": "response-level F1",
    "char_f1_lettucedetect": "character F1 (LettuceDetect's)",
    "mean_balanced_accuracy": "mean balanced accuracy",
    "accuracy@0.5": "accuracy at 0.5",
    "bootstrap_spearman": "bootstrap Spearman",
}


def measure_label(measure: str) -> str:
    """`mean_q2.MemNet.consistent` -> `mean Q², MemNet consistent`."""
    if measure.startswith("mean_q2."):
        return "mean Q², " + " ".join(measure.split(".")[1:])
    return MEASURES.get(measure, measure)


def _label(f: Published) -> str:
    """The figure's label, with the system whose responses it is on (FaithDial's rows)."""
    return measure_label(f.measure) + (f", {f.system}" if f.system else "")


def figures_for(benchmark: str) -> list[Published]:
    """The published figures on a set of this format."""
    return [f for f in (*FIGURES, *MULTILINGUAL) if f.benchmark == benchmark]


def _pct(value: float) -> str:
    return f"{value * 100:.2f}".rstrip("0").rstrip(".") if value < 1 else f"{value:g}"


def render_markdown() -> str:
    """The whole table, for the Hub card and the docs: the Q² paper's figures as it prints them, every
    other figure x 100 (Granite Guardian's Table 8 prints its AUCs on 0-1; they are shown x 100 too)."""
    lines = [
        "| benchmark | figure | metric | models | published | paper | table | checked at |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in FIGURES:
        value = f"{f.value:g}" if f.source == PAPER else _pct(f.value)
        lines.append(
            f"| {f.benchmark} | {_label(f)} | {f.metric} | {f.models} | {value} | {f.paper} | "
            f"{f.table or 'not checked'} | {f.source or 'not checked'} |"
        )
    return "\n".join(lines) + "\n"


def beside(benchmark: str, measured: dict[str, float | None], who: str) -> list[dict]:
    """Each published figure on a set of this format with the run's figure of the same measure
    (`measured`, None where the run has none), `who` naming the run's metric and models."""
    return [
        {
            "measure": f.measure,
            "label": _label(f),
            "published": f.value,
            "published_by": f.metric,
            "published_models": f.models,
            "paper": f.paper,
            "table": f.table,
            "source": f.source,
            "note": f.note,
            "measured": measured.get(f.measure),
            "measured_by": who,
        }
        for f in figures_for(benchmark)
    ]
