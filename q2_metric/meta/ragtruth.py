"""RAGTruth as released (Niu et al., ACL 2024): its folder's `response.jsonl` and
`source_info.jsonl`, read for `q2 meta-eval --dataset NAME=DIR`, and its figures.

**Knowledge per task type** (`source_info.jsonl`'s `task_type` and `source_info`):
- `QA`: the question, a line break, then the passages (`source_info` = {question, passages}). The
  generator was asked the question about the passages; a response restates the question's terms,
  which only the question holds.
- `Summary`: the source text (`source_info` is the news text itself).
- `Data2txt`: the structured source (a JSON object of a business and its reviews) as text, one
  `key: value` line per scalar field, nested fields named by their path (`attributes.WiFi: free`,
  `review_info.1.review_text: ...`): the facts as the generator was given them, without braces and
  quotes, which a SQuAD-trained QA model reads as part of its answers. A null or empty field is
  kept as the source shows it (`attributes.WiFi: null`, `attributes.Parking: ""`): RAGTruth's
  `due_to_null` labels mark claims about exactly those fields.
`grounding="prompt"` takes RAGTruth's own `prompt` for every task instead (the instruction text
the generator saw, with the source inside it): what LettuceDetect's preprocessing uses as context.

**Selection**: by default the rows with `split == "test"` and `quality == "good"`, the rows
RAGTruth's baseline and LettuceDetect's `scripts/evaluate.py` report on; the rows left out are
counted by value. Every kept row is read or reported as bad, by its `id`, in one sentence naming
the field.

**Figures** (`ragtruth_figures`), each named by its definition:
- response level (RAGTruth's baseline rule): a response is hallucinated iff it has at least one
  labelled span; a metric flags it when its score is <= the threshold (`display.decide`'s rule:
  inconsistent) or, for span predictions, when it predicts a span. Precision, recall, F1 of the
  hallucinated class; nothing to divide by gives None.
- character level, `ragtruth`: per response the set of characters inside any gold span and the set
  inside any predicted span, summed over responses: |P ∩ G| / |P|, |P ∩ G| / |G| (the
  `meta.spans` character level; None where nothing to divide by).
- character level, `lettucedetect`: as LettuceDetect's `evaluate_detector_char_level`
  (lettucedetect/models/evaluator.py): the overlaps of every (predicted, gold) pair summed, over
  the summed lengths of the predicted and of the gold spans (so a character inside two overlapping
  gold spans counts twice); nothing to divide by gives 0. Its `span_f1` is this character F1.
Responses a metric did not score are left out of its figures and listed by id.

**The machine-translated RAGTruth** (`read_translated`): LettuceDetect's release, one
`ragtruth_data_{lang}.json` per language, read into the same rows with each row's language; its
figures are RAGTruth's, and per language those of `meta.multilingual`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.meta.spans import Offsets, prf

FILES = ("response.jsonl", "source_info.jsonl")
TASKS = ("QA", "Summary", "Data2txt")
GROUNDINGS = ("source", "prompt")
ALL = "all"  # a selection value that keeps every row


@dataclass(frozen=True)
class Selection:
    """Which rows of a RAGTruth folder are read, and which text grounds them; for the multilingual
    sets, the languages kept (`langs`, empty: all), SEAHORSE's split file and its articles file."""

    split: str = "test"
    quality: str = "good"
    grounding: str = "source"
    langs: tuple[str, ...] = ()
    seahorse_split: str = "test"
    seahorse_articles: str | None = None


class RagTruthError(Q2InputError):
    """A RAGTruth folder or span-prediction file cannot be used; one sentence naming the file."""


def is_ragtruth(path: Path) -> bool:
    """A folder holding RAGTruth's two files."""
    return path.is_dir() and all((path / f).is_file() for f in FILES)


@dataclass
class RagTruthRows:
    """The kept rows of a RAGTruth folder (parallel lists) and what was left out."""

    ids: list[str] = field(default_factory=list)
    response: list[str] = field(default_factory=list)
    knowledge: list[str] = field(default_factory=list)
    task: list[str] = field(default_factory=list)
    gold: list[list[Offsets]] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    selection: dict[str, Any] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)  # one sentence per bad row, naming its id
    lang: list[str] = field(default_factory=list)  # a translated set's: each row's language


def render_structured(value: Any, path: str = "") -> list[str]:
    """`key: value` lines of a JSON value, nested keys joined by '.', list items numbered from 1. A
    null, an empty or blank string and an empty list or object are kept as JSON writes them
    (`WiFi: null`, `Parking: ""`): RAGTruth labels claims about exactly those fields (`due_to_null`),
    and a field the knowledge left out would read as never given.

    >>> render_structured({"name": "Cafe", "attributes": {"WiFi": "free"}, "review_info": [{"stars": 4}]})
    ['name: Cafe', 'attributes.WiFi: free', 'review_info.1.stars: 4']
    >>> render_structured({"name": "Cafe", "attributes": {"WiFi": None, "Parking": "", "Tags": []}})
    ['name: Cafe', 'attributes.WiFi: null', 'attributes.Parking: ""', 'attributes.Tags: []']
    """
    if isinstance(value, (dict, list)) and value:
        items = value.items() if isinstance(value, dict) else enumerate(value, 1)
        return [line for k, v in items for line in render_structured(v, f"{path}.{k}" if path else str(k))]
    if value is None or isinstance(value, (dict, list)) or (isinstance(value, str) and not value.strip()):
        return [f"{path}: {json.dumps(value)}"] if path else []
    return [f"{path}: {value}" if path else str(value)]


def _too_deep(value: Any) -> bool:
    """Whether a JSON value nests lists or objects more than the reader's `MAX_JSON_DEPTH` deep."""
    from q2_metric.io.jsonl import MAX_JSON_DEPTH

    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                return True
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def knowledge_of(task: str, source_info: Any, prompt: Any, grounding: str = "source") -> str | None:
    """The knowledge text of a source (see the module's docstring); None where the source has none
    of the shape its task type needs."""
    if grounding == "prompt":
        return prompt if isinstance(prompt, str) and prompt.strip() else None
    if task == "QA":
        if not isinstance(source_info, dict):
            return None
        question, passages = source_info.get("question"), source_info.get("passages")
        if not isinstance(passages, str) or not passages.strip():
            return None
        return (
            f"{question.strip()}\n{passages}" if isinstance(question, str) and question.strip() else passages
        )
    if task == "Summary":
        return source_info if isinstance(source_info, str) and source_info.strip() else None
    if task == "Data2txt":
        if isinstance(source_info, str):  # some copies store it as JSON text
            try:
                source_info = json.loads(source_info)
            except RecursionError:
                return None
            except ValueError:
                return source_info if source_info.strip() else None
        if source_info is None or _too_deep(source_info):
            return None
        lines = render_structured(source_info)
        return "\n".join(lines) if lines else None
    return None


def _jsonl(path: Path) -> list[tuple[int, Any, str | None]]:
    """(line number, object, error) per non-blank line, through the one reader (`io.read_jsonl`:
    the size limit, lines split at LF and CRLF only, depth, keys given twice)."""
    from q2_metric.io import read_jsonl

    return [
        (row.line, row.fields, None if row.error is None else row.error.partition(": ")[2])
        for row in read_jsonl(path)
    ]


def missing_file(path: Path) -> str | None:
    """For a folder holding one of RAGTruth's two files only, the other one's name; else None."""
    if not path.is_dir():
        return None
    present = [f for f in FILES if (path / f).is_file()]
    return next(f for f in FILES if f not in present) if len(present) == 1 else None


def _gold(labels: Any, response: str) -> tuple[list[Offsets] | None, str | None]:
    if labels is None:
        return [], None
    if not isinstance(labels, list):
        return None, f"field 'labels' must be a list, got {type(labels).__name__}"
    out = []
    for k, label in enumerate(labels):
        s = label.get("start") if isinstance(label, dict) else None
        e = label.get("end") if isinstance(label, dict) else None
        if not (type(s) is int and type(e) is int and 0 <= s < e <= len(response)):
            return None, (
                f"field 'labels' item {k} must have integer 'start' < 'end' within the response "
                f"({len(response)} characters), got start={s!r}, end={e!r}"
            )
        out.append((s, e))
    return out, None


def read_ragtruth(
    path: Path, *, split: str = "test", quality: str = "good", grounding: str = "source"
) -> RagTruthRows:
    """The rows of RAGTruth's folder with `split` and `quality` (`ALL`: any), each with its
    knowledge; the others counted in `selection`, bad rows in `bad` (never raised: the rest is read).

    Raises:
        RagTruthError: a file cannot be read at all, or `grounding` is unknown.
    """
    if grounding not in GROUNDINGS:
        raise RagTruthError(f"RAGTruth grounding must be one of {', '.join(GROUNDINGS)}; got '{grounding}'.")
    sources: dict[str, dict] = {}
    out = RagTruthRows()
    info_path, resp_path = path / "source_info.jsonl", path / "response.jsonl"
    try:
        info_lines, resp_lines = _jsonl(info_path), _jsonl(resp_path)
    except (OSError, UnicodeDecodeError, Q2InputError) as err:
        raise RagTruthError(f"{path}: cannot be read ({err}).") from None
    bad_sources: dict[str, str] = {}
    for n, obj, trouble in info_lines:
        where = f"{info_path.name} line {n}"
        if trouble or not isinstance(obj, dict):
            out.bad.append(f"{where}: {trouble or 'is not a JSON object'}.")
            continue
        sid = obj.get("source_id")
        if sid is None:
            out.bad.append(f"{where}: field 'source_id' is missing.")
            continue
        sid = str(sid)
        if sid in sources or sid in bad_sources:
            out.bad.append(f"{where} (source_id {sid}): source_id {sid} is given twice.")
            bad_sources[sid] = "is given twice in source_info.jsonl"
            sources.pop(sid, None)
            continue
        task = obj.get("task_type")
        if task not in TASKS:
            bad_sources[sid] = f"has task_type {task!r}, not one of {', '.join(TASKS)}"
            continue
        know = knowledge_of(task, obj.get("source_info"), obj.get("prompt"), grounding)
        if know is None:
            what = "prompt" if grounding == "prompt" else "source_info"
            bad_sources[sid] = f"({task}) has no usable field '{what}'"
            continue
        sources[sid] = {"task": task, "knowledge": know}
    kept: Counter[str] = Counter()
    left_split: Counter[str] = Counter()
    left_quality: Counter[str] = Counter()
    total = 0
    first_line: dict[str, int] = {}
    for n, obj, trouble in resp_lines:
        total += 1
        where = f"{resp_path.name} line {n}"
        if trouble or not isinstance(obj, dict):
            out.bad.append(f"{where}: {trouble or 'is not a JSON object'}.")
            continue
        rid = obj.get("id")
        if rid is not None:
            if str(rid) in first_line:  # predictions and scores are matched by id: refuse, never guess
                raise RagTruthError(
                    f"{resp_path} line {n}: id {rid} is given twice (first on line "
                    f"{first_line[str(rid)]}); every response needs its own id."
                )
            first_line[str(rid)] = n
        where = f"{where} (id {rid})"
        s, q = obj.get("split"), obj.get("quality")
        if split != ALL and s != split:
            left_split[str(s)] += 1
            continue
        if quality != ALL and q != quality:
            left_quality[str(q)] += 1
            continue
        response = obj.get("response")
        sid = None if obj.get("source_id") is None else str(obj.get("source_id"))
        problem = None
        if rid is None:
            problem = "field 'id' is missing"
        elif not isinstance(response, str) or not response.strip():
            problem = "field 'response' is empty or not text"
        elif sid is None:
            problem = "field 'source_id' is missing"
        elif sid in bad_sources:
            problem = f"its source {sid} {bad_sources[sid]}"
        elif sid not in sources:
            problem = f"field 'source_id' {sid} is not in source_info.jsonl"
        gold: list[Offsets] | None = None
        if problem is None:
            assert isinstance(response, str)
            gold, problem = _gold(obj.get("labels"), response)
        if problem is not None or gold is None:
            out.bad.append(f"{where}: {problem}.")
            continue
        assert isinstance(response, str) and sid is not None
        out.ids.append(str(rid))
        out.response.append(response)
        out.knowledge.append(sources[sid]["knowledge"])
        out.task.append(sources[sid]["task"])
        out.gold.append(gold)
        out.where.append(f"{path}/{where}")
        kept[sources[sid]["task"]] += 1
    out.selection = {
        "split": split,
        "quality": quality,
        "grounding": grounding,
        "rows": total,
        "kept": len(out.ids),
        "bad": len(out.bad),
        "left_out_by_split": dict(sorted(left_split.items())),
        "left_out_by_quality": dict(sorted(left_quality.items())),
        "kept_by_task": {t: kept[t] for t in TASKS if kept[t]},
    }
    return out


# -- translated RAGTruth (LettuceDetect's release) -----------------------------------------------

TRANSLATED = re.compile(r"(?P<set>[A-Za-z0-9]+)_data_(?P<lang>[A-Za-z-]+)\.json\Z")


def translated_files(path: Path) -> dict[str, Path]:
    """Language -> file of a translated RAGTruth: a folder's `ragtruth_data_{lang}.json` files, or
    such a file itself; empty when `path` is neither."""
    if path.is_file():
        m = TRANSLATED.match(path.name)
        return {m["lang"].lower(): path} if m and m["set"] == "ragtruth" else {}
    if path.is_dir():
        found = {}
        for f in sorted(path.glob("ragtruth_data_*.json")):
            m = TRANSLATED.match(f.name)
            if m and f.is_file():
                found[m["lang"].lower()] = f
        return found
    return {}


def read_translated(path: Path, *, split: str = "test", langs: Sequence[str] = ()) -> RagTruthRows:
    """The rows of the machine-translated RAGTruth in its released layout (`translated_files`), of
    the languages `langs` (empty: all) and `split` (`all`: any), as `read_ragtruth`'s rows with
    their language. Each file is LettuceDetect's format (the output of its translation
    script): a JSON array of samples `prompt` (the translated prompt, the source inside it: the
    knowledge, as `grounding="prompt"`), `answer` (the response), `labels` [{start, end, label}]
    (offsets in the answer), `split`, `task_type`, `dataset`, `language`. The release has no ids
    and no quality field: a row's id is `{lang}-{N}`, its place in its file (from 1), and every
    row counts as good.

    Raises:
        RagTruthError: no such file, a file that is not a JSON array, or a language asked for that
            no file holds.
    """
    from q2_metric.io.formats import input_format, read_text

    files = translated_files(path)
    if not files:
        raise RagTruthError(f"{path}: no ragtruth_data_LANG.json file of the translated RAGTruth.")
    missing = [lang for lang in langs if lang not in files]
    if missing:
        raise RagTruthError(
            f"{path}: no file for language(s) {', '.join(missing)} (found: {', '.join(files)})."
        )
    out = RagTruthRows()
    kept: Counter[str] = Counter()
    left_split: Counter[str] = Counter()
    total = 0
    for lang, file in files.items():
        if langs and lang not in langs:
            continue
        try:
            input_format(file)  # the size limit, no pipe, no archive
            samples = json.loads(read_text(file, "utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError, Q2InputError) as err:
            raise RagTruthError(f"{file}: cannot be read as a JSON array ({err}).") from None
        if not isinstance(samples, list):
            raise RagTruthError(f"{file}: is not a JSON array of samples.")
        for n, obj in enumerate(samples, 1):
            total += 1
            rid = f"{lang}-{n}"
            where = f"{file.name} sample {n} (id {rid})"
            if not isinstance(obj, dict):
                out.bad.append(f"{where}: is not a JSON object.")
                continue
            s = obj.get("split")
            if split != ALL and s != split:
                left_split[str(s)] += 1
                continue
            answer, prompt, task = obj.get("answer"), obj.get("prompt"), obj.get("task_type")
            problem = None
            gold: list[Offsets] | None = None
            if not isinstance(answer, str) or not answer.strip():
                problem = "field 'answer' is empty or not text"
            elif not isinstance(prompt, str) or not prompt.strip():
                problem = "field 'prompt' is empty or not text"
            else:
                gold, problem = _gold(obj.get("labels"), answer)
            if problem is not None or gold is None:
                out.bad.append(f"{where}: {problem}.")
                continue
            assert isinstance(answer, str) and isinstance(prompt, str)
            task_name = task if isinstance(task, str) and task else "unknown"
            out.ids.append(rid)
            out.response.append(answer)
            out.knowledge.append(prompt)
            out.task.append(task_name)
            out.gold.append(gold)
            out.where.append(f"{path}/{where}")
            out.lang.append(lang)
            kept[task_name] += 1
    out.selection = {
        "split": split,
        "quality": "not in the release",
        "grounding": "prompt",
        "rows": total,
        "kept": len(out.ids),
        "bad": len(out.bad),
        "left_out_by_split": dict(sorted(left_split.items())),
        "left_out_by_quality": {},
        "kept_by_task": dict(kept),
    }
    return out


# -- figures -------------------------------------------------------------------------------------


def response_level(hallucinated: Sequence[bool], flagged: Sequence[bool]) -> dict[str, Any]:
    """Precision, recall and F1 of flagging the hallucinated responses (None where undefined).

    >>> response_level([True, True, False], [True, False, True])["f1"]
    0.5
    """
    tp = sum(h and f for h, f in zip(hallucinated, flagged))
    return prf(tp, sum(map(bool, flagged)), sum(map(bool, hallucinated)))


def char_ragtruth(
    gold: Sequence[Sequence[Offsets]], predicted: Sequence[Sequence[Offsets]]
) -> dict[str, Any]:
    """Character sets per response (union of gold spans vs union of predicted spans), summed."""
    tp = n_pred = n_gold = 0
    for g, p in zip(gold, predicted):
        gs = {i for s, e in g for i in range(s, e)}
        ps = {i for s, e in p for i in range(s, e)}
        tp, n_pred, n_gold = tp + len(gs & ps), n_pred + len(ps), n_gold + len(gs)
    return prf(tp, n_pred, n_gold)


def char_lettucedetect(
    gold: Sequence[Sequence[Offsets]], predicted: Sequence[Sequence[Offsets]]
) -> dict[str, Any]:
    """LettuceDetect's character figures: pairwise overlaps summed; 0 where nothing to divide by."""
    overlap = n_pred = n_gold = 0
    for g, p in zip(gold, predicted):
        n_pred += sum(e - s for s, e in p)
        n_gold += sum(e - s for s, e in g)
        overlap += sum(max(0, min(pe, ge) - max(ps, gs)) for ps, pe in p for gs, ge in g)
    precision = overlap / n_pred if n_pred else 0.0
    recall = overlap / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "overlap": overlap,
        "predicted": n_pred,
        "gold": n_gold,
    }


def score_figures(
    ids: Sequence[str], gold: Sequence[Sequence[Offsets]], scores: Sequence[float | None], threshold: float
) -> dict[str, Any]:
    """Response level of a score (oriented: higher = more consistent): flagged iff score <= threshold."""
    from q2_metric.display import is_consistent

    kept = [i for i, s in enumerate(scores) if s is not None and s == s]
    figures = response_level(
        [bool(gold[i]) for i in kept], [not is_consistent(scores[i], threshold) for i in kept]
    )
    return {
        "kind": "score",
        "threshold": threshold,
        "responses": len(kept),
        "unscored": [ids[i] for i in range(len(ids)) if i not in set(kept)],
        "response": figures,
    }


def span_figures(
    ids: Sequence[str], gold: Sequence[Sequence[Offsets]], predicted: Sequence[Sequence[Offsets] | None]
) -> dict[str, Any]:
    """Response level (flagged iff a span is predicted) and both character levels of span predictions;
    a response whose prediction is None is unscored. Predicted spans are de-duplicated by offsets."""
    kept = [i for i, p in enumerate(predicted) if p is not None]
    g = [list(gold[i]) for i in kept]
    p = [sorted(set(predicted[i] or [])) for i in kept]
    return {
        "kind": "spans",
        "responses": len(kept),
        "unscored": [ids[i] for i, q in enumerate(predicted) if q is None],
        "response": response_level([bool(x) for x in g], [bool(x) for x in p]),
        "character_ragtruth": char_ragtruth(g, p),
        "character_lettucedetect": char_lettucedetect(g, p),
    }


def read_span_predictions(
    spec: str, ids: Sequence[str], responses: Sequence[str]
) -> tuple[str, list[list[Offsets] | None]]:
    """`NAME=FILE`: a JSON-lines file of a metric's spans, one line per response: `id` (RAGTruth's)
    and `spans` [{start, end}, ...] (offsets in the response). Returns (name, predictions in the
    order of `ids`, None for a response the file does not hold).

    Raises:
        RagTruthError: a bad line (one sentence naming its line and field), an id of no kept row.
    """
    name, sep, where = spec.partition("=")
    if not (name and sep and where):
        raise RagTruthError(f"--ragtruth-spans '{spec}': expected NAME=FILE.")
    path = Path(where)
    if not path.is_file():
        raise RagTruthError(f"--ragtruth-spans {spec}: no such file.")
    try:
        lines = _jsonl(path)
    except (OSError, UnicodeDecodeError, Q2InputError) as err:
        raise RagTruthError(f"--ragtruth-spans {spec}: cannot be read ({err}).") from None
    position = {rid: i for i, rid in enumerate(ids)}
    if len(position) != len(ids):  # `read_ragtruth` refuses them; a caller's own ids may repeat
        raise RagTruthError(f"--ragtruth-spans {spec}: the RAGTruth set gives an id twice.")
    out: list[list[Offsets] | None] = [None] * len(ids)
    seen: dict[str, int] = {}
    for n, obj, trouble in lines:
        where = f"--ragtruth-spans {name}: {path} line {n}"
        if trouble or not isinstance(obj, dict):
            raise RagTruthError(f"{where}: {trouble or 'is not a JSON object'}.")
        rid = None if obj.get("id") is None else str(obj.get("id"))
        if rid not in position:
            raise RagTruthError(f"{where}: field 'id' {rid!r} is no kept row of the RAGTruth set.")
        if rid in seen:
            raise RagTruthError(
                f"{where}: id {rid} is given twice (first on line {seen[rid]}); give each response one line."
            )
        seen[rid] = n
        i = position[rid]
        spans, problem = _gold(obj.get("spans"), responses[i])
        if spans is None:
            raise RagTruthError(f"{where} (id {rid}): {(problem or '').replace('labels', 'spans')}.")
        out[i] = spans
    return name, out


def ragtruth_figures(
    ids: Sequence[str],
    gold: Sequence[Sequence[Offsets]],
    scores: Mapping[str, Sequence[float | None]],
    spans: Mapping[str, Sequence[Sequence[Offsets] | None]],
    threshold: float,
) -> dict[str, Any]:
    """Every metric's figures: by threshold for each score, by span for each span prediction
    (named `NAME spans`)."""
    out: dict[str, Any] = {}
    for m, values in scores.items():
        out[m] = score_figures(ids, gold, values, threshold)
    for m, predicted in spans.items():
        out[f"{m} spans"] = span_figures(ids, gold, predicted)
    return out


def gold_summary(gold: Sequence[Sequence[Offsets]]) -> dict[str, int]:
    """How many responses are hallucinated and how many labelled spans they have."""
    return {"hallucinated": sum(bool(g) for g in gold), "spans": sum(len(g) for g in gold)}
