"""Q²'s figures as the Hub's Eval Results: YAML files in a model repo's `.eval_results/` folder,
one per benchmark and variant, which the Hub shows on the model page and gathers into the benchmark
dataset's leaderboard (https://huggingface.co/docs/hub/eval-results).

The format is the Hub's specification, `eval_results.yaml` of huggingface/hub-docs (`SPEC`, read at
commit 242f4a1, 2026-08-22): a list of entries, each with `dataset` (`id`, a Hub dataset id, and
`task_id`, both required; `revision` optional), `value` (required), and optional `verifyToken`,
`date` (an ISO-8601 date as a string), `source` (`url` required when present; `name`, `user`,
`org`) and `notes`. The entries are built and serialized by huggingface_hub's own `EvalResultEntry`
and `eval_result_entries_to_yaml`, and every file is checked (`check_file`) against the
specification and by a round trip through huggingface_hub's `parse_eval_result_entries`.

The files go into a local folder (`write_folder`), or as a pull request to a model repo
(`open_pull_request`: one `create_commit(..., create_pr=True)` of `CommitOperationAdd`s, the way
huggingface/community-evals sends community evaluations, which the Hub marks "community" while the
pull request is open).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q2_metric.hub.publish import PublishError, check_range
from q2_metric.version import PAPER

FOLDER = ".eval_results"
SPEC = (
    "https://github.com/huggingface/hub-docs/blob/242f4a1eeb867daf4ac3f44026a5df4a68908a3d/eval_results.yaml"
)
DOCS = "https://huggingface.co/docs/hub/eval-results"
DEFAULT_TASK = "default"
DEFAULT_SOURCE_NAME = "Q² (Honovich et al., 2021)"
# the Hub dataset of a `q2 meta-eval --dataset` format, where the set is on the Hub
KNOWN_DATASETS = {"faithdial": "McGill-NLP/FaithDial"}
VARIANTS = {
    "q2": ("q2-nli", "Q²-NLI (Q² with its NLI step)"),
    "q2_no_nli": ("q2-f1", "Q²-F1 (token F1 only)"),
}

_ENTRY_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes"}
_DATASET_KEYS = {"id", "task_id", "revision"}
_SOURCE_KEYS = {"url", "name", "user", "org"}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+\Z")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?\Z")


@dataclass(frozen=True)
class EvalFile:
    """One `.eval_results/NAME` file: its name and its entries (the YAML's list)."""

    name: str
    entries: list[dict[str, Any]]

    @property
    def path_in_repo(self) -> str:
        return f"{FOLDER}/{self.name}"

    def text(self) -> str:
        import yaml

        return yaml.safe_dump(self.entries, sort_keys=False, allow_unicode=True, default_flow_style=False)


def check_date(text: str) -> str:
    """An ISO-8601 date or datetime (the specification's `date`), else `PublishError`."""
    if not _DATE.match(text):
        raise PublishError(f"--date '{text}' is not an ISO-8601 date (e.g. 2026-01-15).")
    try:
        _dt.date.fromisoformat(text[:10])
    except ValueError:
        raise PublishError(f"--date '{text}' is not a calendar date.") from None
    return text


def check_dataset_id(dataset_id: str, what: str = "--dataset-id") -> str:
    """A Hub dataset id (`owner/name`), else `PublishError`."""
    if not _HUB_ID.match(dataset_id):
        raise PublishError(
            f"{what} '{dataset_id}' is not a Hub dataset id (owner/name, e.g. McGill-NLP/FaithDial)."
        )
    return dataset_id


def file_date(path: str | Path) -> str:
    """The day (UTC) a results file was last written: when its run ended."""
    stamp = Path(path).stat().st_mtime
    return _dt.datetime.fromtimestamp(stamp, tz=_dt.timezone.utc).date().isoformat()


def _entry(
    dataset_id: str,
    task_id: str,
    value: float,
    *,
    date: str,
    notes: str,
    source_url: str | None,
    source_name: str | None,
) -> dict[str, Any]:
    """One entry, built and serialized by huggingface_hub's own class."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    entry = EvalResultEntry(
        dataset_id=check_dataset_id(dataset_id),
        task_id=task_id,
        value=value,
        date=date,
        source_url=source_url or PAPER,
        source_name=source_name or DEFAULT_SOURCE_NAME,
        notes=notes,
    )
    (data,) = eval_result_entries_to_yaml([entry])
    return data


def _number(value: Any, key: str = "", where: str = "") -> float | None:
    """A defined figure, rounded to 4 places (None when undefined); with `key`, one outside [0, 1]
    is refused (`check_range`, naming `where` and `key`)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    if key:
        check_range(key, float(value), where)
    return round(float(value), 4)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


_PLAIN_ID = re.compile(r"[a-z0-9]+/[a-z0-9]+\Z")
_PLAIN = re.compile(r"[a-z0-9]+\Z")


def _stem(dataset_id: str, task_id: str, set_name: str | None = None) -> str:
    """The start of a file's name, unique to the benchmark (its Hub id, case-folded as the Hub
    folds it), its task and the meta-eval set: `owner-name[_task][_set]`, readable, plus
    `.` and 8 hex digits of the exact key when a part is not plain lowercase letters and digits
    (`me/my-bench` and `me/my.bench` slug alike; a plain name holds no dot, so never meets one)."""
    key = [dataset_id.lower()]
    parts = [_slug(dataset_id)]
    plain = bool(_PLAIN_ID.match(key[0]))
    for extra in ([] if task_id == DEFAULT_TASK else [task_id]) + (
        [set_name] if set_name is not None else []
    ):
        key.append(extra)
        parts.append(_slug(extra))
        plain = plain and bool(_PLAIN.match(extra))
    stem = "_".join(parts)
    if plain:
        return stem
    digest = hashlib.sha256("\n".join([key[0], task_id, set_name or ""]).encode("utf-8")).hexdigest()
    return f"{stem}.{digest[:8]}"


def _rules(signature: str | None) -> str:
    """The signature's rules (`paper`, `dnli`, `paper+dec`...) for file names; '' for the paper's."""
    if not signature:
        return ""
    from q2_metric.signature import Signature

    short = Signature.parse(signature).short()
    rules = next((p.partition(":")[2] for p in short.split("|") if p.startswith("rules:")), "paper")
    return "" if rules == "paper" else "_" + _slug(rules)


def results_files(
    results: Mapping[str, Any],
    *,
    dataset_id: str,
    date: str,
    task_id: str = DEFAULT_TASK,
    source_url: str | None = None,
    source_name: str | None = None,
) -> list[EvalFile]:
    """`q2 score`'s figures (a results JSON: q2, q2_no_nli, coverage, signature) on one benchmark:
    a file per variant (Q²-NLI, Q²-F1), the full signature in the notes; undefined figures left out."""
    signature = results.get("signature")
    coverage = _number(results.get("coverage"), "coverage", "The results")
    op = results.get("operating_point")
    decided = (
        f"; decisions at the operating point {op.get('rule')} on {op.get('dataset')} "
        f"(threshold {op.get('threshold'):g}, op:{op.get('signature')})"
        if isinstance(op, dict) and isinstance(op.get("threshold"), (int, float))
        else ""
    )
    files = []
    for key, (variant, label) in VARIANTS.items():
        value = _number(results.get(key), key, "The results")
        if value is None:
            continue
        notes = (
            f"{label}: the mean over the responses scored, on 0-1"
            + (f"; coverage {coverage:g}" if coverage is not None else "")
            + decided
            + f"; signature: {signature or 'unknown'}"
        )
        files.append(
            EvalFile(
                f"{_stem(dataset_id, task_id)}_{variant}{_rules(signature)}.yaml",
                [
                    _entry(
                        dataset_id,
                        task_id,
                        value,
                        date=date,
                        notes=notes,
                        source_url=source_url,
                        source_name=source_name,
                    )
                ],
            )
        )
    return files


def benchmark_files(
    report: Mapping[str, Any],
    *,
    dataset_ids: Mapping[str, str],
    date: str,
    task_id: str = DEFAULT_TASK,
    source_url: str | None = None,
    source_name: str | None = None,
) -> list[EvalFile]:
    """`q2 meta-eval --dataset`'s figures (its `benchmark.json`): per set and Q² variant, Q²'s ROC
    AUC as a detector of the set's labels, and on a FaithDial set also the mean Q² of its FaithDial
    responses (the figure FaithDial's Tables 5 and 8 print). `dataset_ids` maps a set's name (or
    its format) to its Hub dataset id; a set without one is refused, naming it."""
    if report.get("kind") != "benchmark":
        raise PublishError("The --meta-eval file is not a `q2 meta-eval --dataset` report (benchmark.json).")
    signature = report.get("signature")
    datasets = report.get("datasets") or {}
    results = report.get("results") or {}
    missing = [
        n
        for n in results
        if n not in dataset_ids and (datasets.get(n) or {}).get("format") not in dataset_ids
    ]
    if missing:
        raise PublishError(
            f"No Hub dataset id for the set(s) {', '.join(missing)}; give each one as --dataset-id NAME=OWNER/SET."
        )
    files = []
    for name, res in results.items():
        info = datasets.get(name) or {}
        dataset_id = dataset_ids.get(name) or dataset_ids[info.get("format", "")]
        metrics = res.get("metrics") or {}
        measured = {
            p.get("measure"): p.get("measured") for p in (report.get("published") or {}).get(name, [])
        }
        where = f"The set {name} of the --meta-eval report"
        for key, (variant, label) in VARIANTS.items():
            figures = []
            auc = _number((metrics.get(key) or {}).get("roc_auc"), f"{key} roc_auc", where)
            if auc is not None:
                figures.append(
                    (
                        "roc-auc",
                        auc,
                        f"ROC AUC of {label} against the set's labels ({info.get('label_rule', '')})",
                    )
                )
            measure = "mean_q2_nli" if key == "q2" else "mean_q2_f1"
            mean = _number(measured.get(measure), measure, where)
            if mean is not None:
                figures.append(("mean", mean, f"mean {label} of the set's FaithDial responses, on 0-1"))
            for figure, value, what in figures:
                assert value is not None
                notes = f"{what}; {info.get('n', '?')} responses; signature: {signature or 'unknown'}"
                files.append(
                    EvalFile(
                        f"{_stem(dataset_id, task_id, name)}_{variant}_{figure}{_rules(signature)}.yaml",
                        [
                            _entry(
                                dataset_id,
                                task_id,
                                value,
                                date=date,
                                notes=notes,
                                source_url=source_url,
                                source_name=source_name,
                            )
                        ],
                    )
                )
    return files


def check_file(name: str, text: str) -> list[dict[str, Any]]:
    """Check one `.eval_results` file against the Hub's specification (`SPEC`) and by a round trip
    through huggingface_hub's parser and serializer; `PublishError` names the file and the field."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml, parse_eval_result_entries

    def bad(why: str) -> PublishError:
        return PublishError(f"{FOLDER}/{name}: {why} (the Hub's format: {SPEC}).")

    if not name.endswith((".yaml", ".yml")) or "/" in name:
        raise bad("the file must be a .yaml file directly in the folder")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise bad(f"not YAML ({str(err).splitlines()[0]})") from None
    if not isinstance(data, list) or not data:
        raise bad("the file must hold a non-empty list of entries")
    for i, entry in enumerate(data, 1):
        if not isinstance(entry, dict):
            raise bad(f"entry {i} is not a mapping")
        extra = set(entry) - _ENTRY_KEYS
        if extra:
            raise bad(f"entry {i} has field(s) outside the format: {', '.join(sorted(map(str, extra)))}")
        dataset = entry.get("dataset")
        if not isinstance(dataset, dict) or set(dataset) - _DATASET_KEYS:
            raise bad(f"entry {i}: 'dataset' must be a mapping of id, task_id and revision")
        if not isinstance(dataset.get("id"), str) or not _HUB_ID.match(dataset["id"]):
            raise bad(f"entry {i}: dataset.id must be a Hub dataset id (owner/name)")
        if not isinstance(dataset.get("task_id"), str) or not dataset["task_id"]:
            raise bad(f"entry {i}: dataset.task_id is required")
        value = entry.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad(f"entry {i}: value must be a finite number")
        if "date" in entry and not (isinstance(entry["date"], str) and _DATE.match(entry["date"])):
            raise bad(f"entry {i}: date must be an ISO-8601 date or datetime written as a string")
        source = entry.get("source")
        if source is not None and (
            not isinstance(source, dict)
            or set(source) - _SOURCE_KEYS
            or not isinstance(source.get("url"), str)
            or not all(isinstance(v, str) for v in source.values())
        ):
            raise bad(f"entry {i}: source must be a mapping with a url (and name, user, org)")
        for key in ("notes", "verifyToken"):
            if key in entry and not isinstance(entry[key], str):
                raise bad(f"entry {i}: {key} must be a string")
    try:
        again = eval_result_entries_to_yaml(parse_eval_result_entries(data))
    except (KeyError, TypeError, ValueError) as err:
        raise bad(f"huggingface_hub cannot read it ({err})") from None
    if again != data:
        raise bad("huggingface_hub reads it differently from what is written")
    return data


def check_files(files: Sequence[EvalFile]) -> None:
    """Every file checked (`check_file`), and no two with the same name."""
    names = [f.name for f in files]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise PublishError(f"Two results would be written to {FOLDER}/{dup}.")
    if not files:
        raise PublishError("The results hold no defined Q² figure to publish.")
    for f in files:
        check_file(f.name, f.text())


def _benchmarks(entries: Any) -> set[tuple[str, str]]:
    """The (dataset id case-folded, task id) pairs a file's entries are about."""
    if not isinstance(entries, list):
        return set()
    out = set()
    for entry in entries:
        dataset = entry.get("dataset") if isinstance(entry, dict) else None
        if isinstance(dataset, dict):
            out.add((str(dataset.get("id", "")).lower(), str(dataset.get("task_id", ""))))
    return out


def check_no_other_benchmark(path: Path, file: EvalFile) -> None:
    """Refuse, naming both, to replace an existing file that holds results of another benchmark or
    task than `file` (a file written by hand, or by another tool, under the same name)."""
    import yaml

    if not path.exists():
        return
    try:
        theirs = _benchmarks(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        theirs = set()
    ours = _benchmarks(file.entries)
    if theirs and theirs <= ours:
        return
    them = "; ".join(f"{i} (task {t})" for i, t in sorted(theirs)) or "something that is not Eval Results"
    us = "; ".join(f"{e['dataset']['id']} (task {e['dataset']['task_id']})" for e in file.entries)
    raise PublishError(
        f"{path} already holds results of {them}, and these results of {us} would replace it; "
        "move that file away or write into another folder."
    )


def write_folder(root: str | Path, files: Sequence[EvalFile]) -> list[Path]:
    """Write the files into `root/.eval_results/` (created if missing), all or nothing; an earlier
    file of the same benchmark, task and variant is replaced, every other file kept, and a file of
    the same name about another benchmark or task is refused (`check_no_other_benchmark`)."""
    from q2_metric.io.commit import commit_outputs
    from q2_metric.io.paths import check_regular_target

    check_files(files)
    folder = Path(root) / FOLDER
    paths = [folder / f.name for f in files]
    for p, f in zip(paths, files):
        check_regular_target(p, "--eval-results")
        check_no_other_benchmark(p, f)
    folder.mkdir(parents=True, exist_ok=True)

    def writer(text: str) -> Any:
        return lambda out: out.write(text)

    commit_outputs([(p, writer(f.text())) for p, f in zip(paths, files)])
    return paths


PR_TITLE = "Add Q² evaluation results"
PR_DESCRIPTION = f"""## Evaluation results

This pull request adds Q² results (factual consistency of knowledge-grounded responses; Honovich
et al., 2021, {PAPER}) in the Hub's [`.eval_results/` format]({DOCS}): one YAML file per benchmark
and variant, the full Q² signature (models, revisions, rules and library versions) in each entry's
notes. While it is open, the Hub shows them as community-provided results.

---
*Made with `q2 publish --create-pr` (q2-metric).*"""


def pr_operations(files: Sequence[EvalFile]) -> list[Any]:
    """The pull request's `CommitOperationAdd`s, one per file (checked first)."""
    from huggingface_hub import CommitOperationAdd

    check_files(files)
    return [
        CommitOperationAdd(path_in_repo=f.path_in_repo, path_or_fileobj=f.text().encode("utf-8"))
        for f in files
    ]


def open_pull_request(
    repo_id: str, files: Sequence[EvalFile], token: str | None = None, api: Any = None
) -> str:
    """Open a pull request adding the files to the model repo `repo_id` (any Hub user may open one;
    a token is needed). Returns the pull request's URL."""
    from huggingface_hub import HfApi, constants, hf_api

    from q2_metric.hub.publish import _hub_failure, check_hub_reachable

    operations = pr_operations(files)
    api = api or HfApi(token=token)
    if isinstance(api, hf_api.HfApi) and not constants.HF_HUB_OFFLINE:
        check_hub_reachable()
    try:
        commit = api.create_commit(
            repo_id=repo_id,
            repo_type="model",
            operations=operations,
            commit_message=PR_TITLE,
            commit_description=PR_DESCRIPTION,
            create_pr=True,
            token=token,
        )
    except Exception as err:
        raise _hub_failure(repo_id, err, "open a pull request on") from None
    return str(getattr(commit, "pr_url", None) or getattr(commit, "commit_url", commit))
