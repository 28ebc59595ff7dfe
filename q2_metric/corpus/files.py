"""`q2 score`: score a file in chunks, with an on-disk cache that makes runs resumable."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from q2_metric.corpus.cache import ScoreCache, cache_key, model_names, pair_key
from q2_metric.display import decide, decision_counts
from q2_metric.errors import CacheWriteError, Q2InputError
from q2_metric.frontend import Item, guard, score_items, system_figures
from q2_metric.io import (
    Row,
    check_table_suffix,
    commit_outputs,
    pause_point,
    read_rows,
    recover_outputs,
    table_writer,
)
from q2_metric.io.commit import Writer
from q2_metric.io.histories import read_histories
from q2_metric.options.operating_point import OperatingPoint
from q2_metric.progress import (
    ProgressCallback,
    ResponseCounter,
    StageProfile,
    StageTotals,
    merge_profiles,
    plural,
)
from q2_metric.results import ResponseScore, SystemScore
from q2_metric.scorer import Q2Scorer
from q2_metric.signature import Signature

STEP_COLUMNS = [
    "row",
    "line",
    "occurrence",
    "candidate",
    "question",
    "rank",
    "status",
    "response_answer",
    "knowledge_answer",
    "f1",
    "nli_label",
    "score",
    "score_no_nli",
]


def as_score(result: ResponseScore | dict) -> ResponseScore:
    """A response's result as the object: a cached entry or a worker's dict read back
    (`ResponseScore.from_dict`), so every figure comes from the objects' own rules."""
    return result if isinstance(result, ResponseScore) else ResponseScore.from_dict(result)


@dataclass
class ScoreReport:
    system: SystemScore
    num_rows: int
    num_bad: int
    num_cached: int
    num_scored_now: int
    bad_rows: list[str]
    signature: str
    # per engine stage, summed over the chunks scored now (`q2_metric.progress`); not in the summary
    profile: list[StageProfile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. the cache could not be written
    decisions: dict | None = None  # with a threshold: `decision.decision_counts`
    responses: list[ResponseScore] = field(default_factory=list)  # the good rows' results, in order
    workers: int | None = None  # with --ray: how many Ray workers scored pairs in this run
    operating_point: dict | None = None  # with an operating point: `OperatingPoint.summary`


@dataclass
class ScoreRun:
    """What a scoring run knows before any model work: the checked rows, their pair keys and texts,
    the signature and the cache key."""

    rows: list[Row]
    keys: dict[int, str]  # row number -> pair key, good rows only
    texts: dict[str, tuple[str, str]]  # pair key -> (response, knowledge)
    signature: str
    fingerprint: str
    histories: dict[str, list[str]] = field(default_factory=dict)  # pair key -> turns (--history-col)

    @property
    def good(self) -> list[Row]:
        return [r for r in self.rows if r.error is None]


SCORE_COLUMNS = ("q2", "q2_no_nli", "fallback", "num_questions", "num_no_answer", "reason", "error")


def prepare_run(
    scorer: Q2Scorer,
    input_path: str | Path,
    outputs: dict[str, str | Path | None],
    *,
    response_col: str = "response",
    knowledge_col: str = "knowledge",
    encoding: str = "utf-8",
    allow_empty: bool = False,
    multiline: bool = True,
    prefix: str = "",
    cache_dir: str | Path | None = None,
    history_col: str | None = None,
) -> ScoreRun:
    """Every check that can fail before model work: output paths (`outputs`: flag -> path) and the
    cache folder against the input and the model folders (`paths.check_run`), the input (encoding, columns, at least
    one row, no column the output writes), every model and the device."""
    guard(
        {"input": input_path},
        {**{flag: p for flag, p in outputs.items() if p}, "--cache-dir": cache_dir},
        config=scorer.config,
        folders=["--cache-dir"],
    )
    for flag in ("-o/--output", "--steps"):
        named = outputs.get(flag)
        if named:
            check_table_suffix(named, flag)
    spans = outputs.get("--spans")
    if spans:
        check_spans_suffix(spans)
    recover_outputs([p for p in outputs.values() if p])
    rows = read_rows(
        input_path,
        response_col,
        knowledge_col,
        encoding=encoding,
        allow_empty=allow_empty,
        multiline=multiline,
    )
    check_score_columns(input_path, rows, prefix)
    pause_point("models-check")  # tests: a signal while the models are being checked
    turns = read_histories(input_path, rows, history_col) if history_col else {}
    names = model_names(scorer)
    good = [r for r in rows if r.error is None]
    keys = {
        r.number: pair_key(
            r.fields[response_col], r.fields[knowledge_col], *([turns[r.number]] if history_col else [])
        )
        for r in good
    }
    texts = {keys[r.number]: (r.fields[response_col], r.fields[knowledge_col]) for r in good}
    histories = {keys[r.number]: turns[r.number] for r in good} if history_col else {}
    return ScoreRun(
        rows, keys, texts, str(Signature.create(scorer.config, names)), cache_key(scorer, names), histories
    )


def check_spans_suffix(path: str | Path, flag: str = "--spans") -> None:
    """The spans file is JSON Lines (a list of spans per row does not fit a CSV cell)."""
    from q2_metric.errors import OutputPathError

    if Path(path).suffix.lower() != ".jsonl":
        raise OutputPathError(
            f"The output path '{path}' ({flag}) must end in .jsonl: the spans are written "
            "as JSON Lines, one object per row."
        )


def span_record(row: Row, res: ResponseScore | None) -> dict[str, Any]:
    """One line of the spans file: the row (and its `id`, where the input has an `id` column), its
    Q², every span (`results.Span`) and the unsupported ones; a bad row carries its error and no spans."""
    where: dict[str, Any] = {"row": row.number, "line": row.line}
    if isinstance(row.fields.get("id"), (str, int)):
        where["id"] = row.fields["id"]
    if res is None:
        return {
            **where,
            "q2": None,
            "error": row.error,
            "spans": [],
            "unsupported_spans": [],
        }
    return {
        **where,
        "q2": _num(res.q2),
        "q2_no_nli": _num(res.q2_no_nli),
        "reason": res.reason or "",
        **res.span_details(),
    }


def check_score_columns(input_path: str | Path, rows: list[Row], prefix: str) -> None:
    """Refuse an input that already has a column the output writes (it would be overwritten)."""
    from q2_metric.errors import Q2InputError

    present = {k for row in rows for k in row.fields}
    clash = [f"{prefix}{c}" for c in SCORE_COLUMNS if f"{prefix}{c}" in present]
    if clash:
        raise Q2InputError(
            f"The input '{input_path}' already has the column '{clash[0]}', which the output "
            f"writes; pass --prefix (e.g. --prefix {prefix}new_) so that the scores go to new "
            "columns, or rename that column, so that no column of yours is overwritten."
        )


def score_file(
    scorer: Q2Scorer,
    input_path: str | Path,
    output_path: str | Path,
    *,
    response_col: str = "response",
    knowledge_col: str = "knowledge",
    prefix: str = "",
    steps_path: str | Path | None = None,
    summary_path: str | Path | None = None,
    cache_dir: str | Path | None = ".q2_cache",
    chunk_size: int = 64,
    progress: bool = False,
    encoding: str = "utf-8",
    allow_empty: bool = False,
    multiline: bool = True,
    threshold: float | None = None,
    history_col: str | None = None,
    spans_path: str | Path | None = None,
    operating_point: OperatingPoint | None = None,
) -> ScoreReport:
    """Score every good row of `input_path`; write scores, steps, spans and summary all-or-nothing at the end.

    Before any model work: the output paths, the input (encoding, columns, at least one row) and
    every model and the device are checked; a failure raises a one-sentence error.
    """
    run = prepare_run(
        scorer,
        input_path,
        {"-o/--output": output_path, "--steps": steps_path, "--spans": spans_path, "--summary": summary_path},
        response_col=response_col,
        knowledge_col=knowledge_col,
        encoding=encoding,
        allow_empty=allow_empty,
        multiline=multiline,
        prefix=prefix,
        cache_dir=cache_dir,
        history_col=history_col,
    )
    threshold = operating_point.threshold if operating_point is not None else threshold
    check_decision_column(run, prefix, threshold)
    cache = ScoreCache(cache_dir, run.fingerprint) if cache_dir else None
    warnings: list[str] = []
    if cache and cache.damaged:
        was = "was" if cache.damaged == 1 else "were"
        warnings.append(
            f"{plural(cache.damaged, 'damaged line')} of the cache file '{cache.path}' {was} dropped; "
            + ("its row is" if cache.damaged == 1 else "their rows are")
            + " scored again"
        )
        print(f"q2: warning: {warnings[-1]}.", file=sys.stderr)
    # an entry cached before spans existed has none: scored again
    results: dict[str, ResponseScore] = (
        {k: ResponseScore.from_dict(v) for k, v in cache.entries.items() if "spans" in v} if cache else {}
    )
    todo = list(dict.fromkeys(k for k in run.keys.values() if k not in results))
    cached = sum(1 for k in run.keys.values() if k in results)

    # one warning naming the file's rows, not each chunk's items (the English set only)
    foreign = not_english_warning(run) if scorer.config.language == "en" else None
    if foreign:
        warnings.append(foreign)
        print(f"q2: warning: {foreign}", file=sys.stderr)
    chunks = chunked(todo, chunk_size)
    bar: ResponseCounter | None = None
    stages: ProgressCallback | StageTotals | None = None
    if progress and chunks:
        from q2_metric.progress import on_terminal, stage_progress

        bar = ResponseCounter(len(todo), "Q² responses", "resp", position=0)
        # a bar per stage on a terminal; elsewhere one line per stage for the whole run, at its end
        stages = stage_progress("Q²", leave=False, position=1) if on_terminal() else StageTotals("Q²")
    profiles = []
    first_line: dict[str, int] = {}  # pair key -> the line of its first row (the item's key)
    for row in run.good:
        first_line.setdefault(run.keys[row.number], row.line)
    for n, chunk in enumerate(chunks, 1):
        # each chunk through the contract: one engine call, every pair reported by its first line
        outcome = quiet_not_english(
            score_items,
            scorer,
            [
                Item(
                    f"line {first_line[k]}",
                    *run.texts[k],
                    history=run.histories[k] if history_col else None,
                )
                for k in chunk
            ],
            progress=stages,
            emit=False,  # q2 score emits each row's event, cached rows included (cli/score.py)
        )
        profiles.append(outcome.profile)
        now = {k: item.score for k, item in zip(chunk, outcome.items) if item.score is not None}
        for k, item in zip(chunk, outcome.items):
            if item.error is not None:  # a bad pair: its rows are bad rows, the others scored
                for row in run.good:
                    if run.keys[row.number] == k:
                        row.error = item.error
        results.update(now)  # kept whatever happens to the cache
        if cache:
            try:
                cache.add([(k, res.to_dict()) for k, res in now.items()])
            except CacheWriteError as err:
                cache = None
                warnings.append(
                    f"{err.strerror}: this run goes on without the cache (its scores go to the "
                    "outputs but will not be reused by a later run)"
                )
                print(f"q2: warning: {warnings[-1]}.", file=sys.stderr)
        if bar:
            bar.update(len(chunk))
        pause_point(f"chunk-{n}")
    if bar:
        bar.close()
    if isinstance(stages, StageTotals):  # its one line per stage
        stages.close()
    report = write_results(
        run,
        results,
        output_path,
        prefix=prefix,
        steps_path=steps_path,
        summary_path=summary_path,
        num_cached=cached,
        num_scored_now=len(todo),
        threshold=threshold,
        spans_path=spans_path,
        operating_point=operating_point,
    )
    report.profile = merge_profiles(profiles)
    report.warnings = warnings
    return report


def not_english_warning(run: ScoreRun) -> str | None:
    """The not-English warning of a file (`validation.not_english_fields`), counting its rows and
    naming the first by its row and line; None when every text is plainly English or Latin-script."""
    from q2_metric.validation import not_english_fields, not_english_message

    good = run.good
    texts = [run.texts[run.keys[r.number]] for r in good]
    found = not_english_fields([t[0] for t in texts], [t[1] for t in texts])
    if not found:
        return None
    i, field_name = found[0]
    first = f"row {good[i].number} (line {good[i].line}), its {field_name}"
    return not_english_message(len(found), len(run.rows), "rows", first)


def quiet_not_english(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`call` without the engine's not-English warning, which counts a chunk's items: the file's
    own (`not_english_warning`) has been given."""
    import warnings as python_warnings

    from q2_metric.errors import NotEnglishWarning

    with python_warnings.catch_warnings():
        python_warnings.simplefilter("ignore", NotEnglishWarning)
        return call(*args, **kwargs)


def check_decision_column(run: ScoreRun, prefix: str, threshold: float | None) -> None:
    """With a threshold, the input must not have the decision column already (it is never overwritten)."""
    column = f"{prefix}decision"
    if threshold is not None and any(column in r.fields for r in run.rows):
        raise Q2InputError(
            f"The input already has a column '{column}', which --threshold would overwrite; "
            "rename it or pass --prefix."
        )


def chunked(keys: list[str], chunk_size: int) -> list[list[str]]:
    """Engine calls (and cache writes) of 1, 2, 4, ... responses, then `chunk_size` each: the first
    results reach the cache within a minute or so even with the paper's models on a CPU (about
    20 s a response there), so a run killed early keeps something, while later calls batch fully.

    >>> [len(c) for c in chunked(list("abcdefghijklmnopqrst"), 8)]
    [1, 2, 4, 8, 5]
    """
    chunks, start, size = [], 0, 1
    while start < len(keys):
        size = min(size, chunk_size)
        chunks.append(keys[start : start + size])
        start += size
        size *= 2
    return chunks


def write_results(
    run: ScoreRun,
    results: Mapping[str, ResponseScore | dict],
    output_path: str | Path,
    *,
    prefix: str = "",
    steps_path: str | Path | None = None,
    summary_path: str | Path | None = None,
    num_cached: int = 0,
    num_scored_now: int = 0,
    signature: str | None = None,
    threshold: float | None = None,
    spans_path: str | Path | None = None,
    operating_point: OperatingPoint | None = None,
) -> ScoreReport:
    """Write every row with its scores (`results`: pair key -> `ResponseScore`, or the dict a
    cache or a worker gave, read back by `as_score`), the steps file, the
    spans file (JSONL, `span_record` per row) and the summary as one set; return the report (system
    score over the good rows). With `threshold`, a
    `decision` column (consistent iff Q² > threshold, the released code's rule), the counts, and the threshold in the signature.
    With `operating_point`, its threshold decides, and the signature and the summary name it."""
    if operating_point is not None:
        threshold = operating_point.threshold
    out_records, step_records, span_records = [], [], []
    per_row = []
    for row in run.rows:
        record = {**row.fields, **row.given}  # the input's columns as given (a list stays a list)
        if row.error:
            record.update({f"{prefix}q2": None, f"{prefix}q2_no_nli": None, f"{prefix}error": row.error})
            span_records.append(span_record(row, None))
        else:
            res = as_score(results[run.keys[row.number]])
            per_row.append(res)
            valid = res.valid_questions
            record.update(
                {
                    f"{prefix}q2": _num(res.q2),
                    f"{prefix}q2_no_nli": _num(res.q2_no_nli),
                    f"{prefix}fallback": res.fallback,
                    f"{prefix}num_questions": len(valid),
                    f"{prefix}num_no_answer": sum(q.unanswered for q in valid),
                    f"{prefix}reason": res.reason or "",
                    f"{prefix}error": "",
                }
            )
            if threshold is not None:
                record[f"{prefix}decision"] = decide(res.q2, threshold) or ""
            span_records.append(span_record(row, res))
            for q in res.questions:
                trace = asdict(q)
                step_records.append(
                    {"row": row.number, "line": row.line, **{c: trace.get(c) for c in STEP_COLUMNS[2:]}}
                )
        out_records.append(record)

    system = system_figures(per_row)  # the engine's own rule (`system_of`), never re-derived here
    report = ScoreReport(
        system=system,
        num_rows=len(run.rows),
        num_bad=len(run.rows) - len(run.good),
        num_cached=num_cached,
        num_scored_now=num_scored_now,
        bad_rows=[r.error for r in run.rows if r.error],
        signature=signature or run.signature,
        responses=per_row,
    )
    if threshold is not None:
        report.signature = str(
            Signature.parse(report.signature).with_threshold(threshold).with_operating_point(operating_point)
        )
        report.operating_point = operating_point.summary() if operating_point is not None else None
        report.decisions = decision_counts(
            [r.get(f"{prefix}decision") or None for r in out_records], threshold
        )

    score_columns = [f"{prefix}{c}" for c in SCORE_COLUMNS]
    score_columns += [f"{prefix}decision"] if threshold is not None else []
    columns = list(dict.fromkeys([c for rec in out_records for c in rec] + score_columns))
    files: list[tuple[str | Path, Writer]] = [(output_path, table_writer(output_path, out_records, columns))]
    if steps_path:
        files.append((steps_path, table_writer(steps_path, step_records, STEP_COLUMNS)))
    if spans_path:
        from q2_metric.options import json_safe

        lines = "".join(
            json.dumps(json_safe(r), ensure_ascii=False, allow_nan=False) + "\n" for r in span_records
        )
        files.append((spans_path, lambda f: f.write(lines)))
    if summary_path:
        body = json.dumps(summary_dict(report), indent=2, allow_nan=False) + "\n"
        files.append((summary_path, lambda f: f.write(body)))
    commit_outputs(files)
    return report


def _num(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def summary_dict(report: ScoreReport) -> dict[str, Any]:
    """The system figures, signature (full and short) and row counts (nothing that differs between
    equal runs), as strict JSON: an undefined figure (e.g. the no-answer share without a valid
    question) is None, never NaN."""
    from q2_metric.display import long_text_counts
    from q2_metric.options import json_safe

    return json_safe(
        {
            **report.system.to_dict(),
            "signature": report.signature,
            "signature_short": Signature.parse(report.signature).short(),
            "num_rows": report.num_rows,
            "num_bad_rows": report.num_bad,
            **long_text_counts(report.responses),  # responses with long texts cut (or in windows)
            **(report.decisions or {}),
            **({"operating_point": report.operating_point} if report.operating_point else {}),
        }
    )
