"""SEAHORSE (Clark et al., 2023; `seahorse_data.zip` of github.com/google-research-datasets/seahorse,
CC-BY-4.0) as released: its attribution question (Q4), with the articles joined by `gem_id`.

**Layout**: three tab-separated files with a header, `train.tsv`, `validation.tsv`, `test.tsv`
(no quoting), one row per rated summary: `gem_id` (the article's id in GEM), `worker_lang`
(`de`, `es-ES`, `en-US`, `ru`, `tr`, `vi`), `summary`, `model` (the system, or `reference`) and
`question1` .. `question6` (`Yes`, `No` or `Unsure`; empty after `question1` = `No`).
`question4` is attribution: "is all the information in the summary fully attributable to the
source article?".

**Articles** are not in the release: they are GEM's (xsum, mlsum and xlsum in GEMv2, wiki_lingua
in GEMv1). `--seahorse-articles FILE` (default: `articles.jsonl` in the SEAHORSE folder) is a
table (JSON lines, CSV or Parquet) of `gem_id` and the article's text in the column GEM names it:
`text` (mlsum, xlsum), `document` (xsum) or `source` (wiki_lingua).

**Labels**: consistent iff `question4` is `Yes`, inconsistent iff `No`; rows with another value
(`Unsure`, empty) are left out and counted by value. A row whose `gem_id` has no article is a bad
row (one sentence naming it), and the run goes on without it.

**Figures** (`seahorse_figures`), per language (`worker_lang` without its region: `en-US` ->
`en`) and over all languages together, for each metric's oriented scores (higher = more
attributable) against the labels (1 = Yes): ROC AUC (ties count half), Pearson's and Spearman's
ρ; None where undefined (one class only, or constant scores). The published figures beside them
(`meta.published`) are over all languages of the test split.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError

COLUMNS = ("gem_id", "worker_lang", "summary", "model", "question4")
QUESTION = "question4"
ARTICLE_COLUMNS = ("text", "document", "source")  # GEM's name of the article, by dataset
ARTICLES_FILE = "articles.jsonl"
SPLITS = ("train", "validation", "test")
LABELS = {"Yes": 1, "No": 0}


class SeahorseError(Q2InputError):
    """SEAHORSE's files or the articles cannot be used; one sentence naming the file."""


def is_seahorse(columns: Sequence[str]) -> bool:
    """A table with SEAHORSE's columns."""
    return all(c in columns for c in COLUMNS)


def is_seahorse_folder(path: Path) -> bool:
    """A folder holding a split file of SEAHORSE's (`{split}.tsv` whose header has its columns)."""
    if not path.is_dir():
        return False
    for split in SPLITS:
        file = path / f"{split}.tsv"
        if file.is_file():
            try:
                with open(file, encoding="utf-8-sig") as f:
                    header = f.readline(65536).rstrip("\r\n").split("\t")
            except (OSError, UnicodeDecodeError):
                continue
            if is_seahorse(header):
                return True
    return False


def seahorse_file(path: Path, split: str) -> Path | None:
    """The split's file of a SEAHORSE folder (`{split}.tsv`), or the file itself; None if absent."""
    if path.is_dir():
        file = path / f"{split}.tsv"
        return file if file.is_file() else None
    return path if path.is_file() else None


def language(worker_lang: str) -> str:
    """`en-US` -> `en`."""
    return worker_lang.strip().split("-")[0].lower()


def read_articles(path: Path) -> dict[str, str]:
    """`gem_id` -> the article's text, from a table of GEM's rows.

    Raises:
        SeahorseError: the file cannot be read, lacks `gem_id` or a text column, or gives an id twice
            with two texts.
    """
    from q2_metric import io

    if not path.is_file():
        raise SeahorseError(
            f"--seahorse-articles {path}: no such file; write GEM's articles (gem_id and text, document "
            "or source) to it."
        )
    try:
        raw, columns = io.read_table(path)
    except (OSError, UnicodeDecodeError, Q2InputError) as err:
        raise SeahorseError(f"--seahorse-articles {path}: cannot be read ({err}).") from None
    columns = io.table_columns(raw, columns)
    if "gem_id" not in columns or not any(c in columns for c in ARTICLE_COLUMNS):
        raise SeahorseError(
            f"--seahorse-articles {path}: needs a 'gem_id' column and one of "
            + ", ".join(f"'{c}'" for c in ARTICLE_COLUMNS)
            + "."
        )
    out: dict[str, str] = {}
    for r in raw:
        gid = r.fields.get("gem_id")
        # each row in its own GEM dataset's column (a file may mix xsum's `document` and xlsum's `text`)
        text = next((r.fields[c] for c in ARTICLE_COLUMNS if isinstance(r.fields.get(c), str)), None)
        if r.error or not isinstance(gid, str) or not isinstance(text, str) or not text.strip():
            continue  # a row without an article: the summaries that need it are reported
        if gid in out and out[gid] != text:
            raise SeahorseError(f"--seahorse-articles {path}: gem_id {gid} is given twice with two texts.")
        out[gid] = text
    return out


def read_seahorse(
    path: Path, rows: Sequence[dict[str, Any] | str], articles: Mapping[str, str], langs: Sequence[str] = ()
) -> tuple[dict[str, list[Any]], list[str], dict[str, Any]]:
    """The kept rows of a SEAHORSE table already read (`rows`: its fields; of the languages
    `langs`, empty: all) as parallel lists `gem_id`, `lang`, `model`, `response`, `knowledge`,
    `consistent`, `where`; one sentence per bad row; the counts of rows left out."""
    out: dict[str, list[Any]] = {
        k: [] for k in ("gem_id", "lang", "model", "response", "knowledge", "consistent", "where")
    }
    bad: list[str] = []
    left: Counter[str] = Counter()
    no_article: list[str] = []
    for n, row in enumerate(rows, 1):
        if isinstance(row, str):  # a row the table reader could not read: its sentence
            bad.append(f"{row}.")
            continue
        gid, lang_raw, summary = row.get("gem_id"), row.get("worker_lang"), row.get("summary")
        where = f"{path.name} row {n} (gem_id {gid})"
        if not isinstance(lang_raw, str) or not lang_raw.strip():
            bad.append(f"{where}: field 'worker_lang' is empty or not text.")
            continue
        lang = language(lang_raw)
        if langs and lang not in {x.lower() for x in langs}:
            continue
        label = row.get(QUESTION)
        label = "" if label is None else str(label).strip()
        if label not in LABELS:
            left[label or "(empty)"] += 1
            continue
        if not isinstance(gid, str) or not gid.strip():
            bad.append(f"{path.name} row {n}: field 'gem_id' is empty or not text.")
            continue
        if not isinstance(summary, str) or not summary.strip():
            bad.append(f"{where}: field 'summary' is empty or not text.")
            continue
        if gid not in articles:
            no_article.append(gid)
            bad.append(f"{where}: no article has this gem_id in --seahorse-articles.")
            continue
        model = row.get("model")
        out["gem_id"].append(gid)
        out["lang"].append(lang)
        out["model"].append(model if isinstance(model, str) else "")
        out["response"].append(summary)
        out["knowledge"].append(articles[gid])
        out["consistent"].append(LABELS[label])
        out["where"].append(f"{path} row {n}")
    counts = {
        "rows": len(rows),
        "kept": len(out["response"]),
        "bad": len(bad),
        "without_article": len(no_article),
        "left_out_by_label": dict(sorted(left.items())),
        "kept_by_language": dict(Counter(out["lang"])),
    }
    return out, bad, counts


def _pearson(x: Sequence[float], y: Sequence[int]) -> float | None:
    import numpy as np

    a, b = np.asarray(x, float), np.asarray(y, float)
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def _spearman(x: Sequence[float], y: Sequence[int]) -> float | None:
    from scipy.stats import rankdata

    if len(x) < 2:
        return None
    return _pearson(list(rankdata(x)), list(rankdata(y)))


def _auc(x: Sequence[float], y: Sequence[int]) -> float | None:
    from q2_metric.meta.stats import roc_auc

    value = roc_auc(x, y)
    return None if value != value else value


def correlations(scores: Sequence[float], consistent: Sequence[int]) -> dict[str, Any]:
    """ROC AUC, Pearson's and Spearman's ρ of scores against 0/1 labels (None where undefined); a
    NaN score (a row the metric did not score) is left out and counted in `unscored`."""
    kept = [i for i, v in enumerate(scores) if v == v]
    unscored = len(scores) - len(kept)
    scores, consistent = [scores[i] for i in kept], [consistent[i] for i in kept]
    return {
        "n": len(scores),
        "unscored": unscored,
        "yes": int(sum(consistent)),
        "roc_auc": _auc(scores, consistent),
        "pearson": _pearson(scores, consistent),
        "spearman": _spearman(scores, consistent),
    }


def seahorse_figures(
    lang: Sequence[str], consistent: Sequence[int], scores: Mapping[str, Sequence[float]]
) -> dict:
    """Per language (and `all`), each metric's `correlations`."""
    out: dict[str, Any] = {}
    groups = {language: [i for i, x in enumerate(lang) if x == language] for language in dict.fromkeys(lang)}
    groups["all"] = list(range(len(lang)))
    for name, rows in groups.items():
        y = [consistent[i] for i in rows]
        out[name] = {m: correlations([float(v[i]) for i in rows], y) for m, v in scores.items()}
    return out
