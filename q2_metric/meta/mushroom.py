"""Mu-SHROOM (SemEval-2025 Task 3; Vázquez et al., 2025) as released, and its two figures computed
the way the task's own scorer (`scorer.py` of its participant kit) computes them.

**Layout** (one JSON-lines file per language and split, e.g. `mushroom.en-val.v2.jsonl`): one
object per model output with `id`, `lang`, `model_input` (the question), `model_output_text`,
`model_id`, `soft_labels` (a list of `{start, end, prob}`: the share of annotators who marked the
characters `start`..`end`) and `hard_labels` (a list of `[start, end]`: the characters most
annotators marked). Offsets are Python string indices of `model_output_text`, end exclusive. A
file may hold several languages (its rows are grouped by `lang`). Mu-SHROOM ships no source text:
the annotators checked the outputs against Wikipedia, so the knowledge a metric such as Q² is given
here is the question, which cannot support an answer; its figures on this set say what a metric does
without evidence, not what it does with it.

**Predictions** are in the task's submission format: one object per output with `id`,
`soft_labels` and, optionally, `hard_labels` (recomputed from the soft labels as the scorer does:
spans with prob > 0.5, adjacent ones merged, when absent). A metric that gives spans only (Q²'s
unsupported spans, `--ragtruth-spans` files) has them as hard labels and as soft labels of prob 1.

**Figures** per item, then their mean over the items of each language (the scorer's `IoU` and
`Cor` lines; the scorer wants a prediction for every output, where here an output a prediction
file leaves out is left out of that metric's means and listed by id):
- IoU: the characters inside a gold hard label against those inside a predicted one, as sets of
  indices: |G ∩ P| / |G ∪ P|; **1.0 when both are empty** (the scorer's convention).
- Cor: two vectors of one value per character of `model_output_text`, 0 where no soft label
  covers it (a later soft label overwrites an earlier one over the characters they share); if
  either vector is constant (one distinct value after rounding to 8 decimals), **1.0 when both
  are constant and 0.0 otherwise**; else Spearman's ρ (scipy's `spearmanr`, ties ranked by their
  mean rank).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.meta.spans import Offsets

COLUMNS = ("id", "lang", "model_input", "model_output_text", "soft_labels")


class MushroomError(Q2InputError):
    """A Mu-SHROOM file or prediction file cannot be used; one sentence naming the line and field."""


@dataclass(frozen=True)
class Soft:
    """One soft label: the characters `start`..`end` marked by a share `prob` of the annotators."""

    start: int
    end: int
    prob: float


class SoftSpans(list[Offsets]):
    """A prediction's hard labels (the list) with its soft labels (`soft`)."""

    soft: list[Soft]

    def __init__(self, hard: Sequence[Offsets], soft: Sequence[Soft]) -> None:
        super().__init__(hard)
        self.soft = list(soft)


@dataclass
class MushroomRows:
    """The good rows of a Mu-SHROOM file (parallel lists) and one sentence per bad row."""

    ids: list[str] = field(default_factory=list)
    lang: list[str] = field(default_factory=list)
    question: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    hard: list[list[Offsets]] = field(default_factory=list)
    soft: list[list[Soft]] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)


def recompute_hard(soft: Sequence[Soft]) -> list[Offsets]:
    """Hard labels from soft labels as the scorer infers them: the spans with prob > 0.5, in
    order of (start, end), a span that starts where the previous one ended merged into it.

    >>> recompute_hard([Soft(0, 3, 0.6), Soft(3, 5, 0.9), Soft(7, 9, 0.2)])
    [(0, 5)]
    """
    out: list[list[int]] = []
    prev_end = -1
    for s in sorted(soft, key=lambda x: (x.start, x.end)):
        if s.prob <= 0.5:
            continue
        if s.start == prev_end and out:
            out[-1][1] = s.end
        else:
            out.append([s.start, s.end])
        prev_end = s.end
    return [(a, b) for a, b in out]


def iou(gold: Sequence[Offsets], predicted: Sequence[Offsets]) -> float:
    """Intersection over union of the character index sets; 1.0 when both are empty.

    >>> iou([(0, 5)], [(3, 8)])  # {0..4} and {3..7}: 2 shared of 8
    0.25
    """
    g = {i for s, e in gold for i in range(s, e)}
    p = {i for s, e in predicted for i in range(s, e)}
    if not g and not p:
        return 1.0
    return len(g & p) / len(g | p)


def soft_vector(soft: Sequence[Soft], length: int) -> list[float]:
    """One value per character: the prob of the last soft label covering it, else 0."""
    vec = [0.0] * length
    for s in soft:
        for i in range(s.start, s.end):
            vec[i] = s.prob
    return vec


def cor(gold: Sequence[Soft], predicted: Sequence[Soft], length: int) -> float:
    """Spearman's ρ of the two per-character vectors, with the scorer's convention for a constant
    vector (1.0 when both are constant, else 0.0)."""
    import warnings

    from scipy.stats import spearmanr

    g, p = soft_vector(gold, length), soft_vector(predicted, length)
    distinct_g, distinct_p = len({round(x, 8) for x in g}), len({round(x, 8) for x in p})
    if distinct_g == 1 or distinct_p == 1:
        return float(distinct_g == distinct_p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(g, p)[0])


def _soft(value: Any, text: str, what: str) -> tuple[list[Soft] | None, str | None]:
    if not isinstance(value, list):
        return None, f"field '{what}' must be a list of {{start, end, prob}}"
    out = []
    for k, item in enumerate(value):
        s = item.get("start") if isinstance(item, dict) else None
        e = item.get("end") if isinstance(item, dict) else None
        p = item.get("prob") if isinstance(item, dict) else None
        if not (type(s) is int and type(e) is int and 0 <= s < e <= len(text)):
            return None, (
                f"field '{what}' item {k} must have integer 'start' < 'end' within the text "
                f"({len(text)} characters), got start={s!r}, end={e!r}"
            )
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            return None, f"field '{what}' item {k} must have a 'prob' from 0 to 1, got {p!r}"
        out.append(Soft(s, e, float(p)))
    return out, None


def _hard(value: Any, text: str) -> tuple[list[Offsets] | None, str | None]:
    if not isinstance(value, list):
        return None, "field 'hard_labels' must be a list of [start, end]"
    out = []
    for k, item in enumerate(value):
        ok = isinstance(item, (list, tuple)) and len(item) == 2
        s, e = (item[0], item[1]) if ok else (None, None)
        if not (type(s) is int and type(e) is int and 0 <= s < e <= len(text)):
            return None, (
                f"field 'hard_labels' item {k} must be [start, end], integers with start < end within "
                f"the text ({len(text)} characters), got {item!r}"
            )
        out.append((s, e))
    return out, None


def _lines(path: Path) -> list[tuple[int, Any, str | None]]:
    from q2_metric.io import read_jsonl

    return [
        (r.line, r.fields, None if r.error is None else r.error.partition(": ")[2]) for r in read_jsonl(path)
    ]


def is_mushroom(columns: Sequence[str]) -> bool:
    """A table with Mu-SHROOM's columns."""
    return all(c in columns for c in ("model_output_text", "soft_labels", "model_input"))


def read_mushroom(path: Path, langs: Sequence[str] = ()) -> MushroomRows:
    """The rows of a Mu-SHROOM file (of the languages `langs`; empty: all); bad rows are kept as
    one sentence each in `bad` and the rest is read on.

    Raises:
        MushroomError: the file cannot be read at all, or an id is given twice.
    """
    try:
        lines = _lines(path)
    except (OSError, UnicodeDecodeError, Q2InputError) as err:
        raise MushroomError(f"{path}: cannot be read ({err}).") from None
    out = MushroomRows()
    first: dict[str, int] = {}
    for n, obj, trouble in lines:
        where = f"{path.name} line {n}"
        if trouble or not isinstance(obj, dict):
            out.bad.append(f"{where}: {trouble or 'is not a JSON object'}.")
            continue
        rid = obj.get("id")
        if rid is None:
            out.bad.append(f"{where}: field 'id' is missing.")
            continue
        if str(rid) in first:
            raise MushroomError(
                f"{path} line {n}: id {rid} is given twice (first on line {first[str(rid)]}); "
                "every output needs its own id."
            )
        first[str(rid)] = n
        where = f"{where} (id {rid})"
        lang = obj.get("lang")
        lang = lang.strip().lower() if isinstance(lang, str) else lang  # the release writes `EN`, `DE`
        if langs and lang not in {x.lower() for x in langs}:
            continue
        text, question = obj.get("model_output_text"), obj.get("model_input")
        problem = None
        soft: list[Soft] | None = None
        hard: list[Offsets] | None = None
        if not isinstance(lang, str) or not lang.strip():
            problem = "field 'lang' is empty or not text"
        elif not isinstance(text, str) or not text.strip():
            problem = "field 'model_output_text' is empty or not text"
        elif not isinstance(question, str) or not question.strip():
            problem = "field 'model_input' is empty or not text"
        else:
            soft, problem = _soft(obj.get("soft_labels"), text, "soft_labels")
            if problem is None and soft is not None:
                if "hard_labels" in obj:
                    hard, problem = _hard(obj.get("hard_labels"), text)
                else:
                    hard = recompute_hard(soft)
        if problem is not None or soft is None or hard is None:
            out.bad.append(f"{where}: {problem}.")
            continue
        assert isinstance(text, str) and isinstance(question, str) and isinstance(lang, str)
        out.ids.append(str(rid))
        out.lang.append(lang)
        out.question.append(question)
        out.text.append(text)
        out.hard.append(hard)
        out.soft.append(soft)
        out.where.append(f"{path}/{where}")
    return out


def read_predictions(
    spec: str, ids: Sequence[str], texts: Sequence[str]
) -> tuple[str, list[SoftSpans | None]]:
    """`NAME=FILE` in the task's submission format (`id`, `soft_labels`, optional `hard_labels`),
    or a spans file (`id`, `spans` [{start, end}]: hard labels and soft labels of prob 1). Returns
    (name, predictions in the order of `ids`, None for an output the file does not hold).

    Raises:
        MushroomError: a bad line (one sentence naming its line and field), an id of no kept row.
    """
    name, sep, where = spec.partition("=")
    if not (name and sep and where):
        raise MushroomError(f"--ragtruth-spans '{spec}': expected NAME=FILE.")
    path = Path(where)
    if not path.is_file():
        raise MushroomError(f"--ragtruth-spans {spec}: no such file.")
    try:
        lines = _lines(path)
    except (OSError, UnicodeDecodeError, Q2InputError) as err:
        raise MushroomError(f"--ragtruth-spans {spec}: cannot be read ({err}).") from None
    position = {rid: i for i, rid in enumerate(ids)}
    out: list[SoftSpans | None] = [None] * len(ids)
    seen: dict[str, int] = {}
    for n, obj, trouble in lines:
        at = f"--ragtruth-spans {name}: {path} line {n}"
        if trouble or not isinstance(obj, dict):
            raise MushroomError(f"{at}: {trouble or 'is not a JSON object'}.")
        rid = None if obj.get("id") is None else str(obj.get("id"))
        if rid is None or rid not in position:
            raise MushroomError(f"{at}: field 'id' {rid!r} is no kept row of the Mu-SHROOM set.")
        if rid in seen:
            raise MushroomError(
                f"{at}: id {rid} is given twice (first on line {seen[rid]}); give each output one line."
            )
        seen[rid] = n
        text = texts[position[rid]]
        if "soft_labels" in obj:
            soft, problem = _soft(obj.get("soft_labels"), text, "soft_labels")
            hard: list[Offsets] | None = None
            if problem is None and soft is not None:
                if "hard_labels" in obj:
                    hard, problem = _hard(obj.get("hard_labels"), text)
                else:
                    hard = recompute_hard(soft)
        else:
            raw = obj.get("spans")
            as_soft = (
                [{**s, "prob": 1.0} if isinstance(s, dict) else s for s in raw]
                if isinstance(raw, list)
                else raw
            )
            soft, problem = _soft(as_soft, text, "spans")
            hard = None if soft is None else [(s.start, s.end) for s in soft]
        if problem is not None or soft is None or hard is None:
            raise MushroomError(f"{at} (id {rid}): {problem}.")
        out[position[rid]] = SoftSpans(hard, soft)
    return name, out


def as_soft(predicted: Sequence[Offsets]) -> SoftSpans:
    """Spans without probabilities (Q²'s unsupported spans) as hard labels and soft labels of prob 1."""
    if isinstance(predicted, SoftSpans):
        return predicted
    return SoftSpans(list(predicted), [Soft(s, e, 1.0) for s, e in predicted])


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mushroom_figures(
    ids: Sequence[str],
    lang: Sequence[str],
    texts: Sequence[str],
    hard: Sequence[Sequence[Offsets]],
    soft: Sequence[Sequence[Soft]],
    predictions: Mapping[str, Sequence[Sequence[Offsets] | None]],
) -> dict[str, Any]:
    """Per language, each prediction's mean IoU and mean Cor over the outputs it predicts (the
    others listed by id), beside two reference predictions: `mark nothing` and `mark everything`
    (one span over the whole output, prob 1)."""
    everything = [SoftSpans([(0, len(t))], [Soft(0, len(t), 1.0)]) for t in texts]
    nothing = [SoftSpans([], []) for _ in texts]
    named: dict[str, Sequence[Sequence[Offsets] | None]] = {
        **predictions,
        "mark nothing": nothing,
        "mark everything": everything,
    }
    out: dict[str, Any] = {}
    for language in dict.fromkeys(lang):
        rows = [i for i, x in enumerate(lang) if x == language]
        per: dict[str, Any] = {}
        for m, predicted in named.items():
            kept = [i for i in rows if predicted[i] is not None]
            ious, cors = [], []
            for i in kept:
                p = as_soft(predicted[i] or [])
                ious.append(iou(hard[i], p))
                cors.append(cor(soft[i], p.soft, len(texts[i])))
            per[m] = {
                "items": len(kept),
                "unscored": [ids[i] for i in rows if predicted[i] is None],
                "iou": _mean(ious),
                "cor": _mean(cors),
            }
        out[language] = {"items": len(rows), "metrics": per}
    return out
