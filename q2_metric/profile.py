"""Where a scoring run goes: wall time, model tokens and model FLOPs per engine stage.

`Q2Scorer.score` times each stage where it calls it and reads each model's `FlopMeter`
(`q2_metric.models.flops`) before and after, so `Q2Result.profile` says, per stage, how long it
took and what the models computed in it. Timings differ from run to run; they are never part of
scores, summaries or signatures.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping

ROLES = ("qg", "qa", "nli")


@dataclass
class StageProfile:
    """One stage of one run: seconds, and per model role the tokens, FLOPs and forward passes.

    `tokens` counts positions through the model: padded input tokens of encoder passes, and for
    generation also one per beam row per decoder step. `flops` is matrix-product work (see
    `q2_metric.models.flops`); a role is absent when its component has no measurable model
    (an injected scripted component)."""

    stage: str
    seconds: float
    tokens: dict[str, int] = field(default_factory=dict)
    flops: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def meter_of(component: object):
    """The `FlopMeter` of a component's transformers model (attached on first use), or None."""
    model = getattr(component, "model", None)
    if model is None or not hasattr(model, "config"):
        return None
    from q2_metric.models.flops import FlopMeter

    try:
        return FlopMeter.attach(model)
    except (AttributeError, TypeError):  # a model type the meter does not know
        return None


def _snapshot(components: Mapping[str, object]) -> dict[str, tuple[int, int, int]]:
    out = {}
    for role, comp in components.items():
        meter = meter_of(comp) if comp is not None else None
        if meter is not None:
            out[role] = (meter.tokens, meter.flops, meter.calls)
    return out


def run_stage(name: str, run: Callable[[], Any], components: Callable[[], Mapping[str, object]]) -> StageProfile:
    """Run one stage and profile it. `components()` gives the role -> component objects already
    loaded (read before and after, so a model loaded inside the stage counts from zero)."""
    before = _snapshot(components())
    t0 = time.perf_counter()
    run()
    seconds = time.perf_counter() - t0
    after = _snapshot(components())
    prof = StageProfile(name, seconds)
    for role, (tokens, flops, calls) in after.items():
        t, f, c = before.get(role, (0, 0, 0))
        if calls - c:
            prof.tokens[role], prof.flops[role], prof.calls[role] = tokens - t, flops - f, calls - c
    return prof


def merge_profiles(runs: Iterable[list[StageProfile]]) -> list[StageProfile]:
    """Stage-by-stage sums over several runs (e.g. the chunks of a file), in first-seen order."""
    merged: dict[str, StageProfile] = {}
    for profile in runs:
        for p in profile:
            m = merged.setdefault(p.stage, StageProfile(p.stage, 0.0))
            m.seconds += p.seconds
            for mine, theirs in ((m.tokens, p.tokens), (m.flops, p.flops), (m.calls, p.calls)):
                for role, value in theirs.items():
                    mine[role] = mine.get(role, 0) + value
    return list(merged.values())


def format_profile(profile: list[StageProfile]) -> str:
    """A table: stage, seconds, share of the time, model tokens, GFLOP and GFLOP/s per stage.

    >>> print(format_profile([StageProfile("questions", 2.0, {"qg": 1200}, {"qg": 3 * 10**9}, {"qg": 9})]))
    stage                   seconds   share      tokens      GFLOP   GFLOP/s
    questions                  2.00  100.0%   qg:1,200        3.0       1.5
    total                      2.00  100.0%                   3.0       1.5
    """
    total = sum(p.seconds for p in profile) or float("nan")
    lines = [f"{'stage':<20}{'seconds':>10}{'share':>8}{'tokens':>12}{'GFLOP':>11}{'GFLOP/s':>10}"]
    all_flops = 0
    for p in profile:
        flops = sum(p.flops.values())
        all_flops += flops
        tokens = " ".join(f"{r}:{n:,}" for r, n in p.tokens.items()) or "-"
        rate = f"{flops / p.seconds / 1e9:10.1f}" if flops and p.seconds > 0 else f"{'-':>10}"
        gflop = f"{flops / 1e9:11.1f}" if flops else f"{'-':>11}"
        lines.append(f"{p.stage:<20}{p.seconds:>10.2f}{p.seconds / total:>8.1%}{tokens:>12}{gflop}{rate}")
    rate = f"{all_flops / total / 1e9:10.1f}" if all_flops else f"{'-':>10}"
    lines.append(f"{'total':<20}{total:>10.2f}{1:>8.1%}{'':>12}"
                 + (f"{all_flops / 1e9:11.1f}" if all_flops else f"{'-':>11}") + rate)
    return "\n".join(lines)
