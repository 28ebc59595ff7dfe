"""Published figures of the benchmarks `q2 meta-eval` measures, each with its source, table and
the models behind it: the one table that the reports print beside the measured figures and that
the Hub card shows (`render_markdown`). The Q² paper's own figures are `hub.card_text`'s.

`source` names where a figure was checked; a figure whose table number could not be checked in
its paper has `table` None, and one taken as quoted, not checked, has an empty `source` and says
so in `note`.
"""

from __future__ import annotations

from dataclasses import dataclass

from q2_metric.hub.card_text import PAPER, PAPER_ACCURACY, PAPER_SPEARMAN, PAPER_VALUES

TRUE_PAPER = "Honovich et al., 2022, TRUE (NAACL; arXiv 2204.04991)"
LETTUCE = "Kovács and Recski, 2025, LettuceDetect (arXiv 2502.17125)"
ISSUE = "as quoted by issue 50 of this project; not checked against the paper's table"


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
    # TRUE's dialogue sets: the best ROC AUC on each (x100), figures as issue 50 gives them
    Published(
        "begin-v1",
        "roc_auc_best",
        "best metric on TRUE's BEGIN",
        "(see the paper)",
        0.867,
        TRUE_PAPER,
        None,
        "",
        ISSUE,
    ),
    Published(
        "q2-wow",
        "roc_auc_best",
        "best metric on TRUE's Q² set",
        "(see the paper)",
        0.913,
        TRUE_PAPER,
        None,
        "",
        ISSUE,
    ),
    Published(
        "dialfact",
        "roc_auc_best",
        "best metric on TRUE's DialFact",
        "(see the paper)",
        0.946,
        TRUE_PAPER,
        None,
        "",
        ISSUE,
    ),
    Published(
        "ragtruth",
        "response_f1",
        "LettuceDetect-large-v1",
        "ModernBERT-large token classifier (395M), trained on RAGTruth",
        0.7922,
        LETTUCE,
        None,
        "arXiv 2502.17125 abstract; krlabsorg.github.io/LettuceDetect/benchmarks",
        "example-level F1 on RAGTruth's test set",
    ),
    Published(
        "ragtruth",
        "char_f1_lettucedetect",
        "LettuceDetect-large-v1",
        "ModernBERT-large token classifier (395M), trained on RAGTruth",
        0.5893,
        LETTUCE,
        None,
        "a summary of the paper (papers.lunadong.com/paper/6474), not its table",
        "span-level (its character-overlap) F1; " + ISSUE,
    ),
    Published(
        "ragtruth",
        "response_f1",
        "RAG-HAT",
        "fine-tuned Llama-3-8B",
        0.839,
        "Song et al., 2024, RAG-HAT (EMNLP Industry)",
        None,
        "krlabsorg.github.io/LettuceDetect/benchmarks (RAG-HAT's figure as LettuceDetect cites it)",
        "response-level F1 on RAGTruth's test set",
    ),
    Published(
        "llm-aggrefact",
        "mean_balanced_accuracy",
        "Bespoke-MiniCheck-7B",
        "InternLM2.5-7B fine-tuned (Bespoke Labs)",
        0.774,
        "Tang et al., 2024, MiniCheck (EMNLP; arXiv 2404.10774), LLM-AggreFact leaderboard",
        None,
        "docs.bespokelabs.ai/models/bespoke-minicheck (77.4%)",
        "mean balanced accuracy over the datasets (leaderboard figure; issue 50 quotes 77.2-77.4)",
    ),
)

MEASURES = {
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


def figures_for(benchmark: str) -> list[Published]:
    """The published figures on a set of this format."""
    return [f for f in FIGURES if f.benchmark == benchmark]


def _pct(value: float) -> str:
    return f"{value * 100:.2f}".rstrip("0").rstrip(".") if value < 1 else f"{value:g}"


def render_markdown() -> str:
    """The whole table, for the Hub card and the docs (figures x 100 where the papers print them so,
    except the Q² paper's own)."""
    lines = [
        "| benchmark | figure | metric | models | published | paper | table | checked at |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in FIGURES:
        value = f"{f.value:g}" if f.benchmark == "q2-wow" and f.table else _pct(f.value)
        lines.append(
            f"| {f.benchmark} | {measure_label(f.measure)} | {f.metric} | {f.models} | {value} | {f.paper} | "
            f"{f.table or 'not checked'} | {f.source or 'not checked'} |"
        )
    return "\n".join(lines) + "\n"


def beside(benchmark: str, measured: dict[str, float | None], who: str) -> list[dict]:
    """Each published figure on a set of this format with the run's figure of the same measure
    (`measured`, None where the run has none), `who` naming the run's metric and models."""
    return [
        {
            "measure": f.measure,
            "label": measure_label(f.measure),
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
