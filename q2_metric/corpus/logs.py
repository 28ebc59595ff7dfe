"""`q2 rescore`: Q² of the replies in a saved evaluation log, the log left as it is.

Two kinds of log are read directly:
- lm-evaluation-harness's `--log_samples` file (`samples_<task>_<date>.jsonl`, one sample per line:
  `doc_id`, `doc`, `resps`, `filtered_resps`, `filter`, ...), read by the one table reader
  (`io.read_table`); default fields: the reply `filtered_resps.0`, the knowledge `doc.knowledge`;
- an Inspect AI log (`.eval`, or a `.json` log), read by Inspect's own `read_eval_log`; default
  fields: the reply `output.completion`, the knowledge `metadata.knowledge`, else the sample's
  target (a list target joined by spaces), as the package's Inspect scorer takes it.

A field is a dotted path into the sample (`doc.passage`, `filtered_resps.0`, `metadata.context`);
other fields are named with `--response-field` / `--knowledge-field`. Replies are scored as they
are in the log (not stripped), so span offsets index the log's own text.

Every sample is accounted for, in log order: scored, empty (no visible text in the reply or the
knowledge) or bad (its field missing or not text: one sentence naming the sample and the field).
The samples go through the front-end contract (`frontend.score_items`: one engine call per
`chunk_size` samples); the outputs are new files, never the log (`frontend.guard`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q2_metric.errors import Q2InputError
from q2_metric.frontend import Item, ItemResult, Outcome, score_items
from q2_metric.scorer import Q2Scorer

KINDS = ("lm-eval", "inspect")
DEFAULT_FIELDS = {
    "lm-eval": ("filtered_resps.0", "doc.knowledge"),
    "inspect": ("output.completion", "metadata.knowledge"),
}
_MISSING = object()


def log_kind(path: str | Path) -> str:
    """`inspect` for a `.eval` file or a JSON log (an object with `eval` and `samples`), `lm-eval`
    for a JSON-lines samples file; anything else is refused in one sentence."""
    path = Path(path)
    if not path.is_file():
        raise Q2InputError(f"The log '{path}' does not exist or is not a file; check the path.")
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix == ".jsonl":
        return "lm-eval"
    if suffix == ".json":  # a samples file has one object per line; an Inspect JSON log is one object
        with open(path, "rb") as f:
            first = next((line for line in f if line.strip()), b"")  # blank lines before it: none
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        return "lm-eval" if isinstance(head, dict) and "doc_id" in head else "inspect"
    raise Q2InputError(
        f"The log '{path}' is neither an lm-eval samples file (.jsonl, from --log_samples) nor an "
        "Inspect log (.eval or .json); pass one of those."
    )


# An `.eval` member unpacking to more than this many times its packed size is no log Inspect
# writes (its JSON packs about 5-20 to 1) but a decompression bomb; deflate's own limit is ~1032:1.
MAX_PACKING_RATIO = 200


def check_eval_archive(path: Path) -> None:
    """Refuse, before Inspect unpacks it, an `.eval` (a ZIP) whose members would unpack to more
    than the input limit (`Q2_MAX_INPUT_BYTES`) or a member packed more than `MAX_PACKING_RATIO`
    to 1 (a decompression bomb): Python's zipfile stops a member at its declared size, so the sizes
    checked here bound what is read."""
    import zipfile

    from q2_metric.io.formats import max_input_bytes

    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile):
        return  # not a ZIP: Inspect's reader says what it is
    total = sum(m.file_size for m in members)
    if total > max_input_bytes():
        raise Q2InputError(
            f"The Inspect log '{path}' unpacks to {total:,} bytes, above the limit of "
            f"{max_input_bytes():,} bytes; raise the limit with Q2_MAX_INPUT_BYTES if the memory is there."
        )
    for m in members:
        if m.file_size > 1 << 20 and m.file_size > MAX_PACKING_RATIO * max(m.compress_size, 1):
            raise Q2InputError(
                f"The Inspect log '{path}' holds a member '{m.filename}' that unpacks to {m.file_size:,} "
                f"bytes from {m.compress_size:,} (over {MAX_PACKING_RATIO} to 1: a decompression bomb, "
                "not a log Inspect writes); it was not unpacked."
            )


def field_value(sample: Any, field: str) -> Any:
    """The value at a dotted path (`doc.knowledge`, `filtered_resps.0`), or `_MISSING`.

    >>> field_value({"resps": [["hi"]]}, "resps.0.0"), field_value({"doc": {}}, "doc.k") is _MISSING
    ('hi', True)
    """
    value = sample
    for part in field.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif (
            isinstance(value, (list, tuple))
            and part.lstrip("-").isdigit()
            and -len(value) <= int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            return _MISSING
    return value


@dataclass
class LogSample:
    """One sample of a log: its key (in messages), its identity fields, its record (a dict)."""

    key: str
    ident: dict[str, Any]
    record: dict[str, Any] | None
    error: str | None = None  # a line the reader could not read


def read_samples(path: str | Path, kind: str) -> list[LogSample]:
    """The log's samples in order, each with its key: `doc 3` (lm-eval; `doc 3 (filter F)` beside
    another filter), `sample 'abc' (epoch 1)` (Inspect)."""
    if kind == "lm-eval":
        from q2_metric.io import read_table

        rows, _ = read_table(path)
        filters = {r.fields.get("filter") for r in rows if r.error is None} - {None}
        out = []
        for r in rows:
            if r.error is not None:
                out.append(LogSample(f"line {r.line}", {"line": r.line}, None, r.error))
                continue
            doc_id, filt = r.fields.get("doc_id", r.number - 1), r.fields.get("filter")
            key = f"doc {doc_id}" + (f" (filter {filt})" if len(filters) > 1 and filt is not None else "")
            out.append(LogSample(key, {"doc_id": doc_id, "filter": filt, "line": r.line}, r.fields))
        return out
    from inspect_ai.log import read_eval_log

    if kind == "inspect" and Path(path).suffix.lower() == ".eval":
        check_eval_archive(Path(path))
    try:
        log = read_eval_log(str(path))
    except Exception as err:
        raise Q2InputError(
            f"The Inspect log '{path}' cannot be read: {str(err).splitlines()[0] if str(err) else type(err).__name__}."
        ) from None
    return [
        LogSample(
            f"sample {s.id!r} (epoch {s.epoch})",
            {"id": s.id, "epoch": s.epoch},
            s.model_dump(mode="json", exclude={"events", "attachments", "store"}),
        )
        for s in (log.samples or [])
    ]


def _knowledge_default(record: dict[str, Any]) -> Any:
    """Inspect's default knowledge: `metadata.knowledge`, else the target (a list joined by spaces)."""
    value = field_value(record, "metadata.knowledge")
    if value is not _MISSING:
        return value
    target = record.get("target", _MISSING)
    return (
        " ".join(target) if isinstance(target, list) and all(isinstance(t, str) for t in target) else target
    )


def to_items(
    samples: Sequence[LogSample],
    kind: str,
    response_field: str | None,
    knowledge_field: str | None,
    path: str | Path,
    history_field: str | None = None,
) -> tuple[list[Item], dict[str, str], dict[int, str]]:
    """One contract `Item` per sample, the fields read, and the samples that are bad before any
    check (index -> one sentence: a line the reader could not read, a field missing); a field that
    no sample has is one error before any model work. `history_field` (read with coref): the turns
    before the reply, a list of texts (a sample without it has no history)."""
    fields = {
        "response": response_field or DEFAULT_FIELDS[kind][0],
        "knowledge": knowledge_field or DEFAULT_FIELDS[kind][1],
    }
    knowledge_of = (
        _knowledge_default
        if kind == "inspect" and knowledge_field is None
        else lambda rec: field_value(rec, fields["knowledge"])
    )
    readable = [s for s in samples if s.record is not None]
    if not readable:
        raise Q2InputError(f"The log '{path}' has no sample to score.")
    for role, get in (
        ("response", lambda rec: field_value(rec, fields["response"])),
        ("knowledge", knowledge_of),
    ):
        if all(get(s.record) is _MISSING for s in readable if s.record is not None):
            flag = f"--{role}-field"
            raise Q2InputError(
                f"No sample of the log '{path}' has the field '{fields[role]}' ({role}); name it "
                f"with {flag} (a dotted path, e.g. {'doc.passage' if kind == 'lm-eval' else 'metadata.context'})."
            )
    items, bad = [], {}
    for n, s in enumerate(samples):
        if s.record is None:
            bad[n] = f"{s.key}: {s.error}."
            items.append(Item(s.key, None, None))
            continue
        response, knowledge = field_value(s.record, fields["response"]), knowledge_of(s.record)
        for role, value in (("response", response), ("knowledge", knowledge)):
            if value is _MISSING and n not in bad:
                bad[n] = f"{s.key}: field '{fields[role]}' ({role}) is missing."
        history = field_value(s.record, history_field) if history_field else None
        items.append(Item(s.key, response, knowledge, None if history is _MISSING else history))
    if history_field:
        fields["history"] = history_field
    return items, fields, bad


def in_log_words(error: str | None, fields: dict[str, str]) -> str | None:
    """The contract's error with the field named as in the log (`field 'doc.knowledge' (knowledge)`).

    >>> in_log_words("doc 1: field 'knowledge' must be a string, got int.", {"response": "r", "knowledge": "doc.k"})
    "doc 1: field 'doc.k' (knowledge) must be a string, got int."
    """
    if error is None:
        return None
    for role, path in fields.items():
        error = error.replace(f"field '{role}'", f"field '{path}' ({role})")
    return error


def score_log_items(
    scorer: Q2Scorer, items: Sequence[Item], bad: dict[int, str], chunk_size: int = 64, progress: Any = None
) -> Outcome:
    """`frontend.score_items` over chunks of `chunk_size` items (one engine call each) of the
    samples not already `bad`, joined into one `Outcome` in sample order whose system figures
    cover every scored item."""
    from q2_metric.frontend import system_figures

    todo = [item for n, item in enumerate(items) if n not in bad]
    outcomes = [
        score_items(scorer, todo[i : i + chunk_size], progress=progress)
        for i in range(0, max(len(todo), 1), chunk_size)
    ]
    scored = iter(r for o in outcomes for r in o.items)
    results = [
        ItemResult(item.key, "bad", None, bad[n]) if n in bad else next(scored)
        for n, item in enumerate(items)
    ]
    return Outcome(
        results, system_figures([r.score for r in results if r.score is not None]), outcomes[0].signature
    )


def sample_record(sample: LogSample, result: ItemResult, fields: dict[str, str]) -> dict[str, Any]:
    """One line of the output: the sample's identity, status, Q², reason, spans (`results.Span`)."""
    r = result.score
    out: dict[str, Any] = {"key": sample.key, **sample.ident, "status": result.status}
    if r is None:
        return {
            **out,
            "q2": None,
            "q2_no_nli": None,
            "error": in_log_words(result.error, fields),
            "spans": [],
            "unsupported_spans": [],
        }
    return {
        **out,
        "q2": None if r.q2 != r.q2 else r.q2,
        "q2_no_nli": None if r.q2_no_nli != r.q2_no_nli else r.q2_no_nli,
        "fallback": r.fallback,
        "reason": result.reason,
        **r.span_details(),
    }


def default_outputs(log: str | Path) -> tuple[Path, Path]:
    """Beside the log: `<log>.q2.jsonl` and `<log>.q2.summary.json` (the log's full name kept)."""
    log = Path(log)
    return log.with_name(log.name + ".q2.jsonl"), log.with_name(log.name + ".q2.summary.json")


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class RescoreReport:
    kind: str
    fields: dict[str, str]
    outcome: Outcome
    output: Path
    summary: Path
    summary_data: dict[str, Any]


def rescore_log(
    scorer: Q2Scorer,
    log: str | Path,
    output: str | Path | None = None,
    summary: str | Path | None = None,
    *,
    response_field: str | None = None,
    knowledge_field: str | None = None,
    history_field: str | None = None,
    chunk_size: int = 64,
    progress: Any = None,
) -> RescoreReport:
    """Score every sample of an lm-eval samples file or an Inspect log; write one JSON line per
    sample (`sample_record`) and the summary (system figures, counts, signature, the log's SHA-256)
    all-or-nothing. The paths and the models are checked before any model work."""
    from q2_metric.frontend import check_models, guard
    from q2_metric.io import commit_outputs
    from q2_metric.options import flag_name, json_safe

    if chunk_size < 1:
        raise Q2InputError(f"--chunk-size must be at least 1, got {chunk_size}.")
    kind = log_kind(log)
    default_out, default_summary = default_outputs(log)
    output, summary = Path(output or default_out), Path(summary or default_summary)
    for flag, path in (("-o/--output", output), ("--summary", summary)):
        want = ".jsonl" if flag == "-o/--output" else ".json"
        if path.suffix.lower() != want:
            from q2_metric.errors import OutputPathError

            raise OutputPathError(f"The output path '{path}' ({flag}) must end in {want}.")
    guard({"LOG": log}, {"-o/--output": output, "--summary": summary}, config=scorer.config)
    before = file_sha256(log)
    samples = read_samples(log, kind)
    if history_field and not scorer.config.coref:
        raise Q2InputError("--history-field is read by --coref only; add --coref.")
    items, fields, bad = to_items(samples, kind, response_field, knowledge_field, log, history_field)
    check_models(scorer, spell=flag_name())
    outcome = score_log_items(scorer, items, bad, chunk_size, progress)
    records = [sample_record(s, r, fields) for s, r in zip(samples, outcome.items)]
    counts = outcome.counts
    data = json_safe(
        {
            **outcome.system.to_dict(),
            "signature": str(outcome.signature),
            "signature_short": outcome.signature.short(),
            "log": str(log),
            "log_format": kind,
            "log_sha256": before,
            "response_field": fields["response"],
            "knowledge_field": fields["knowledge"],
            **({"history_field": fields["history"]} if "history" in fields else {}),
            "num_samples": len(records),
            **{f"num_{k}": v for k, v in counts.items()},
        }
    )
    lines = "".join(json.dumps(json_safe(rec), ensure_ascii=False, allow_nan=False) + "\n" for rec in records)
    body = json.dumps(data, indent=2, allow_nan=False) + "\n"
    if file_sha256(log) != before:  # a harness still writing it: scores of a log that is no more
        raise Q2InputError(
            f"The log '{log}' changed while it was rescored; nothing was written: rescore it again "
            "once the run that writes it has finished."
        )
    commit_outputs([(output, lambda f: f.write(lines)), (summary, lambda f: f.write(body))])
    return RescoreReport(kind, fields, outcome, output, summary, data)
