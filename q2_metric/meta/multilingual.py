"""The multilingual sets of `q2 meta-eval --dataset NAME=PATH`, read into `meta.datasets.Dataset`:
SEAHORSE (`meta.seahorse`), Mu-SHROOM (`meta.mushroom`), PsiloQA (`meta.psiloqa`) and the
machine-translated RAGTruth (`meta.ragtruth.read_translated`). Each is known by its layout:

| set | PATH | response | knowledge | consistent iff |
|-----|------|----------|-----------|----------------|
| `seahorse` | SEAHORSE's folder (`{split}.tsv`) or one of its TSVs | `summary` | the GEM article of its `gem_id` | `question4` is `Yes` |
| `mu-shroom` | a JSON-lines file with `model_output_text` and `soft_labels` | `model_output_text` | `model_input` (the question: the set ships no source) | no hard label |
| `psiloqa` | a table with `llm_answer`, `wiki_passage` and `labels` | `llm_answer` | `question` and `wiki_passage` | no label |
| `ragtruth` (translated) | a folder of `ragtruth_data_{lang}.json` files, or one | `answer` | `prompt` | no label |

Every set records each row's language (`Dataset.langs`) and what was read
(`Dataset.multilingual`: the counts, split and languages); the three span sets also carry their
gold spans, so RAGTruth's response- and character-level figures apply to them as well, beside
their own per-language figures (`multilingual_figures`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from q2_metric.errors import Q2InputError
from q2_metric.meta.ragtruth import Selection

# a loader's result: the set's fields (`datasets.Dataset`'s, `format` and `rule` among them; None when
# it cannot be read at all) and its problems; `datasets.load_dataset` makes the `Dataset`
Loaded = tuple[dict[str, Any] | None, list[str]]
Loader = Callable[[str, Path, str, Selection, int | None], Loaded]

SPAN_FORMATS = ("mu-shroom", "psiloqa")


@dataclass
class Parts:
    """A set's fields as loaded, named as `datasets.Dataset` names them."""

    format: str
    rule: str
    response: list[str] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    consistent: list[int] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    task: list[str] = field(default_factory=list)
    gold_spans: list[list[tuple[int, int]]] | None = None
    soft_gold: list[Any] | None = None
    langs: list[str] | None = None
    selection: dict[str, Any] | None = None
    bad: list[str] = field(default_factory=list)
    multilingual: dict[str, Any] | None = None

    def fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class SetRows(Protocol):
    """What `multilingual_figures` reads of a loaded set (`datasets.Dataset`)."""

    format: str
    ids: list[str]
    response: list[str]
    consistent: list[int]
    gold_spans: list[list[tuple[int, int]]] | None
    soft_gold: list[Any] | None
    langs: list[str] | None
    multilingual: dict[str, Any] | None


def loader_of(columns: Sequence[str]) -> Loader | None:
    """The loader of a table whose columns are a multilingual set's, else None."""
    from q2_metric.meta.mushroom import is_mushroom
    from q2_metric.meta.psiloqa import is_psiloqa
    from q2_metric.meta.seahorse import is_seahorse

    if is_seahorse(columns):
        return load_seahorse
    if is_mushroom(columns):
        return load_mushroom
    if is_psiloqa(columns):
        return load_psiloqa
    return None


def _rows(path: Path) -> list[dict[str, Any] | str]:
    """A table's rows: each row's fields, or, for a row that cannot be read, the reader's sentence
    (so that the set's reader names it as a bad row and keeps the others' numbers)."""
    from q2_metric import io

    raw, _columns = io.read_table(path)
    return [r.error if r.error else r.fields for r in raw]


def _span_selection(kept: int, rows: int, bad: int, grounding: str) -> dict[str, Any]:
    """A RAGTruth-shaped selection for a span set (its figures reuse RAGTruth's)."""
    return {
        "split": "the file's",
        "quality": "not in the release",
        "grounding": grounding,
        "rows": rows,
        "kept": kept,
        "bad": bad,
        "left_out_by_split": {},
        "left_out_by_quality": {},
        "kept_by_task": {"QA": kept} if kept else {},
    }


def _langs_note(selection: Selection) -> list[str] | str:
    return list(selection.langs) if selection.langs else "all"


def load_seahorse(name: str, path: Path, head: str, selection: Selection, limit: int | None) -> Loaded:
    """SEAHORSE's split file (of a folder: `{seahorse_split}.tsv`) with its articles."""
    from q2_metric.meta.seahorse import (
        ARTICLES_FILE,
        SeahorseError,
        read_articles,
        read_seahorse,
        seahorse_file,
    )

    file = seahorse_file(path, selection.seahorse_split)
    if file is None:
        return None, [f"{head}: SEAHORSE's folder has no {selection.seahorse_split}.tsv."]
    articles_path = (
        Path(selection.seahorse_articles)
        if selection.seahorse_articles
        else (path if path.is_dir() else path.parent) / ARTICLES_FILE
    )
    try:
        articles = read_articles(articles_path)
        rows = _rows(file)
    except (SeahorseError, Q2InputError, OSError, UnicodeDecodeError) as err:
        return None, [f"{head}: {err}"]
    kept, bad, counts = read_seahorse(file, rows, articles, selection.langs)
    if limit is not None:
        kept = {k: v[:limit] for k, v in kept.items()}
        counts.update(kept=len(kept["response"]), kept_by_language=dict(Counter(kept["lang"])), limit=limit)
    rule = "consistent iff 'question4' (attribution) is 'Yes', inconsistent iff 'No'; other rows left out"
    ds = Parts(format="seahorse", rule=rule)
    ds.response, ds.knowledge, ds.where = kept["response"], kept["knowledge"], kept["where"]
    ds.consistent, ds.langs, ds.bad = kept["consistent"], kept["lang"], bad
    ds.multilingual = {
        "set": "SEAHORSE",
        "split": file.stem,
        "question": "question4 (attribution)",
        "articles": str(articles_path),
        "languages": _langs_note(selection),
        **counts,
        "bad_rows": list(bad),
    }
    if not ds.response:
        return None, [f"{head}: no row of {file.name} has a 'Yes' or 'No' attribution label and an article."]
    return ds.fields(), []


def load_mushroom(name: str, path: Path, head: str, selection: Selection, limit: int | None) -> Loaded:
    """A Mu-SHROOM file: its outputs, hard labels as gold spans, soft labels, languages."""
    from q2_metric.meta.mushroom import MushroomError, read_mushroom

    try:
        rows = read_mushroom(path, selection.langs)
    except MushroomError as err:
        return None, [f"{head}: {err}"]
    n = len(rows.ids) if limit is None else min(limit, len(rows.ids))
    rule = "consistent iff the output has no hard label (Mu-SHROOM's annotators' majority)"
    ds = Parts(format="mu-shroom", rule=rule)
    ds.ids, ds.response, ds.knowledge = rows.ids[:n], rows.text[:n], rows.question[:n]
    ds.where, ds.gold_spans, ds.soft_gold = rows.where[:n], rows.hard[:n], rows.soft[:n]
    ds.langs, ds.task, ds.bad = rows.lang[:n], ["QA"] * n, rows.bad
    ds.consistent = [int(not h) for h in ds.gold_spans]
    ds.selection = _span_selection(n, n + len(rows.bad), len(rows.bad), "the question (no source text)")
    ds.selection["limit"] = limit
    ds.multilingual = {
        "set": "Mu-SHROOM",
        "split": "the file's",
        "knowledge": "model_input (the question: Mu-SHROOM ships no source text)",
        "languages": _langs_note(selection),
        "kept": n,
        "kept_by_language": dict(Counter(ds.langs)),
        "bad_rows": list(rows.bad),
    }
    if not ds.ids:
        return None, [f"{head}: no good Mu-SHROOM row ({len(rows.bad)} bad)."]
    return ds.fields(), []


def load_psiloqa(name: str, path: Path, head: str, selection: Selection, limit: int | None) -> Loaded:
    """A PsiloQA table: its answers, gold spans, languages."""
    from q2_metric.meta.psiloqa import PsiloQAError, read_psiloqa

    try:
        kept, bad = read_psiloqa(path, _rows(path), selection.langs)
    except (PsiloQAError, Q2InputError, OSError, UnicodeDecodeError) as err:
        return None, [f"{head}: {err}"]
    if limit is not None:
        kept = {k: v[:limit] for k, v in kept.items()}
    n = len(kept["ids"])
    rule = "consistent iff the answer has no labelled span"
    ds = Parts(format="psiloqa", rule=rule)
    ds.ids, ds.response, ds.knowledge, ds.where = (
        kept["ids"],
        kept["response"],
        kept["knowledge"],
        kept["where"],
    )
    ds.gold_spans, ds.langs, ds.task, ds.bad = kept["gold"], kept["lang"], ["QA"] * n, bad
    ds.consistent = [int(not g) for g in ds.gold_spans]
    ds.selection = _span_selection(n, n + len(bad), len(bad), "question and wiki_passage")
    ds.selection["limit"] = limit
    ds.multilingual = {
        "set": "PsiloQA",
        "split": "the file's",
        "labels": "silver (GPT-4o against the golden answer)",
        "languages": _langs_note(selection),
        "kept": n,
        "kept_by_language": dict(Counter(ds.langs)),
        "bad_rows": list(bad),
    }
    if not ds.ids:
        return None, [f"{head}: no good PsiloQA row ({len(bad)} bad)."]
    return ds.fields(), []


def load_translated(name: str, path: Path, head: str, selection: Selection, limit: int | None) -> Loaded:
    """The translated RAGTruth (`ragtruth.read_translated`): a RAGTruth set with languages."""
    from q2_metric.meta.ragtruth import TASKS, RagTruthError, read_translated

    try:
        rows = read_translated(path, split=selection.split, langs=selection.langs)
    except RagTruthError as err:
        return None, [f"{head}: {err}"]
    if limit is not None and len(rows.ids) > limit:
        for part in ("ids", "response", "knowledge", "task", "gold", "where", "lang"):
            setattr(rows, part, getattr(rows, part)[:limit])
        kept = Counter(rows.task)
        rows.selection.update(kept=len(rows.ids), kept_by_task={t: kept[t] for t in TASKS if kept[t]})
    rows.selection["limit"] = limit
    rule = "consistent iff the response has no labelled span (RAGTruth's response-level rule)"
    ds = Parts(format="ragtruth", rule=rule)
    ds.response, ds.knowledge, ds.where = rows.response, rows.knowledge, rows.where
    ds.ids, ds.task, ds.gold_spans, ds.langs = rows.ids, rows.task, rows.gold, rows.lang
    ds.consistent = [int(not g) for g in rows.gold]
    ds.selection, ds.bad = rows.selection, rows.bad
    ds.multilingual = {
        "set": "RAGTruth, machine-translated (LettuceDetect's release)",
        "split": selection.split,
        "knowledge": "prompt (the translated prompt, with the source inside it)",
        "languages": _langs_note(selection),
        "kept": len(rows.ids),
        "kept_by_language": dict(Counter(rows.lang)),
        "bad_rows": list(rows.bad),
    }
    if not ds.ids:
        return None, [f"{head}: no good row has split '{selection.split}' ({rows.selection['rows']} rows)."]
    return ds.fields(), []


# -- figures -------------------------------------------------------------------------------------


def multilingual_figures(
    ds: SetRows,
    scores: Mapping[str, Sequence[float]],
    spans: Mapping[str, Sequence[Any]],
) -> dict[str, Any]:
    """A multilingual set's own figures, per language: SEAHORSE's correlations of every score
    (`scores`: metric -> oriented scores of the set's rows); Mu-SHROOM's IoU and Cor and PsiloQA's
    and the translated RAGTruth's span figures of every span prediction (`spans`: metric -> each
    row's spans, None where unscored)."""
    from q2_metric.meta.mushroom import mushroom_figures
    from q2_metric.meta.psiloqa import psiloqa_figures
    from q2_metric.meta.seahorse import seahorse_figures

    langs = ds.langs or []
    out: dict[str, Any] = {
        "set": (ds.multilingual or {}).get("set", ds.format),
        "what": dict(ds.multilingual or {}),
    }
    out["what"].pop("bad_rows", None)
    if ds.format == "seahorse":
        out["by_language"] = seahorse_figures(langs, ds.consistent, scores)
    elif ds.format == "mu-shroom":
        out["by_language"] = mushroom_figures(
            ds.ids, langs, ds.response, ds.gold_spans or [], ds.soft_gold or [], spans
        )
    else:
        out["by_language"] = psiloqa_figures(ds.ids, langs, ds.gold_spans or [], spans)
    return out
