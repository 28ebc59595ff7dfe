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

`SearchState` holds one batch's search (its hypotheses, n-gram ban and length limits) and takes
one decoder step's logits at a time; `beam_search` runs it over a `step` function that runs one
decoder step, so the rules are pure and testable without a model. Ids and scores are computed as
3.2 computed them: float32 log-softmax plus the beam's float32 score, top `2 * num_beams` over all
beams of an input, hypothesis scores in Python floats. (`models/speed/qg_fast.py` advances several
states with one step over all their rows; the rules stay here.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True)
class BeamRules:
    """The settings of 3.2's `generate(num_beams=..., do_sample=False)` that the search reads
    (`max_length` and `min_length` count the decoder start token)."""

    num_beams: int
    max_length: int
    start_id: int
    eos_id: int
    pad_id: int
    num_return_sequences: int = 1
    no_repeat_ngram_size: int = 0
    early_stopping: bool = False
    length_penalty: float = 1.0
    min_length: int = 0


class SearchState:
    """One batch's beam search by 3.2's rules: rows `i * num_beams ...` belong to input `i`."""

    def __init__(self, inputs: int, rules: BeamRules, device: torch.device | str = "cpu") -> None:
        beams = rules.num_beams
        self.inputs, self.rules, self.device = inputs, rules, device
        self.rows = inputs * beams
        self.hyps = [Hypotheses(beams, rules.length_penalty, rules.early_stopping) for _ in range(inputs)]
        self.done = [False] * inputs
        self.seqs = [[rules.start_id] for _ in range(self.rows)]
        # the first step continues the first beam only
        self.scores_of = [0.0 if k == 0 else -1e9 for _ in range(inputs) for k in range(beams)]
        self.cur_len = 1
        self.finished = inputs == 0 or rules.max_length <= 1
        if self.finished:  # a limit of one token: the start token is every beam
            self._add_open_beams()

    def tokens(self) -> torch.Tensor:
        """Each row's last token: what the next decoder step reads."""
        return torch.tensor([seq[-1] for seq in self.seqs], dtype=torch.long, device=self.device)

    def _add_open_beams(self) -> None:
        beams = self.rules.num_beams
        for b in range(self.inputs):
            if not self.done[b]:
                for r in range(b * beams, (b + 1) * beams):
                    self.hyps[b].add(self.seqs[r], self.scores_of[r])

    def banned(self) -> list[tuple[int, int]]:
        """The (row, token) pairs that the n-gram rule bans at this step."""
        n = self.rules.no_repeat_ngram_size
        return [(i, t) for i, seq in enumerate(self.seqs) for t in banned_ngram_tokens(seq, n)]

    def candidates(self, logits: torch.Tensor, beam_scores: torch.Tensor) -> tuple[Any, int]:
        """Each input's top `2 * num_beams` candidates of a step (3.2's `topk` over its beams'
        float32 log-probabilities plus each beam's float32 score, after the minimum-length and
        n-gram bans), and the vocabulary size that splits a candidate's index into beam and token."""
        r, beams = self.rules, self.rules.num_beams
        scores = torch.log_softmax(logits.float(), dim=-1)
        if self.cur_len < r.min_length:
            scores[:, r.eos_id] = NEG_INF
        banned = self.banned()
        if banned:
            rows, tokens = zip(*banned)
            scores[list(rows), list(tokens)] = NEG_INF
        vocab = scores.shape[-1]
        current = beam_scores.to(scores.device)
        return (scores + current[:, None]).view(self.inputs, beams * vocab).topk(2 * beams, dim=1), vocab

    def advance(self, logits: torch.Tensor) -> torch.Tensor | None:
        """Take one step's next-token logits (one row each); return which row's state each row
        continues (the cache's beam reorder), or None when the search has ended."""
        r, beams = self.rules, self.rules.num_beams
        top, vocab = self.candidates(logits, torch.tensor(self.scores_of, dtype=torch.float))
        top_scores, top_tokens = top.values.tolist(), top.indices.tolist()
        chosen: list[tuple[float, int, int]] = []  # per row: (score, token, the row it continues)
        for b in range(self.inputs):
            if self.done[b]:  # a done input's rows run on with pad tokens
                chosen += [(0.0, r.pad_id, b * beams + k) for k in range(beams)]
                continue
            beam: list[tuple[float, int, int]] = []
            for rank, (score, index) in enumerate(zip(top_scores[b], top_tokens[b])):
                row, token = b * beams + index // vocab, index % vocab
                if token == r.eos_id:
                    if rank < beams:  # an ending below the top num_beams is not a hypothesis
                        self.hyps[b].add(list(self.seqs[row]), score)
                else:
                    beam.append((score, token, row))
                if len(beam) == beams:
                    break
            self.done[b] = self.hyps[b].is_done(top_scores[b][0], self.cur_len)
            chosen += beam
        if all(self.done):  # 3.2 ends before taking the step's beams
            self.finished = True
            return None
        self.seqs = [self.seqs[row] + [token] for _, token, row in chosen]
        self.scores_of = [score for score, _, _ in chosen]
        self.cur_len += 1
        if self.cur_len >= r.max_length:  # every open beam of an input not done, at its full length
            self._add_open_beams()
            self.finished = True
            return None
        return torch.tensor([row for _, _, row in chosen], dtype=torch.long, device=self.device)

    def results(self) -> list[list[list[int]]]:
        """Each input's `num_return_sequences` best sequences (best first): the decoder start
        token, the tokens, and the end token when the sequence is shorter than `max_length`."""
        r = self.rules
        return [
            [hyp + [r.eos_id] if len(hyp) < r.max_length else hyp for hyp in h.best(r.num_return_sequences)]
            for h in self.hyps
        ]


def beam_search(
    step: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
    batch_size: int,
    *,
    device: torch.device | str = "cpu",
    **rules: Any,
) -> list[list[list[int]]]:
    """Each input's `num_return_sequences` best sequences (best first), as transformers 3.2's
    `generate(num_beams=..., do_sample=False)` returned them for an encoder-decoder model (no
    padding). `rules` are `BeamRules`' fields.

    `step(tokens, beam_idx)` runs the decoder on the last token of each of the
    `batch_size * num_beams` rows and returns the next-token logits, one row each; `beam_idx` (None
    on the first step) says which row's state each row continues, so the step reorders its cache
    by it first."""
    state = SearchState(batch_size, BeamRules(**rules), device)
    beam_idx = None
    while not state.finished:
        beam_idx = state.advance(step(state.tokens(), beam_idx))
    return state.results()
