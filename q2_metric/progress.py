"""Progress reporting for long scoring runs: a callback `(stage, done, total)` per engine stage.

The engine calls the callback as each stage advances; front-ends pass `tqdm_progress()` (a bar per
stage) or their own callback (the Space, ParlAI logs). `None` reports nothing.
"""

from __future__ import annotations

from typing import Callable, Optional

ProgressCallback = Callable[[str, int, int], None]


def tqdm_progress(desc: str = "Q²", leave: bool = False) -> ProgressCallback:
    """A callback that shows one tqdm bar per stage (`Q² questions: 40/120`)."""
    from tqdm.auto import tqdm

    bars: dict[str, object] = {}

    def report(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=f"{desc} {stage}", leave=leave, unit="item")
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return report


def notify(progress: Optional[ProgressCallback], stage: str, done: int, total: int) -> None:
    """Call `progress` when there is one."""
    if progress is not None:
        progress(stage, done, total)
