"""How `tiny_builder.TABLE_SEED` was picked: every search the tiny QG's table can make, simulated by
3.2's rules over the table's rows (the logits `chain_qg` builds), for each seed of the table's draws.

A search is fixed by its opening state (the answer's word picks one of the non-ending states), so
each seed is measured on all of them, at the tests' 16 tokens and the default 128, with the
pipeline's beam settings (5 beams, 5 returned, n-gram ban 3, early stopping). A margin is a gap
relative to the larger score, as in `tests/unit/models/test_tiny_margins.py`: between the ranked
candidates up to the one that fills the beams and the next, between a hypothesis that meets a full
list and its worst, and between the returned hypotheses. Prints the seeds with the widest smallest
margin (201 of 0-399: 6.2e-3; about 20 seconds).

    python benchmarks/experiments/chain_seeds.py --seeds 400
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np
import torch

from q2_metric.models.paper import beam_search
from q2_metric.models.tiny_builder import CHAIN, FLOOR, chain_table

PAD, EOS = 0, 1  # token ids of the simulation; state s is token s + 2


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1.0)


def smallest_margin(seed: int, max_length: int) -> float:
    """The smallest relative margin of every decision of every search the seed's table makes."""
    table, ends = chain_table(np.random.default_rng([seed]))
    rows = np.full((CHAIN, CHAIN + 2), -FLOOR)
    for j, row in enumerate(table):
        for s, value in row:
            rows[j, EOS if s == "eos" else s + 2] = value
    margins = [1.0]
    add = beam_search.Hypotheses.add

    def recorded_add(self: beam_search.Hypotheses, hyp: list[int], sum_logprobs: float) -> None:
        if len(self.beams) >= self.num_beams:
            margins.append(_relative(sum_logprobs / len(hyp) ** self.length_penalty, self.worst_score))
        add(self, hyp, sum_logprobs)

    beam_search.Hypotheses.add = recorded_add  # type: ignore[method-assign]
    try:
        for opening in (j for j in range(CHAIN) if j not in ends):
            rules = beam_search.BeamRules(
                num_beams=5,
                max_length=max_length,
                start_id=PAD,
                eos_id=EOS,
                pad_id=PAD,
                num_return_sequences=5,
                no_repeat_ngram_size=3,
                early_stopping=True,
            )
            state = beam_search.SearchState(1, rules)
            while not state.finished:
                tokens = state.tokens().tolist()
                logits = torch.tensor(np.stack([rows[opening if t == PAD else t - 2] for t in tokens]))
                top, vocab = state.candidates(logits.float(), torch.tensor(state.scores_of))
                values, indices = top.values[0].tolist(), top.indices[0].tolist()
                kept = itertools.accumulate(i % vocab != EOS for i in indices)
                fills = next(i for i, n in enumerate(kept) if n == rules.num_beams)
                ranked = values[: fills + 2]
                margins += [_relative(x, y) for x, y in itertools.pairwise(ranked)]
                state.advance(logits.float())
            scores = sorted(score for score, _ in state.hyps[0].beams)
            margins += [_relative(x, y) for x, y in itertools.pairwise(scores)]
    finally:
        beam_search.Hypotheses.add = add  # type: ignore[method-assign]
    return min(margins)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=400, help="seeds 0 .. N-1")
    args = ap.parse_args()
    found = sorted(
        ((min(smallest_margin(seed, 16), smallest_margin(seed, 128)), seed) for seed in range(args.seeds)),
        reverse=True,
    )
    for margin, seed in found[:5]:
        print(f"seed {seed}: smallest relative margin {margin:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
