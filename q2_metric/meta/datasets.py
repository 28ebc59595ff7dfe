"""Labelled dialogue-faithfulness sets for `q2 meta-eval --dataset NAME=FILE`: readers, column
mapping, label rules and the checks that run before any work.

A file's format is known by its columns (or, for the paper's set, by being its folder):

| format     | knowledge   | response         | label          | consistent iff            |
|------------|-------------|------------------|----------------|---------------------------|
| `true`     | `grounding` | `generated_text` | `label`        | label is 1 (TRUE's CSVs)  |
| `begin-v1` | `evidence`  | `response`       | `gold label`   | `entailment` (as TRUE)    |
| `begin`    | `knowledge` | `response`       | `begin_label`  | `Fully attributable`      |
| `q2-wow`   | the paper's folder (four split files): the split's name says consistent or not   |
| `ragtruth` | RAGTruth's folder (`response.jsonl`, `source_info.jsonl`; `meta.ragtruth`): consistent iff no labelled span |
| `llm-aggrefact` | `doc` | `claim`  | `label` (and `dataset`, `split`) | label is 1 (supported) |
| `faithdial` | `knowledge` | `response` (and `original_response`) | `BEGIN` | FaithDial's `response` always; the `original_response` as FaithCritic labels it |
| `custom`   | `--knowledge-col` | `--response-col` | `--label-col` | a `--consistent-label` value |

The multilingual sets (SEAHORSE, Mu-SHROOM, PsiloQA, the translated RAGTruth) are known by their
layouts too and read by `meta.multilingual` (its docstring has their table): each row with its
language.

`.tsv` files are tab-separated without quoting (as BEGIN publishes them); `.csv` is RFC 4180;
`.jsonl` and `.parquet` as `q2 score` reads them. Every problem of every dataset (a missing
column, an empty text, a label outside the format's values, a set with one label only) is
collected first and reported as one sentence each.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.meta.ragtruth import Selection

DEFAULT_SELECTION = Selection()  # test split, good quality, the source as knowledge


class DatasetError(Q2InputError):
    """A `--dataset` argument or its file is wrong; the message has one sentence per problem."""


@dataclass(frozen=True)
class Format:
    """How one kind of file names its columns and which label values count as consistent."""

    name: str
    knowledge: str
    response: str
    label: str
    consistent: frozenset[str]
    allowed: frozenset[str] | None  # every valid label value (None: anything non-empty)
    group: str | None = None  # a column naming each row's source dataset (LLM-AggreFact)

    def rule(self) -> str:
        values = " or ".join(f"'{v}'" for v in sorted(self.consistent))
        return f"consistent iff '{self.label}' is {values}"


TRUE = Format(
    "true",
    "grounding",
    "generated_text",
    "label",
    frozenset({"1", "1.0"}),
    frozenset({"0", "1", "0.0", "1.0"}),
)
BEGIN_V1 = Format(
    "begin-v1",
    "evidence",
    "response",
    "gold label",
    frozenset({"entailment"}),
    frozenset({"entailment", "hallucination", "generic", "off-topic", "contradiction"}),
)
BEGIN = Format(
    "begin",
    "knowledge",
    "response",
    "begin_label",
    frozenset({"Fully attributable"}),
    frozenset({"Fully attributable", "Not fully attributable", "Generic"}),
)
AGGREFACT = Format(
    "llm-aggrefact",
    "doc",
    "claim",
    "label",
    frozenset({"1", "1.0"}),
    frozenset({"0", "1", "0.0", "1.0"}),
    group="dataset",
)
AGGREFACT_SPLITS = ("dev", "test")  # the values of its optional `split` column
KNOWN = (AGGREFACT, BEGIN_V1, BEGIN, TRUE)  # detection order: the first whose columns are all present


@dataclass(frozen=True)
class ColumnMapping:
    """`--response-col/--knowledge-col/--label-col/--consistent-label`: the columns and
    consistent values of a file of no known format."""

    response: str = "response"
    knowledge: str = "knowledge"
    label: str = "label"
    consistent: tuple[str, ...] = ("1",)

    def format(self) -> Format:
        return Format("custom", self.knowledge, self.response, self.label, frozenset(self.consistent), None)


@dataclass
class Dataset:
    """One labelled set: each response with its knowledge, label (consistent = 1) and place."""

    name: str
    path: str
    format: str
    rule: str
    response: list[str] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    consistent: list[int] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    # RAGTruth: each row's id, task type and gold spans, the selection's counts, the bad rows
    ids: list[str] = field(default_factory=list)
    task: list[str] = field(default_factory=list)
    gold_spans: list[list[tuple[int, int]]] | None = None
    selection: dict | None = None
    bad: list[str] = field(default_factory=list)
    # LLM-AggreFact: each row's source dataset and split ("dev" or "test")
    groups: list[str] | None = None
    splits: list[str] | None = None
    # FaithDial: whether each row is one of FaithDial's (edited, faithful) responses
    faithdial: list[bool] | None = None
    # the multilingual sets (SEAHORSE, Mu-SHROOM, PsiloQA, translated RAGTruth): each row's
    # language, Mu-SHROOM's soft labels, and what was read (`multilingual`: counts, split, languages)
    langs: list[str] | None = None
    soft_gold: list[Any] | None = None
    multilingual: dict[str, Any] | None = None

    def keys(self) -> list[tuple[str, str]]:
        return list(zip(self.response, self.knowledge))

    def summary(self) -> dict:
        n = len(self.consistent)
        out = {
            "source": self.path,
            "format": self.format,
            "label_rule": self.rule,
            "n": n,
            "consistent": sum(self.consistent),
            "consistent_share": sum(self.consistent) / n if n else None,
        }
        if self.selection is not None:
            out.update(selection=self.selection, bad_rows=list(self.bad))
        if self.groups is not None:
            out["datasets"] = list(dict.fromkeys(self.groups))
        if self.multilingual is not None:
            out["multilingual"] = dict(self.multilingual)
        return out


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def parse_dataset_spec(text: str) -> tuple[str, Path]:
    """`NAME=FILE` -> (name, path).

    >>> parse_dataset_spec("begin-dev=data/dev.tsv")
    ('begin-dev', PosixPath('data/dev.tsv'))
    """
    name, sep, path = text.partition("=")
    if not sep or not path:
        raise DatasetError(f"--dataset '{text}': expected NAME=FILE.")
    if not _NAME.match(name):
        raise DatasetError(
            f"--dataset '{text}': the name '{name}' must hold only letters, digits, '_', '-' and '.'."
        )
    return name, Path(path)


def _read(path: Path, limit: int | None = None) -> tuple[list[dict], list[str], list[str]]:
    """(rows as dicts, columns, problems of unreadable rows), of the first `limit` rows (None: all)."""
    from q2_metric import io

    raw, columns = io.read_table(path)
    columns = io.table_columns(raw, columns)
    raw = raw[:limit]
    return [r.fields for r in raw], columns, [r.error for r in raw if r.error]


def detect_format(columns: Sequence[str], mapping: ColumnMapping) -> Format | None:
    """The first known format whose columns are all present, else the mapping's when its columns
    are; None otherwise."""
    for fmt in KNOWN:
        if all(c in columns for c in (fmt.knowledge, fmt.response, fmt.label, fmt.group) if c):
            return fmt
    custom = mapping.format()
    if all(c in columns for c in (custom.knowledge, custom.response, custom.label)):
        return custom
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def load_dataset(
    name: str,
    path: Path,
    mapping: ColumnMapping = ColumnMapping(),
    selection: Selection = DEFAULT_SELECTION,
    limit: int | None = None,
) -> tuple[Dataset | None, list[str]]:
    """The dataset and its problems (sentences); the dataset is None when it cannot be read at all.
    `limit` keeps the first N rows of a file (of a RAGTruth selection: its first N kept responses;
    of the paper's folder: of each split file), and the checks are of those rows."""
    from q2_metric.meta.ragtruth import is_ragtruth, missing_file, translated_files
    from q2_metric.meta.seahorse import is_seahorse_folder

    head = f"--dataset {name} ({path})"
    if is_ragtruth(path):
        return _load_ragtruth(name, path, head, selection, limit)
    if translated_files(path):
        from q2_metric.meta.multilingual import load_translated

        return _made(name, path, load_translated(name, path, head, selection, limit))
    if is_seahorse_folder(path):
        from q2_metric.meta.multilingual import load_seahorse

        return _made(name, path, load_seahorse(name, path, head, selection, limit))
    lacking = missing_file(path)
    if lacking is not None:
        other = next(f for f in ("response.jsonl", "source_info.jsonl") if f != lacking)
        return None, [f"{head}: the folder holds RAGTruth's {other} but not its {lacking}; add {lacking}."]
    if path.is_dir():
        return _load_q2_wow(name, path, head, limit)
    if not path.is_file():
        return None, [f"{head}: no such file."]
    try:
        rows, columns, problems = _read(path, limit)
    except (OSError, UnicodeDecodeError, Q2InputError) as err:
        return None, [f"{head}: cannot be read ({err})."]
    more = f" (and {len(problems) - 1} other unreadable row(s))" if len(problems) > 1 else ""
    problems = [f"{head}: {p}{more}." for p in problems[:1]]
    if not rows:
        return None, problems + [f"{head}: no data rows."]
    if all(c in columns for c in FAITHDIAL_COLUMNS):
        return _load_faithdial(name, path, head, rows, problems)
    from q2_metric.meta import multilingual

    loader = multilingual.loader_of(columns)
    if loader is not None:
        return _made(name, path, loader(name, path, head, selection, limit))
    fmt = detect_format(columns, mapping)
    if fmt is None:
        shown = ", ".join(f"'{c}'" for c in columns[:12])
        return None, problems + [
            f"{head}: its columns ({shown}) match no known format (TRUE: grounding, "
            "generated_text, label; BEGIN: evidence/knowledge, response, gold label/"
            "begin_label; LLM-AggreFact: dataset, doc, claim, label; FaithDial: knowledge, response, BEGIN; "
            "SEAHORSE: gem_id, worker_lang, summary, model, question4; Mu-SHROOM: model_input, "
            "model_output_text, soft_labels; PsiloQA: id, lang, wiki_passage, question, llm_answer, labels); "
            "name them with --response-col, --knowledge-col and --label-col."
        ]
    ds = Dataset(name, str(path), fmt.name, fmt.rule())
    bad: dict[str, list[int]] = {}
    groups: list[str] = []
    splits: list[str] = []
    if fmt.group:
        ds.groups, ds.splits = groups, splits
    for i, row in enumerate(rows, 1):
        resp, know = _text(row.get(fmt.response)), _text(row.get(fmt.knowledge))
        label = row.get(fmt.label)
        label = "" if label is None else str(label).strip()
        for col, value in ((fmt.response, resp), (fmt.knowledge, know)):
            if value is None or not value.strip():
                bad.setdefault(f"column '{col}' is empty or not text", []).append(i)
        problem = label_problem(fmt, label)
        if problem is not None:
            bad.setdefault(f"column '{fmt.label}' {problem}", []).append(i)
        ds.response.append(resp or "")
        ds.knowledge.append(know or "")
        ds.consistent.append(int(label in fmt.consistent))
        ds.where.append(f"{path} row {i}")
        if fmt.group:
            group, split = row.get(fmt.group), row.get("split")
            if not isinstance(group, str) or not group.strip():
                bad.setdefault(f"column '{fmt.group}' is empty or not text", []).append(i)
            split = "test" if split is None or split == "" else str(split).strip().lower()
            if split not in AGGREFACT_SPLITS:
                bad.setdefault(
                    "column 'split' holds a value other than "
                    + " or ".join(f"'{v}'" for v in AGGREFACT_SPLITS),
                    [],
                ).append(i)
            groups.append(group if isinstance(group, str) else "")
            splits.append(split)
    for what, where in bad.items():
        more = f" and {len(where) - 1} other row(s)" if len(where) > 1 else ""
        problems.append(f"{head}: {what} at row {where[0]}{more}.")
    one_class = one_class_problem(ds.consistent, fmt)
    if not bad and one_class is not None:
        problems.append(f"{head}: {one_class}")
    return ds, problems


def _made(
    name: str, path: Path, loaded: tuple[dict[str, Any] | None, list[str]]
) -> tuple[Dataset | None, list[str]]:
    """A multilingual loader's fields (`meta.multilingual`) as a `Dataset`."""
    parts, problems = loaded
    if parts is None:
        return None, problems
    ds = Dataset(name, str(path), parts.pop("format"), parts.pop("rule"))
    for key, value in parts.items():
        setattr(ds, key, value)
    return ds, problems


FAITHDIAL_COLUMNS = ("knowledge", "response", "BEGIN")
FAITHDIAL_RULE = (
    "FaithDial's responses are consistent; an original (Wizard of Wikipedia) response is inconsistent "
    "iff its BEGIN labels hold 'Hallucination', consistent iff they hold 'Entailment' (FaithCritic's "
    "rule), and left out otherwise"
)


def _begin_labels(value: object) -> list[str] | None:
    """FaithDial's `BEGIN` labels: a list (JSONL, Parquet) or its text form (CSV); None if unreadable."""
    import ast

    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return None
        else:
            value = [v.strip() for v in text.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _load_faithdial(
    name: str, path: Path, head: str, rows: list[dict], problems: list[str]
) -> tuple[Dataset | None, list[str]]:
    """FaithDial's rows (`McGill-NLP/FaithDial` as JSONL, Parquet, CSV or a datasets folder, or its
    `generate.py` output): each row's `response` (FaithDial's edit, faithful by construction) as
    consistent, and its `original_response`, where it differs, labelled by FaithCritic's rule from
    `BEGIN`."""
    ds = Dataset(name, str(path), "faithdial", FAITHDIAL_RULE)
    ds.faithdial = []
    bad: dict[str, list[int]] = {}
    for i, row in enumerate(rows, 1):
        resp, know = _text(row.get("response")), _text(row.get("knowledge"))
        for col, value in (("response", resp), ("knowledge", know)):
            if value is None or not value.strip():
                bad.setdefault(f"column '{col}' is empty or not text", []).append(i)
        labels = _begin_labels(row.get("BEGIN"))
        if labels is None:
            bad.setdefault("column 'BEGIN' is not a list of labels", []).append(i)
            labels = []
        ds.response.append(resp or "")
        ds.knowledge.append(know or "")
        ds.consistent.append(1)
        ds.where.append(f"{path} row {i}")
        ds.faithdial.append(True)
        original = _text(row.get("original_response"))
        if original and original.strip() and original != resp:
            label = 0 if "Hallucination" in labels else 1 if "Entailment" in labels else None
            if label is not None:
                ds.response.append(original)
                ds.knowledge.append(know or "")
                ds.consistent.append(label)
                ds.where.append(f"{path} row {i} (original_response)")
                ds.faithdial.append(False)
    for what, where in bad.items():
        more = f" and {len(where) - 1} other row(s)" if len(where) > 1 else ""
        problems.append(f"{head}: {what} at row {where[0]}{more}.")
    if not bad and len(set(ds.consistent)) < 2:
        problems.append(
            f"{head}: every one of its {len(ds.consistent)} responses is consistent ({FAITHDIAL_RULE}), "
            "so no ROC AUC can be computed; it needs original responses labelled 'Hallucination'."
        )
    return ds, problems


def _load_ragtruth(
    name: str, path: Path, head: str, selection: Selection, limit: int | None = None
) -> tuple[Dataset | None, list[str]]:
    """RAGTruth's folder (`meta.ragtruth`): the selected rows (the first `limit` of them); its bad
    rows are kept in `bad`, one sentence each naming the row's id, and the run goes on without
    them. A selection of one class is no problem: RAGTruth's figures need no ROC AUC (which the
    report gives as not defined)."""
    from q2_metric.meta.ragtruth import TASKS, RagTruthError, read_ragtruth

    try:
        rows = read_ragtruth(
            path, split=selection.split, quality=selection.quality, grounding=selection.grounding
        )
    except RagTruthError as err:
        return None, [f"{head}: {err}"]
    if limit is not None and len(rows.ids) > limit:
        for part in ("ids", "response", "knowledge", "task", "gold", "where"):
            setattr(rows, part, getattr(rows, part)[:limit])
        kept = Counter(rows.task)
        rows.selection.update(kept=len(rows.ids), kept_by_task={t: kept[t] for t in TASKS if kept[t]})
    rows.selection["limit"] = limit
    rule = "consistent iff the response has no labelled span (RAGTruth's response-level rule)"
    ds = Dataset(name, str(path), "ragtruth", rule)
    ds.response, ds.knowledge, ds.where = rows.response, rows.knowledge, rows.where
    ds.ids, ds.task, ds.gold_spans = rows.ids, rows.task, rows.gold
    ds.consistent = [int(not g) for g in rows.gold]
    ds.selection, ds.bad = rows.selection, rows.bad
    sel = rows.selection
    if not ds.ids:
        return None, [
            f"{head}: no row has split '{sel['split']}' and quality '{sel['quality']}' and is good "
            f"({sel['rows']} rows, {sel['bad']} bad)."
        ]
    return ds, []


def label_format(
    columns: Sequence[str], response: str, knowledge: str, label: str, consistent: Sequence[str] | None
) -> Format:
    """The rule of a label column as the benchmark reads it (`q2 agree --label-col`): a known
    format's (its consistent and allowed values) when the file has that format's columns and no
    `--consistent-label` is given, else the custom rule (consistent iff one of `consistent`, by
    default `1`; any non-empty value allowed)."""
    mapping = ColumnMapping(response, knowledge, label, tuple(consistent) if consistent else ("1",))
    found = None if consistent else detect_format(columns, mapping)
    return found if found is not None and found.label == label else mapping.format()


def label_problem(fmt: Format, label: str) -> str | None:
    """Why a label value (stripped) cannot be read by `fmt`, as a clause after the column's name
    (`is empty`, `holds 'x', not one of ...`), else None: the one rule of the benchmark reader and
    `q2 agree`."""
    if not label:
        return "is empty"
    if fmt.allowed is not None and label not in fmt.allowed:
        return f"holds {label!r}, not one of " + ", ".join(f"'{v}'" for v in sorted(fmt.allowed))
    return None


def one_class_problem(consistent: Sequence[int], fmt: Format) -> str | None:
    """The sentence for labels of one class only (no ROC AUC can be computed), else None."""
    if not consistent or len(set(consistent)) > 1:
        return None
    cls = "consistent" if consistent[0] else "inconsistent"
    return (
        f"every one of its {len(consistent)} responses is {cls} ({fmt.rule()}), so no ROC AUC can be "
        "computed; check the label column and --consistent-label."
    )


def _load_q2_wow(
    name: str, path: Path, head: str, limit: int | None = None
) -> tuple[Dataset | None, list[str]]:
    """The paper's annotated set: its 600 split responses (the split's name is the label; the first
    `limit` of each split file)."""
    from q2_metric.meta.evaluation import SPLITS, MetaEvalInputError, read_split

    ds = Dataset(name, str(path), "q2-wow", "consistent iff the split file is *_consistent.csv")
    for s in SPLITS:
        file = path / f"{s}.csv"
        if not file.is_file():
            return None, [f"{head}: a folder must be the paper's annotated set, but {s}.csv is not in it."]
        try:
            rows = read_split(file)[:limit]
        except MetaEvalInputError as err:
            return None, [f"{head}: {err}"]
        missing = [c for c in ("response", "knowledge") if rows and c not in rows[0]]
        if missing:
            return None, [f"{head}: {file.name} has no column '{missing[0]}'."]
        for i, r in enumerate(rows, 1):
            ds.response.append(r["response"] or "")
            ds.knowledge.append(r["knowledge"] or "")
            ds.consistent.append(int(s.endswith("_consistent")))
            ds.where.append(f"{file} row {i}")
    empty = [i for i, (a, b) in enumerate(zip(ds.response, ds.knowledge)) if not a.strip() or not b.strip()]
    return ds, ([f"{head}: an empty response or knowledge at {ds.where[empty[0]]}."] if empty else [])


def load_datasets(
    specs: Sequence[str],
    mapping: ColumnMapping = ColumnMapping(),
    selection: Selection = DEFAULT_SELECTION,
    limit: int | None = None,
) -> list[Dataset]:
    """Every `NAME=FILE` (its first `limit` rows, `load_dataset`), read and checked; all problems
    of all datasets raise one `DatasetError` (one sentence per problem, one per line) before any work."""
    if limit is not None and limit < 1:
        raise DatasetError(f"--limit must be at least 1, got {limit}.")
    parsed = [parse_dataset_spec(s) for s in specs]
    names = [n for n, _ in parsed]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise DatasetError(f"--dataset: the name '{dup}' is given twice; give every dataset its own name.")
    out, problems = [], []
    for name, path in parsed:
        ds, found = load_dataset(name, path, mapping, selection, limit)
        problems += found
        if ds is not None:
            out.append(ds)
    if problems:
        raise DatasetError("\n".join(problems))
    return out
