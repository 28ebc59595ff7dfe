"""How far the tiny question generator's beam decisions sit from a tie on the bundled sample, and
how much the decision quantities move between kernel settings of this machine.

Every step of every search (the reference path, 3.2's rules) ranks each input's candidates by
their float32 cumulative log-probability; a decision is the order of the ranked candidates up to
the one that fills the beams, and its margin the smallest gap between neighbours there (the first
rank left out included; this counts every neighbour of the top 2 * beams + 1, a stricter reading
than `tests/unit/models/test_tiny_margins.py`'s).

The tiny T5 was random when this was first run (gaps down to 7 ulps, moved by up to 11% of a gap
between one thread and two; scaling its LM head 8 or 32 times reached 24 ulps). It is now designed
for margins (`tiny_builder.chain_qg`): smallest gap 3,600 ulps, and the four kernel settings give
bit-identical scores.

    python benchmarks/experiments/qg_margins.py     # margins, then drift: 1/2 threads x blas/onednn
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support.data import sample_rows  # noqa: E402

from q2_metric import Q2Config, Q2Scorer  # noqa: E402
from q2_metric.models.paper import beam_search  # noqa: E402
from q2_metric.models.tiny_builder import build_tiny_models  # noqa: E402

Ranked = list[list[float]]  # per decision: the ranked candidates' scores


def recording(seen: Ranked) -> object:
    """`SearchState.advance` that also appends each live input's ranked candidates to `seen`."""
    advance = beam_search.SearchState.advance

    def recorded(self: beam_search.SearchState, logits: torch.Tensor) -> torch.Tensor | None:
        beams = self.rules.num_beams
        scores = torch.log_softmax(logits.float(), dim=-1)
        current = torch.tensor(self.scores_of, dtype=torch.float, device=scores.device)
        top = (scores + current[:, None]).view(self.inputs, -1).topk(2 * beams + 1, dim=1).values
        for b in range(self.inputs):
            if not self.done[b]:
                seen.append([x for x in top[b].tolist() if math.isfinite(x) and x > -1e8])
        return advance(self, logits)

    return recorded


def margins(seen: Ranked) -> list[tuple[float, float]]:
    """Per decision: (smallest gap between neighbours, the larger magnitude of that pair)."""
    out = []
    for v in seen:
        gaps = [(v[i] - v[i + 1], max(abs(v[i]), abs(v[i + 1]))) for i in range(len(v) - 1)]
        if gaps:
            out.append(min(gaps))
    return out


def run(paths: dict[str, str], qg: str, threads: int, matmul: str) -> tuple[Ranked, list[float]]:
    torch.set_num_threads(threads)
    seen: Ranked = []
    config = Q2Config(
        qg_model=qg,
        qa_model=paths["qa"],
        nli_model=paths["nli"],
        device="cpu",
        max_question_length=16,  # as the tests' tiny config
        qg_decoder="reference",
        cpu_matmul=matmul,  # type: ignore[arg-type]
    )
    original = beam_search.SearchState.advance
    beam_search.SearchState.advance = recording(seen)  # type: ignore[method-assign]
    try:
        rows = sample_rows()
        result = Q2Scorer(config).score([r["response"] for r in rows], [r["knowledge"] for r in rows])
    finally:
        beam_search.SearchState.advance = original  # type: ignore[method-assign]
    return seen, [r.q2 for r in result.responses]


def report(name: str, seen: Ranked) -> None:
    found = margins(seen)
    gap = min(g for g, _ in found)
    relative = min(g / max(m, 1e-30) for g, m in found)
    print(
        f"{name}: {len(found)} decisions, smallest gap {gap:.3g}, smallest gap / magnitude {relative:.3g} "
        f"(about {relative / 2**-24:.0f} float32 ulps), gaps under 1e-4: {sum(g < 1e-4 for g, _ in found)}",
        flush=True,
    )


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    rows = sample_rows()
    with tempfile.TemporaryDirectory(prefix="q2-margins-") as folder:
        paths = build_tiny_models(folder, [r["response"] for r in rows] + [r["knowledge"] for r in rows])
        runs = {(t, m): run(paths, paths["qg"], t, m) for m in ("onednn", "blas") for t in (1, 2)}
        base_seen, base_scores = runs[(2, "onednn")]
        report("tiny QG, 2 threads, onednn", base_seen)
        for (threads, matmul), (seen, scores) in runs.items():
            aligned = [len(a) for a in seen] == [len(b) for b in base_seen]
            drift = max((abs(x - y) for a, b in zip(seen, base_seen) for x, y in zip(a, b)), default=0.0)
            # what a decision reads: the gaps between neighbours (a move of all of an input's
            # candidates together, e.g. its log-softmax's normalizer, changes no decision)
            gaps = max(
                (
                    abs((a[i] - a[i + 1]) - (b[i] - b[i + 1]))
                    for a, b in zip(seen, base_seen)
                    for i in range(min(len(a), len(b)) - 1)
                ),
                default=0.0,
            )
            closest = max(
                (
                    abs((a[i] - a[i + 1]) - (b[i] - b[i + 1])) / max(b[i] - b[i + 1], 1e-30)
                    for a, b in zip(seen, base_seen)
                    for i in range(min(len(a), len(b)) - 1)
                ),
                default=0.0,
            )  # a decision flips where a gap moves by all of itself
            ulps = max(
                (
                    abs((a[i] - a[i + 1]) - (b[i] - b[i + 1])) / max(abs(b[i]), abs(b[i + 1]), 1e-30) / 2**-24
                    for a, b in zip(seen, base_seen)
                    for i in range(min(len(a), len(b)) - 1)
                ),
                default=0.0,
            )
            nan = float("nan")
            print(
                f"{threads} threads, {matmul}: aligned {aligned}, largest move of a candidate's score "
                f"{drift if aligned else nan:.3g}, of a gap between neighbours {gaps if aligned else nan:.3g} "
                f"(the most, as a share of that gap: {closest if aligned else nan:.1%}; as float32 ulps of "
                f"the pair's magnitude: {ulps if aligned else nan:.1f}), "
                f"same scores {scores == base_scores}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
