"""Where a scoring run goes: wall time, model tokens and model FLOPs per engine stage.

`Q2Scorer.score` times each stage where it calls it and reads each model's `FlopMeter`
(`q2_metric.models.speed.flops`) before and after, so `Q2Result.profile` says, per stage, how long it
took and what the models computed in it. Timings differ from run to run; they are never part of
scores, summaries or signatures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from q2_metric.models.speed.flops import FlopMeter

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
