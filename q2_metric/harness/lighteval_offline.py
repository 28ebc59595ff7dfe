"""LightEval without the network: `python -m q2_metric.harness.lighteval_offline ARGS` runs
`lighteval ARGS`, leaving out LightEval's tinyBenchmarks tasks when their file is not downloaded.

LightEval 0.13 imports every task module on every run, and its `tiny_benchmarks` module downloads
`tinyBenchmarks.pkl` from GitHub into LightEval's own folder when it is imported: offline, every run
stops there with a `ConnectionError`. Here that one module is registered as empty before LightEval
lists its tasks (only when the file is missing), so its `tiny:*` tasks are not offered and nothing is
downloaded or written into LightEval's installed package. In Python, call `leave_out_unfetched_tasks()`
before building LightEval's `Pipeline`. Where GitHub is reachable, the plain `lighteval` command
downloads the file once, and its tinyBenchmarks tasks run.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

TINY_BENCHMARKS = "lighteval.tasks.tasks.tiny_benchmarks"


def leave_out_unfetched_tasks() -> list[str]:
    """Register LightEval's tinyBenchmarks task module as empty when its downloaded file is missing;
    the modules left out (none when the file is there, the module already imported, or no LightEval)."""
    if TINY_BENCHMARKS in sys.modules:
        return []
    try:
        spec = importlib.util.find_spec(TINY_BENCHMARKS)
    except ImportError:  # LightEval is not installed
        return []
    if spec is None or spec.origin is None:
        return []
    if (Path(spec.origin).parent / "tinyBenchmarks.pkl").is_file():
        return []
    stub = types.ModuleType(
        TINY_BENCHMARKS, "LightEval's tinyBenchmarks tasks, left out: their file is not downloaded"
    )
    stub.TASKS_TABLE = []  # type: ignore[attr-defined]  # what LightEval's registry reads of a task module
    sys.modules[TINY_BENCHMARKS] = stub
    return [TINY_BENCHMARKS]


def main(argv: list[str] | None = None) -> int:
    """`lighteval ARGS` with the tinyBenchmarks tasks left out when their file is missing."""
    if importlib.util.find_spec("lighteval") is None:
        print(
            "q2: LightEval is not installed; install it with pip install 'q2-metric[lighteval]'.",
            file=sys.stderr,
        )
        return 2
    leave_out_unfetched_tasks()
    from lighteval.__main__ import app

    from q2_metric.harness import one_line_errors

    try:
        app(args=sys.argv[1:] if argv is None else argv, prog_name="lighteval")
    except SystemExit as stop:  # typer ends with SystemExit: its code is the run's
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except Exception:
        # as under `lighteval`: a Q² error ends in its one sentence, any other in typer's traceback
        # (typer put its hook in place when the run started; ours goes in front of it)
        one_line_errors()
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
