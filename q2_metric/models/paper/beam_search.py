"""Beam search by transformers 3.2's rules, the version the released code ran on.

transformers 5's `generate()` finalizes beams by other rules than 3.2's `_generate_beam_search`
did, and the two differ on inputs whose beams reach the length limit:

- 3.2 scores a hypothesis by `sum of log-probabilities / len(hyp) ** length_penalty`, where `hyp`
  holds the decoder start token and the generated tokens without the end token. A beam ended by
  the end token at step `t` has `len(hyp) = t` (5 divides by the same number there), but a beam
  still open at `max_length` has `len(hyp) = max_length`; 5 divides it by `max_length - 1`.
- At `max_length` 3.2 adds the `num_beams` open beams, that is the best `num_beams` candidates of
  the last step that do not end (they can rank below an ending one, up to `2 * num_beams`); 5 adds
  only the top `num_beams` candidates of the last step, ending or not.
- 3.2 keeps its `num_beams` best hypotheses in a list (`BeamHypotheses`): a new one enters when the
  list is not full or it beats the worst strictly; the worst goes (the first added on a tie); the
  returned sequences are the list sorted by score, best first (on a tie, the one added last first).

`beam_search` implements those rules over a `step` function that runs one decoder step, so the
rules are pure and testable without a model; `hf_qg` gives it a T5 with its cache. Ids and
scores are computed as 3.2 computed them: float32 log-softmax plus the beam's float32 score, top
`2 * num_beams` over all beams of an input, hypothesis scores in Python floats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

NEG_INF = float("-inf")


@dataclass
class Hypotheses:
    """transformers 3.2's `BeamHypotheses`: the `num_beams` best finished hypotheses of one input."""

    num_beams: int
    length_penalty: float
    early_stopping: bool
    beams: list[tuple[float, list[int]]] = field(default_factory=list)
    worst_score: float = 1e9

    def add(self, hyp: list[int], sum_logprobs: float) -> None:
        score = sum_logprobs / len(hyp) ** self.length_penalty
        if len(self.beams) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp))
            if len(self.beams) > self.num_beams:
                ranked = sorted((s, i) for i, (s, _) in enumerate(self.beams))
                del self.beams[ranked[0][1]]
                self.worst_score = ranked[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs: float, cur_len: int) -> bool:
        if len(self.beams) < self.num_beams:
            return False
        if self.early_stopping:
            return True
        return self.worst_score >= best_sum_logprobs / cur_len**self.length_penalty

    def best(self, n: int) -> list[list[int]]:
        """The `n` best hypotheses, best first (on equal scores the one added last first)."""
        ranked = sorted(self.beams, key=lambda b: b[0])
        return [ranked.pop()[1] for _ in range(n)]


def banned_ngram_tokens(tokens: Sequence[int], n: int) -> list[int]:
    """The tokens that would repeat an n-gram of `tokens` (3.2's `calc_banned_ngram_tokens` for one
    hypothesis: `tokens` includes the decoder start token)."""
    cur_len = len(tokens)
    if n <= 0 or cur_len + 1 < n:
        return []
    prefix = tuple(tokens[cur_len + 1 - n :])
    return [tokens[i + n - 1] for i in range(cur_len - n + 1) if tuple(tokens[i : i + n - 1]) == prefix]


def beam_search(
    step: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
    batch_size: int,
    *,
    num_beams: int,
    max_length: int,
    start_id: int,
    eos_id: int,
    pad_id: int,
    num_return_sequences: int = 1,
    no_repeat_ngram_size: int = 0,
    early_stopping: bool = False,
    length_penalty: float = 1.0,
    min_length: int = 0,
    device: torch.device | str = "cpu",
) -> list[list[list[int]]]:
    """Each input's `num_return_sequences` best sequences (best first), as transformers 3.2's
    `generate(num_beams=..., do_sample=False)` returned them for an encoder-decoder model: the
    decoder start token, the tokens, and the end token when the sequence is shorter than
    `max_length` (no padding).

    `step(tokens, beam_idx)` runs the decoder on the last token of each of the
    `batch_size * num_beams` rows (rows `i * num_beams ...` belong to input `i`) and returns the
    next-token logits, one row each; `beam_idx` (None on the first step) says which row's state
    each row continues, so the step reorders its cache by it first.
    """
    rows = batch_size * num_beams
    hyps = [Hypotheses(num_beams, length_penalty, early_stopping) for _ in range(batch_size)]
    done = [False] * batch_size
    seqs = [[start_id] for _ in range(rows)]
    beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float, device=device)
    beam_scores[:, 1:] = -1e9  # the first step continues the first beam only
    beam_scores = beam_scores.view(-1)
    tokens = torch.full((rows,), start_id, dtype=torch.long, device=device)
    beam_idx = None
    cur_len = 1
    while cur_len < max_length:
        scores = torch.log_softmax(step(tokens, beam_idx).float(), dim=-1)
        if cur_len < min_length:
            scores[:, eos_id] = NEG_INF
        if no_repeat_ngram_size > 0:
            banned = [
                (r, t) for r, seq in enumerate(seqs) for t in banned_ngram_tokens(seq, no_repeat_ngram_size)
            ]
            if banned:
                r, t = zip(*banned)
                scores[list(r), list(t)] = NEG_INF
        vocab = scores.shape[-1]
        next_scores = (scores + beam_scores[:, None]).view(batch_size, num_beams * vocab)
        next_scores, next_tokens = torch.topk(next_scores, 2 * num_beams, dim=1, largest=True, sorted=True)
        top_scores, top_tokens = next_scores.tolist(), next_tokens.tolist()
        chosen: list[tuple[float, int, int]] = []  # (score, token, row it continues)
        for b in range(batch_size):
            if done[b]:
                chosen += [(0.0, pad_id, b * num_beams + k) for k in range(num_beams)]
                continue
            beam: list[tuple[float, int, int]] = []
            for rank, (score, index) in enumerate(zip(top_scores[b], top_tokens[b])):
                row, token = b * num_beams + index // vocab, index % vocab
                if token == eos_id:
                    if rank < num_beams:  # an ending below the top num_beams is not a hypothesis
                        hyps[b].add(list(seqs[row]), score)
                else:
                    beam.append((score, token, row))
                if len(beam) == num_beams:
                    break
            done[b] = hyps[b].is_done(top_scores[b][0], cur_len)
            chosen += beam
        if all(done):
            break
        beam_scores = torch.tensor([c[0] for c in chosen], dtype=torch.float, device=device)
        tokens = torch.tensor([c[1] for c in chosen], dtype=torch.long, device=device)
        beam_idx = torch.tensor([c[2] for c in chosen], dtype=torch.long, device=device)
        seqs = [seqs[row] + [token] for _, token, row in chosen]
        cur_len += 1
    # the length limit: every open beam of an input not done is a hypothesis, at its full length
    final = beam_scores.tolist()
    for b in range(batch_size):
        if not done[b]:
            for row in range(b * num_beams, (b + 1) * num_beams):
                hyps[b].add(seqs[row], final[row])
    return [
        [hyp + [eos_id] if len(hyp) < max_length else hyp for hyp in h.best(num_return_sequences)]
        for h in hyps
    ]
