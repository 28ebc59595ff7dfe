"""PsiloQA (Rykov et al., 2025; `s-nlp/PsiloQA` on the Hugging Face Hub, CC-BY-4.0) as released,
and its span figures.

**Layout**: one table per split (the Hub's `data/{train,validation,test}-*.parquet`, or the same
rows written as JSON lines or CSV by `datasets`), one row per LLM answer: `id`, `lang`,
`wiki_title`, `wiki_url`, `llm_checkpoint`, `wiki_passage` (the Wikipedia context), `question`,
`golden_answer`, `llm_answer` (the answer checked), `annotated_span` (the answer with its spans
tagged), `complexity` and `labels` (a list of `[start, end]`: the hallucinated characters of
`llm_answer`, end exclusive; silver labels, from GPT-4o's comparison with the golden answer). The
split is the file: the test file has 2,897 rows in 14 languages.

**Knowledge**: the question, a line break, then the passage (RAGTruth's QA rule, `meta.ragtruth`).
An answer is consistent iff it has no labelled span.

**Figures** (`psiloqa_figures`), per language, for each span prediction over the answers it
predicts: character-level precision, recall and F1 summed over answers (|P ∩ G| / |P|,
|P ∩ G| / |G|, as `ragtruth.char_ragtruth`; None where nothing to divide by), and the mean
per-answer IoU of the character sets with Mu-SHROOM's convention (1.0 when both are empty;
`mushroom.iou`). These are our definitions, written down here; PsiloQA's own evaluation code was
not checked against them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.meta.mushroom import iou
from q2_metric.meta.ragtruth import char_ragtruth
from q2_metric.meta.spans import Offsets

COLUMNS = ("id", "lang", "wiki_passage", "question", "llm_answer", "labels")


class PsiloQAError(Q2InputError):
    """A PsiloQA file cannot be read at all."""


def is_psiloqa(columns: Sequence[str]) -> bool:
    """A table with PsiloQA's columns."""
    return all(c in columns for c in COLUMNS)


def _labels(value: Any, answer: str) -> tuple[list[Offsets] | None, str | None]:
    if isinstance(value, str):  # a CSV cell: the list as JSON text
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError:
            return None, "field 'labels' is not a list of [start, end]"
    if value is None:
        return [], None
    if not isinstance(value, (list, tuple)):
        return None, f"field 'labels' must be a list of [start, end], got {type(value).__name__}"
    out = []
    for k, item in enumerate(value):
        pair = list(item) if isinstance(item, (list, tuple)) else None
        s, e = (pair[0], pair[1]) if pair is not None and len(pair) == 2 else (None, None)
        if not (type(s) is int and type(e) is int and 0 <= s < e <= len(answer)):
            return None, (
                f"field 'labels' item {k} must be [start, end], integers with start < end within "
                f"'llm_answer' ({len(answer)} characters), got {item!r}"
            )
        out.append((s, e))
    return out, None


def read_psiloqa(
    path: Path, rows: Sequence[dict[str, Any] | str], langs: Sequence[str] = ()
) -> tuple[dict[str, list[Any]], list[str]]:
    """The kept rows (of the languages `langs`; empty: all) of a PsiloQA table already read
    (`rows`: its fields), as parallel lists `ids`, `lang`, `response`, `knowledge`, `gold`,
    `where`, and one sentence per bad row (the rest is read on).

    Raises:
        PsiloQAError: an id given twice.
    """
    out: dict[str, list[Any]] = {k: [] for k in ("ids", "lang", "response", "knowledge", "gold", "where")}
    bad: list[str] = []
    first: dict[str, int] = {}
    for n, row in enumerate(rows, 1):
        if isinstance(row, str):  # a row the table reader could not read: its sentence
            bad.append(f"{row}.")
            continue
        rid = row.get("id")
        where = f"{path.name} row {n} (id {rid})"
        if rid is None or str(rid).strip() == "":
            bad.append(f"{path.name} row {n}: field 'id' is missing.")
            continue
        if str(rid) in first:
            raise PsiloQAError(
                f"{path} row {n}: id {rid} is given twice (first on row {first[str(rid)]}); every "
                "answer needs its own id."
            )
        first[str(rid)] = n
        lang = row.get("lang")
        lang = lang.strip().lower() if isinstance(lang, str) else lang
        if langs and lang not in {x.lower() for x in langs}:
            continue
        answer, passage, question = row.get("llm_answer"), row.get("wiki_passage"), row.get("question")
        problem = None
        gold: list[Offsets] | None = None
        for col, value in (("lang", lang), ("llm_answer", answer), ("wiki_passage", passage)):
            if not isinstance(value, str) or not value.strip():
                problem = f"field '{col}' is empty or not text"
                break
        if problem is None:
            assert isinstance(answer, str)
            gold, problem = _labels(row.get("labels"), answer)
        if problem is not None or gold is None:
            bad.append(f"{where}: {problem}.")
            continue
        assert isinstance(passage, str) and isinstance(lang, str)
        q = question.strip() if isinstance(question, str) else ""
        out["ids"].append(str(rid))
        out["lang"].append(lang)
        out["response"].append(answer)
        out["knowledge"].append(f"{q}\n{passage}" if q else passage)
        out["gold"].append(gold)
        out["where"].append(f"{path} row {n}")
    return out, bad


def span_iou_f1(gold: Sequence[Sequence[Offsets]], predicted: Sequence[Sequence[Offsets]]) -> dict[str, Any]:
    """Character-level P/R/F1 summed over answers and the mean per-answer IoU (Mu-SHROOM's)."""
    figures = char_ragtruth(gold, predicted)
    ious = [iou(g, p) for g, p in zip(gold, predicted)]
    return {**figures, "iou": sum(ious) / len(ious) if ious else None}


def psiloqa_figures(
    ids: Sequence[str],
    lang: Sequence[str],
    gold: Sequence[Sequence[Offsets]],
    predictions: Mapping[str, Sequence[Sequence[Offsets] | None]],
) -> dict[str, Any]:
    """Per language, each prediction's figures (`span_iou_f1`) on the answers it predicts (the
    others listed by id)."""
    out: dict[str, Any] = {}
    for language in dict.fromkeys(lang):
        rows = [i for i, x in enumerate(lang) if x == language]
        per = {}
        for m, predicted in predictions.items():
            kept = [i for i in rows if predicted[i] is not None]
            per[m] = {
                "answers": len(kept),
                "unscored": [ids[i] for i in rows if predicted[i] is None],
                **span_iou_f1([gold[i] for i in kept], [list(predicted[i] or []) for i in kept]),
            }
        out[language] = {
            "answers": len(rows),
            "hallucinated": sum(bool(gold[i]) for i in rows),
            "metrics": per,
        }
    return out
