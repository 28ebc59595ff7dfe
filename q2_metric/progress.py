"""Progress reporting for long scoring runs: a callback `(stage, done, total)` per engine stage.

The engine runs its stages (`stages(coref)`: `STAGES`, after `COREF_STAGE` with `coref=True`) in
order inside `stage()`; within a stage, `done` and `total`
count the distinct model inputs sent so far (`total` grows when a stage makes several model calls,
as the question filter does rank by rank), advanced batch by batch by the model backends
(`batch_done`). After the last stage the callback gets `(DONE, n, n)`. Front-ends pass
`tqdm_progress()` (a bar per stage), `log_progress()` (a log line per stage and per interval) or
their own callback (the Space); `None` reports nothing.

The stage profile (`StageProfile`, `run_stage`): where a scoring run goes, in wall time, model
tokens and model FLOPs per engine stage. `Q2Scorer.score` times each stage where it calls it and reads each model's `FlopMeter`
(`q2_metric.models.speed.flops`) before and after, so `Q2Result.profile` says, per stage, how long it
took and what the models computed in it. Timings differ from run to run; they are never part of
scores, summaries or signatures.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from q2_metric.models.speed.flops import FlopMeter

ProgressCallback = Callable[[str, int, int], None]

STAGES = ("candidates", "questions", "question filter", "knowledge answers", "span scores", "response scores")
COREF_STAGE = "coreference"  # with `coref=True`, the first stage (the scorer's stage of that name)
DONE = "done"


def stages(coref: bool = False) -> tuple[str, ...]:
    """The engine's stages in order: `STAGES`, after the coreference stage when `coref` is on.

    >>> len(stages()), stages(coref=True)[:2]
    (6, ('coreference', 'candidates'))
    """
    return (COREF_STAGE,) * bool(coref) + STAGES


@dataclass
class _Stage:
    callback: ProgressCallback
    name: str
    done: int = 0
    total: int = 0
    call: tuple[int, int] | None = None  # (done before the running model call, its inputs)

    def report(self) -> None:
        self.callback(self.name, self.done, self.total)


_ACTIVE: contextvars.ContextVar[_Stage | None] = contextvars.ContextVar("q2_progress_stage", default=None)


@contextlib.contextmanager
def stage(progress: ProgressCallback | None, name: str) -> Iterator[None]:
    """Run one engine stage, reporting its model inputs to `progress` (nothing when None)."""
    if progress is None:
        yield
        return
    current = _Stage(progress, name)
    token = _ACTIVE.set(current)
    current.report()
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def model_inputs(count: int) -> Iterator[None]:
    """A model call on `count` distinct inputs inside the running stage (see `q2_metric.steps.unique`)."""
    current = _ACTIVE.get()
    if current is None or count == 0:
        yield
        return
    start = current.done
    current.total += count
    current.call = (start, count)
    current.report()
    try:
        yield
    finally:
        current.call = None
        current.done = start + count
        current.report()


def batch_done(done: int, total: int) -> None:
    """Called by a model backend after each batch: `done` of its `total` inputs are through (its
    inputs may be windows of the engine's, so the share is what counts)."""
    current = _ACTIVE.get()
    if current is None or current.call is None or total <= 0:
        return
    start, count = current.call
    value = start + min(count, count * done // total)
    if value > current.done:
        current.done = value
        current.report()


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count` and `noun`, in the plural unless `count` is 1.

    >>> plural(1, "model input"), plural(3, "response"), plural(1, "row"), plural(0, "query", "queries")
    ('1 model input', '3 responses', '1 row', '0 queries')
    """
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def stage_label(name: str, coref: bool = False) -> str:
    """`2/6 questions` for an engine stage (`3/7 questions` with the coreference stage first), the
    name itself otherwise. A stage named `COREF_STAGE` counts the coreference stage whatever `coref`."""
    order = stages(coref or name == COREF_STAGE)
    return f"{order.index(name) + 1}/{len(order)} {name}" if name in order else name


class _Run:
    """What a progress callback knows of the engine call it hears: whether the coreference stage ran
    (it comes first), so that labels and the stage count include it."""

    def __init__(self) -> None:
        self.coref = False

    def hear(self, name: str) -> None:
        if name == COREF_STAGE:
            self.coref = True

    def label(self, name: str) -> str:
        return stage_label(name, self.coref)

    def count(self) -> int:
        return len(stages(self.coref))

    def end(self) -> None:
        self.coref = False


def tqdm_progress(desc: str = "Q²", leave: bool = False, position: int | None = None) -> ProgressCallback:
    """A callback that shows one tqdm bar per stage (`Q² 2/6 questions: 40/120 inputs`)."""
    from tqdm.auto import tqdm

    bar: tqdm[Any] | None = None
    shown: str | None = None  # the stage the bar shows
    run = _Run()

    def report(name: str, done: int, total: int) -> None:
        nonlocal bar, shown
        run.hear(name)
        if shown != name:
            if bar is not None:
                bar.close()
            bar, shown = None, None
            if name == DONE:
                run.end()
                return
            bar = tqdm(
                total=total,
                desc=f"{desc} {run.label(name)}",
                leave=leave,
                unit=" inputs",
                position=position,
            )
            shown = name
        assert bar is not None
        bar.total = total
        bar.n = done
        bar.refresh()

    return report


def log_progress(log: Callable[[str], None], interval: float = 10.0, desc: str = "Q²") -> ProgressCallback:
    """A callback that writes a line when a stage ends, with what it scored and its time
    (`Q² 2/6 questions: 120 model inputs in 3.4 s`), within a long stage at most every `interval`
    seconds (`Q² 2/6 questions: 40/120 model inputs so far`), and one when scoring is done."""
    ended = line_progress(desc, log)
    current: str | None = None
    last = 0.0
    run = _Run()

    def report(name: str, done: int, total: int) -> None:
        nonlocal current, last
        now = time.monotonic()
        ended(name, done, total)
        run.hear(name)
        if name == DONE:
            run.end()
        if name != current:
            current, last = name, now
        elif name != DONE and now - last >= interval:
            log(f"{desc} {run.label(name)}: {done}/{plural(total, 'model input')} so far")
            last = now

    return report


def notify(progress: ProgressCallback | None, stage: str, done: int, total: int) -> None:
    """Call `progress` when there is one."""
    if progress is not None:
        progress(stage, done, total)


def on_terminal(stream: TextIO | None = None) -> bool:
    """Whether `stream` (default stderr) is a terminal: bars there, plain lines elsewhere (CI logs,
    `2> file`), where a bar's carriage returns would pile up on one line."""
    import sys

    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _stderr_line(text: str) -> None:
    import sys

    print(text, file=sys.stderr, flush=True)


def line_progress(desc: str = "Q²", write: Callable[[str], None] = _stderr_line) -> ProgressCallback:
    """A callback that writes one line per stage when it ends, with its count and time
    (`Q² 2/6 questions: 120 model inputs in 3.4 s`), and one when scoring is done."""
    state: dict = {"stage": None, "done": 0, "start": 0.0, "first": None}
    run = _Run()

    def finish(now: float) -> None:
        if state["stage"] is not None:
            write(
                f"{desc} {run.label(state['stage'])}: {plural(state['done'], 'model input')} in "
                f"{now - state['start']:.1f} s"
            )

    def report(name: str, done: int, total: int) -> None:
        now = time.monotonic()
        run.hear(name)
        if name != state["stage"]:
            finish(now)
            if state["first"] is None:
                state["first"] = now
            if name == DONE:
                write(f"{desc}: all {run.count()} stages done in {now - state['first']:.1f} s")
                state.update(stage=None, first=None)
                run.end()
                return
            state.update(stage=name, start=now)
        state["done"] = done

    return report


def stage_progress(desc: str = "Q²", leave: bool = False, position: int | None = None) -> ProgressCallback:
    """A bar per stage on a terminal (`tqdm_progress`), else a line per stage (`line_progress`)."""
    return tqdm_progress(desc, leave=leave, position=position) if on_terminal() else line_progress(desc)


class StageTotals:
    """Off a terminal, for a run of many engine calls (`q2 score`'s chunks): adds up each stage's
    model inputs and time over every call and writes one line per stage at the end (`close`),
    instead of a line per stage per call (24 lines for 5 rows in 3 chunks). Use it as the progress callback."""

    def __init__(self, desc: str = "Q²", write: Callable[[str], None] = _stderr_line) -> None:
        self.desc, self.write = desc, write
        self.inputs: dict[str, int] = {}  # stage -> model inputs, in the order the stages first ran
        self.seconds: dict[str, float] = {}
        self.current: str | None = None
        self.started = 0.0
        self.done = 0

    def __call__(self, name: str, done: int, total: int) -> None:
        now = time.monotonic()
        if name != self.current:
            self._end(now)
            self.current = None if name == DONE else name
            self.started, self.done = now, 0
        if self.current is not None:
            self.done = done

    def _end(self, now: float) -> None:
        if self.current is not None:
            self.inputs[self.current] = self.inputs.get(self.current, 0) + self.done
            self.seconds[self.current] = self.seconds.get(self.current, 0.0) + now - self.started
            self.current = None

    def close(self) -> None:
        """Write the stage lines (nothing if no stage ran)."""
        self._end(time.monotonic())
        coref = COREF_STAGE in self.inputs
        for name, count in self.inputs.items():
            self.write(
                f"{self.desc} {stage_label(name, coref)}: {plural(count, 'model input')} in "
                f"{self.seconds[name]:.1f} s"
            )
        if self.inputs:
            n = len(self.inputs)
            stages = f"all {n} stages" if n > 1 else plural(n, "stage")  # as `line_progress` says it
            self.write(f"{self.desc}: {stages} done in {sum(self.seconds.values()):.1f} s")
        self.inputs, self.seconds = {}, {}


class ResponseCounter:
    """Counts finished items (e.g. responses): a tqdm bar on a terminal, else a line per update
    (`Q² responses: 3/150 done, 2.1 s`)."""

    def __init__(self, total: int, desc: str, unit: str, position: int | None = None) -> None:
        self.total, self.desc, self.n, self.start = total, desc, 0, time.monotonic()
        self.bar = None
        if on_terminal():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit=unit, desc=desc, position=position)

    def update(self, count: int) -> None:
        self.n += count
        if self.bar is not None:
            self.bar.update(count)
        else:
            _stderr_line(f"{self.desc}: {self.n}/{self.total} done, {time.monotonic() - self.start:.1f} s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- the stage profile: wall time, model tokens and FLOPs per stage --------------------------------------

ROLES = ("qg", "qa", "nli")


@dataclass
class StageProfile:
    """One stage of one run: seconds, and per model role the tokens, FLOPs and forward passes.

    `tokens` counts positions through the model: padded input tokens of encoder passes, and for
    generation also one per beam row per decoder step. `flops` is matrix-product work (see
    `q2_metric.models.speed.flops`); a role is absent when its component has no measurable model
    (an injected scripted component). `seconds - sum(model_seconds)` is the stage's time outside
    the models' forward passes (tokenization, spaCy, beam bookkeeping between decoder steps).
    A stage's first call also loads the model it first uses (`Q2Scorer.load()` keeps that out)."""

    stage: str
    seconds: float
    tokens: dict[str, int] = field(default_factory=dict)
    flops: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    model_seconds: dict[str, float] = field(default_factory=dict)  # inside the model's forward passes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def meter_of(component: object) -> FlopMeter | None:
    """The `FlopMeter` of a component's transformers model (attached on first use), or None."""
    model = getattr(component, "model", None)
    if model is None or not hasattr(model, "config"):
        return None
    from q2_metric.models.speed.flops import FlopMeter

    return FlopMeter.attach_if_known(model)


def _snapshot(components: Mapping[str, object]) -> dict[str, tuple[int, int, int, float]]:
    out = {}
    for role, comp in components.items():
        meter = meter_of(comp) if comp is not None else None
        if meter is not None:
            out[role] = (meter.tokens, meter.flops, meter.calls, meter.seconds)
    return out


def run_stage(
    name: str, run: Callable[[], Any], components: Callable[[], Mapping[str, object]]
) -> StageProfile:
    """Run one stage and profile it. `components()` gives the role -> component objects already
    loaded (read before and after, so a model loaded inside the stage counts from zero)."""
    before = _snapshot(components())
    t0 = time.perf_counter()
    run()
    seconds = time.perf_counter() - t0
    after = _snapshot(components())
    prof = StageProfile(name, seconds)
    for role, (tokens, flops, calls, secs) in after.items():
        t, f, c, s = before.get(role, (0, 0, 0, 0.0))
        if calls - c:
            prof.tokens[role], prof.flops[role], prof.calls[role] = tokens - t, flops - f, calls - c
            prof.model_seconds[role] = secs - s
    return prof


def merge_profiles(runs: Iterable[list[StageProfile]]) -> list[StageProfile]:
    """Stage-by-stage sums over several runs (e.g. the chunks of a file), in first-seen order."""
    merged: dict[str, StageProfile] = {}
    for profile in runs:
        for p in profile:
            m = merged.setdefault(p.stage, StageProfile(p.stage, 0.0))
            m.seconds += p.seconds
            for counts, more in ((m.tokens, p.tokens), (m.flops, p.flops), (m.calls, p.calls)):
                for role, n in more.items():
                    counts[role] = counts.get(role, 0) + n
            for role, secs in p.model_seconds.items():
                m.model_seconds[role] = m.model_seconds.get(role, 0) + secs
    return list(merged.values())


def format_profile(profile: list[StageProfile]) -> str:
    """A table per stage: seconds, share of the run, seconds inside model forward passes, model
    tokens, GFLOP and achieved GFLOP/s (over the stage's whole time)."""
    total = sum(p.seconds for p in profile)
    lines = [
        f"{'stage':<20}{'seconds':>9}{'share':>8}{'in model':>10}{'tokens':>14}{'GFLOP':>10}{'GFLOP/s':>9}"
    ]

    def row(name: str, seconds: float, model: float | None, tokens: str, flops: int) -> str:
        share = f"{seconds / total:.1%}" if total > 0 else "-"
        inside = f"{model:.2f}" if model is not None else "-"
        gflop = f"{flops / 1e9:.2f}" if flops else "-"
        rate = f"{flops / seconds / 1e9:.1f}" if flops and seconds > 0 else "-"
        return f"{name:<20}{seconds:>9.2f}{share:>8}{inside:>10}{tokens:>14}{gflop:>10}{rate:>9}"

    for p in profile:
        tokens = " ".join(f"{r}:{n:,}" for r, n in p.tokens.items()) or "-"
        model = sum(p.model_seconds.values()) if p.model_seconds else None
        lines.append(row(p.stage, p.seconds, model, tokens, sum(p.flops.values())))
    model_total = sum(sum(p.model_seconds.values()) for p in profile)
    lines.append(row("total", total, model_total, "", sum(sum(p.flops.values()) for p in profile)))
    return "\n".join(lines)
