"""`q2 score --ray`: score a corpus on a Ray cluster with Ray Data, one model set per worker, resumably.

How a run goes, and why:

- The driver reads the input with the local command's row reader (`read_rows`: CSV, JSONL,
  Parquet, a `datasets` folder). Bad rows are then reported with the same line numbers and
  messages as `q2 score`, and good rows get the same pair keys as its cache. Ray's own readers
  would lose line numbers (pyarrow's CSV and JSON readers fail a whole file on one malformed
  line) and make a second, subtly different notion of a row. Reading is cheap next to scoring
  (80k dialogue turns are tens of MB of text), so only scoring is distributed.
- The driver hands Ray Data the pairs still to score, each once, and `map_batches` runs them
  through a pool of actors (`ScoreBatch`), each of which loads one `Q2Scorer`'s models once.
- Finished blocks stream back to the driver, which writes each as a Parquet part file named by
  the hash of its keys into `<cache_dir>/<fingerprint>/ray/`; the fingerprint is the local
  cache's (options and model identity). An interrupted run keeps the parts already written; a
  rerun reads them and scores only the keys that are missing. Only the driver writes, so the
  run folder need not be on storage the cluster's nodes share.
- The output table, steps file and system score (over all rows) come from the local command's
  own code (`write_results`), so the columns are the same; a `.parquet` output writes Parquet.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from q2_metric.corpus.files import (
    ScoreReport,
    check_decision_column,
    not_english_warning,
    prepare_run,
    quiet_not_english,
    write_results,
)
from q2_metric.errors import Q2Error
from q2_metric.frontend import Item, score_items
from q2_metric.options.operating_point import OperatingPoint
from q2_metric.scorer import Q2Scorer

PART_GLOB = "part-*.parquet"


class RayNotInstalled(Q2Error, ImportError):
    """Ray (with Ray Data) is missing; the message is one sentence."""


def import_ray() -> Any:  # the ray module
    """`ray`, with `ray.data` imported, or `RayNotInstalled`."""
    try:
        import ray
        import ray.data
    except ImportError as err:
        raise RayNotInstalled("Scoring with --ray needs Ray Data: pip install 'q2-metric[ray]'") from err
    return ray


class ScoreBatch:
    """Ray Data callable class: each worker builds one scorer and loads its models once."""

    def __init__(self, scorer: Q2Scorer, num_threads: int | None = None) -> None:
        if num_threads:
            import torch

            torch.set_num_threads(num_threads)
        self.scorer = scorer.load()
        self.signature = str(self.scorer.signature())

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        keys = [str(k) for k in batch["key"]]
        items = [
            Item(f"pair {k}", str(r), str(kn))
            for k, r, kn in zip(keys, batch["response"], batch["knowledge"])
        ]
        # every text is a string: no item is bad (`as_result` would name one)
        # the file's not-English warning was given once, by its rows (`score_file_ray`)
        result = quiet_not_english(score_items, self.scorer, items, emit=False).as_result()  # q2 score emits
        return {
            "key": keys,
            "result": [json.dumps(r.to_dict()) for r in result.responses],
            "signature": [self.signature] * len(keys),
            "worker": [os.getpid()] * len(keys),  # which worker scored the block (kept in its part)
        }


def score_file_ray(
    scorer: Q2Scorer,
    input_path: str | Path,
    output_path: str | Path,
    *,
    address: str | None = None,
    workers: int | None = None,
    gpus_per_worker: float = 0,
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
    verbose: bool = False,
    threshold: float | None = None,
    spans_path: str | Path | None = None,
    operating_point: OperatingPoint | None = None,
) -> ScoreReport:
    """`score_file` over Ray Data. `scorer` should be unloaded: it is shipped to every worker, which
    loads its own models. `address`: a Ray cluster (`auto`, `host:6379`, `ray://host:10001`); by
    default $RAY_ADDRESS, else a new local Ray with this machine's CPUs (an already initialised Ray
    is used as it is). `chunk_size`: at most this many responses per worker call and per part file
    (fewer where that gives every worker a block: `plan_blocks`). Ray's own log
    lines are hidden unless `verbose`."""
    ray = import_ray()
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
    )
    threshold = operating_point.threshold if operating_point is not None else threshold
    check_decision_column(run, prefix, threshold)
    foreign = not_english_warning(run) if scorer.config.language == "en" else None  # as `score_file`
    if foreign:
        print(f"q2: warning: {foreign}", file=sys.stderr)

    with _run_dir(cache_dir, run.fingerprint) as run_dir:
        results, signatures = read_parts(run_dir)
        results = {k: v for k, v in results.items() if "spans" in v}  # written before spans existed: again
        todo = [k for k in dict.fromkeys(run.keys.values()) if k not in results]
        cached = sum(1 for k in run.keys.values() if k in results)
        started = ran = 0
        if todo:
            initialised = connect(ray, address, verbose=verbose)
            try:
                started, ran = _score_remote(
                    ray,
                    scorer,
                    [(k, *run.texts[k]) for k in todo],
                    run_dir,
                    results,
                    signatures,
                    workers=workers,
                    gpus_per_worker=gpus_per_worker,
                    chunk_size=chunk_size,
                    progress=progress,
                )
            finally:
                if initialised:
                    ray.shutdown()

    used = collections.Counter(signatures[k] for k in set(run.keys.values()))
    if len(used) > 1:
        print(
            f"q2: warning: the workers' signatures differ ({len(used)} kinds; library versions or "
            "models differ between nodes): the most common one is reported",
            file=sys.stderr,
        )
    report = write_results(
        run,
        results,
        output_path,
        prefix=prefix,
        steps_path=steps_path,
        summary_path=summary_path,
        num_cached=cached,
        num_scored_now=len(todo),
        signature=used.most_common(1)[0][0] if used else None,
        threshold=threshold,
        spans_path=spans_path,
        operating_point=operating_point,
    )
    report.warnings = [foreign] if foreign else []
    report.workers = ran
    if ran < started:  # said truthfully: the pool's other workers got no batch before the end
        from q2_metric.progress import plural

        report.warnings.append(
            f"{plural(ran, 'Ray worker')} of the {started} started scored the {len(todo)} pairs "
            f"(a worker takes a batch of at most --chunk-size pairs when it is free and ready)"
        )
        print(f"q2: warning: {report.warnings[-1]}.", file=sys.stderr)
    return report


def connect(ray: Any, address: str | None, verbose: bool = False) -> bool:
    """Join the cluster at `address` (default $RAY_ADDRESS, else a new local Ray); True if this call
    initialised Ray, so it should shut it down. Ray's own log lines are hidden unless `verbose`."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    local = {"include_dashboard": False} if address == "local" else {}
    if verbose:
        loud_cluster_errors()
        ray.init(address=address, logging_level=logging.WARNING, **local)
        return True
    quiet_ray_logs()
    with _native_stderr_hidden():  # the core's "Set ray log level ..." line, printed as it starts
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, **local)
    quiet_cluster_errors()
    return True


NODE_DIED = "Raylet is terminated"
NODE_DIED_NOTE = (
    "q2: warning: a Ray node stopped during the run; the batches it held are scored again "
    "on the nodes still alive"
)


def quiet_cluster_errors() -> None:
    """Ray's driver prints the cluster's error messages as they arrive, whatever `log_to_driver`
    says: when a node dies, the last 20 lines of its raylet's log ("state-dump" lines) and one
    "... submit failed ... will be retried" line per retried task. Ray Data retries on the nodes
    still alive, so these are not failures of the run: a dead node becomes one warning line and the
    rest is hidden (`--verbose` shows it all). Ray prints them through a module-level function,
    replaced here; if a later Ray moves it, its messages are simply printed as before."""
    try:
        from ray._private import worker
    except ImportError:  # pragma: no cover - another Ray layout
        return
    if getattr(worker.print_to_stdstream, "_q2_quiet", False) or not hasattr(worker, "listen_error_messages"):
        return
    seen: set[str] = set()

    def condensed(data: dict, ignore_prefix: bool = False) -> None:
        if any(NODE_DIED in line for line in data.get("lines", [])) and NODE_DIED not in seen:
            seen.add(NODE_DIED)
            print(NODE_DIED_NOTE, file=sys.stderr, flush=True)

    condensed._q2_quiet = True  # type: ignore[attr-defined]  # a mark on Ray's function: ours is installed
    condensed._q2_original = worker.print_to_stdstream  # type: ignore[attr-defined]  # kept on it, to restore
    worker.print_to_stdstream = condensed


def loud_cluster_errors() -> None:
    """Undo `quiet_cluster_errors` (for a `--verbose` run in the same process)."""
    try:
        from ray._private import worker
    except ImportError:  # pragma: no cover
        return
    worker.print_to_stdstream = getattr(worker.print_to_stdstream, "_q2_original", worker.print_to_stdstream)


@contextmanager
def _native_stderr_hidden() -> Iterator[None]:
    """Send file descriptor 2 (where native code writes) to /dev/null inside the block; Python
    exceptions still carry their messages."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def quiet_ray_logs() -> None:
    """Silence Ray's own log lines on the driver: its Python loggers (start-up and token notices,
    Ray Data's execution plan) and its C++ core's, which on every run logs an error-level
    "max_restarts > 0" note about Ray Data's actor pool that reads like a failure. A failing run
    still raises, with its own message."""
    for name in ("ray", "ray.data", "ray._private", "ray.util"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # read by the C++ core when Ray starts


def worker_resources(ray: Any, workers: int | None, gpus_per_worker: float) -> tuple[int, float]:
    """(workers, CPUs per worker). GPU workers take one CPU and by default one worker per
    `gpus_per_worker` GPUs; CPU workers default to one per node and share the CPUs between them."""
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    if gpus_per_worker:
        gpus = sum(n.get("GPU", 0) for n in nodes)
        return workers or max(1, int(gpus // gpus_per_worker)), 1
    cpus = [n.get("CPU", 0) for n in nodes if n.get("CPU", 0) > 0] or [1]
    workers = workers or len(cpus)
    return workers, max(1, min(max(cpus), sum(cpus) // workers))


def plan_blocks(items: int, workers: int, chunk_size: int) -> tuple[int, int, int]:
    """(blocks, responses per worker call, workers that get work) for `items` responses: at most
    `chunk_size` per call, and at least one block per worker, so that every worker said to run
    runs (a small file in one block ran on one worker whatever --workers said); never more
    workers than responses.

    >>> plan_blocks(5, 2, 64), plan_blocks(1000, 2, 64), plan_blocks(1, 4, 64), plan_blocks(7, 2, 3)
    ((2, 3, 2), (16, 64, 2), (1, 1, 1), (3, 3, 2))
    """
    used = max(1, min(workers, items))
    batch = max(1, min(chunk_size, -(-items // used)))
    return max(1, -(-items // batch)), batch, used


def _score_remote(
    ray: Any,
    scorer: Q2Scorer,
    items: list[tuple[str, str, str]],
    run_dir: Path,
    results: dict[str, dict],
    signatures: dict[str, str],
    *,
    workers: int | None,
    gpus_per_worker: float,
    chunk_size: int,
    progress: bool,
) -> tuple[int, int]:
    """Score `items` on a pool of workers; (workers started, workers that scored a batch)."""
    ray.data.DataContext.get_current().enable_progress_bars = False  # ours counts responses, not blocks
    workers, cpus = worker_resources(ray, workers, gpus_per_worker)
    blocks, batch, workers = plan_blocks(len(items), workers, chunk_size)
    ds = ray.data.from_items(
        [{"key": k, "response": r, "knowledge": kn} for k, r, kn in items], override_num_blocks=blocks
    )
    gpu = {"num_gpus": gpus_per_worker} if gpus_per_worker else {}
    ds = ds.map_batches(
        ScoreBatch,
        fn_constructor_args=(scorer, int(cpus)),
        batch_size=batch,
        batch_format="numpy",
        # one block at a time per worker: a block waits for a free worker rather than queueing
        # behind a busy one (how many workers did score is counted and said)
        compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),
        num_cpus=cpus,
        **gpu,
    )
    bar, ran = None, set()
    if progress:
        from q2_metric.progress import ResponseCounter, plural

        bar = ResponseCounter(len(items), f"Q² responses, {plural(workers, 'Ray worker')} started", "resp")
    try:
        # No prefetching: it holds a finished block back until the next one arrives, and a block
        # not yet written is lost if the run is killed.
        for table in ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
            write_part(run_dir, table)
            _add(table, results, signatures)
            ran.update(table.column("worker").to_pylist())
            if bar:
                bar.update(table.num_rows)
    finally:
        if bar:
            bar.close()
    return workers, len(ran)


def write_part(run_dir: Path, table: Any) -> Path:  # a pyarrow Table
    """Write one finished block (key, result, signature) atomically, named by its keys."""
    import pyarrow.parquet as pq

    from q2_metric.io import atomic_write

    keys = table.column("key").to_pylist()
    path = run_dir / f"part-{hashlib.sha256(chr(10).join(keys).encode()).hexdigest()[:16]}.parquet"

    def write(f: BinaryIO) -> None:
        pq.write_table(table, f)

    write.binary = True  # type: ignore[attr-defined]  # the writer's flag for io.commit: it writes bytes
    atomic_write(path, write)
    return path


def read_parts(run_dir: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """Results (pair key -> response dict) and signatures (pair key -> signature) of a run folder."""
    import pyarrow.parquet as pq

    results: dict[str, dict] = {}
    signatures: dict[str, str] = {}
    for path in sorted(run_dir.glob(PART_GLOB)):
        try:
            table = pq.read_table(path, columns=["key", "result", "signature"])
        except Exception as err:
            print(f"q2: warning: {path} unreadable ({err}); its rows are scored again", file=sys.stderr)
            continue
        _add(table, results, signatures)
    return results, signatures


def _add(table: Any, results: dict[str, dict], signatures: dict[str, str]) -> None:  # a pyarrow Table
    from q2_metric.corpus.cache import valid_result

    for key, result, signature in zip(*(table.column(c).to_pylist() for c in ("key", "result", "signature"))):
        try:
            value = json.loads(result)
        except (TypeError, ValueError):
            continue  # damaged: that row is scored again
        if valid_result(value):
            results[key] = value
            signatures[key] = signature


@contextmanager
def _run_dir(cache_dir: str | Path | None, fingerprint: str) -> Iterator[Path]:
    if cache_dir:
        path = Path(cache_dir) / fingerprint / "ray"
        path.mkdir(parents=True, exist_ok=True)
        yield path
    else:  # --no-cache: parts live for this run only
        with tempfile.TemporaryDirectory(prefix="q2-ray-") as tmp:
            yield Path(tmp)
