"""The fast paths' beam-search state: each step's bookkeeping over every row at once.

`SearchState` (the reference path) takes a step row by row and input by input in Python, as 3.2's
`_generate_beam_search` did: at a few hundred beam rows that is milliseconds per decoder step,
which on a GPU the device waits for. `FastSearchState` makes the same decisions with array
operations on the host:

- the n-gram ban: for each row, the windows of `n - 1` tokens equal to its last `n - 1` tokens,
  and the token after each (`banned_pairs`);
- the beams: each open input continues its first `num_beams` candidates that do not end, in rank
  order (an input's `2 * num_beams` candidates hold at most `num_beams` endings, one per beam, so
  `num_beams` remain);
- the hypotheses: an ending ranked in the top `num_beams` enters 3.2's `Hypotheses`, one by one in
  rank order, as the reference loop meets them before its beams fill (the only Python loop left,
  over endings alone);
- the done test: 3.2's `is_done` for every open input at once, in float64 as Python's floats.

The candidates (log-softmax, bans, the beam scores' float32 sums, top-k) are the reference path's
own `SearchState.candidates`, so they are the same.
"""

from __future__ import annotations

import numpy as np
import torch

from q2_metric.models.paper.beam_search import BeamRules, Hypotheses, SearchState


def banned_pairs(seqs: list[list[int]] | np.ndarray, n: int) -> list[tuple[int, int]]:
    """The (row, token) pairs 3.2's rule bans for rows `seqs` (each row's tokens so far, all rows
    of one length), in the order `SearchState.banned` gives them.

    >>> banned_pairs([[0, 5, 6, 5], [0, 5, 6, 7]], 2)
    [(0, 6)]
    """
    length = len(seqs[0]) if len(seqs) else 0
    if n <= 0 or length + 1 < n:
        return []
    tokens = torch.as_tensor(np.asarray(seqs, dtype=np.int64))
    if n == 1:  # every token a row has is banned
        rows, at = torch.ones_like(tokens, dtype=torch.bool).nonzero(as_tuple=True)
    else:
        windows = tokens.unfold(1, n - 1, 1)[:, : length - n + 1]  # window i: tokens i .. i + n - 2
        prefix = tokens[:, length - n + 1 :]
        rows, at = (windows == prefix[:, None, :]).all(-1).nonzero(as_tuple=True)
        at = at + n - 1
    return list(zip(rows.tolist(), tokens[rows, at].tolist()))


class FastSearchState(SearchState):
    """`SearchState`'s decisions, each step over every row at once: the rows' tokens are one
    array (`ids`), their float32 scores another (`beam_scores`), the inputs' done flags a third."""

    def __init__(self, inputs: int, rules: BeamRules, device: torch.device | str = "cpu") -> None:
        beams = rules.num_beams
        self.inputs, self.rules, self.device = inputs, rules, device
        self.rows = inputs * beams
        self.hyps = [Hypotheses(beams, rules.length_penalty, rules.early_stopping) for _ in range(inputs)]
        self.ended = np.zeros(inputs, dtype=bool)
        self.ids = np.full((self.rows, 1), rules.start_id, dtype=np.int64)
        # the first step continues the first beam only
        self.beam_scores = np.tile(np.array([0.0] + [-1e9] * (beams - 1), dtype=np.float32), inputs)
        self.full = np.zeros(inputs, dtype=bool)  # each input's hypotheses: num_beams of them
        self.worst = np.full(inputs, 1e9)  # and the worst one's score (`Hypotheses.worst_score`)
        self.cur_len = 1
        self.finished = inputs == 0 or rules.max_length <= 1
        if self.finished:  # a limit of one token: the start token is every beam
            self._add_open_beams()

    def tokens(self) -> torch.Tensor:
        return torch.from_numpy(self.ids[:, -1].copy()).to(self.device)

    def banned(self) -> list[tuple[int, int]]:
        return banned_pairs(self.ids, self.rules.no_repeat_ngram_size)

    def _add(self, b: int, row: int, score: float) -> None:
        hyps = self.hyps[b]
        hyps.add(self.ids[row].tolist(), score)
        self.full[b], self.worst[b] = len(hyps.beams) >= self.rules.num_beams, hyps.worst_score

    def _add_open_beams(self) -> None:
        beams = self.rules.num_beams
        for b in np.flatnonzero(~self.ended).tolist():
            for row in range(b * beams, (b + 1) * beams):
                self._add(b, row, float(self.beam_scores[row]))

    def advance(self, logits: torch.Tensor) -> torch.Tensor | None:
        r, beams = self.rules, self.rules.num_beams
        top, vocab = self.candidates(logits, torch.from_numpy(self.beam_scores))
        top_scores, top_index = top.values.cpu().numpy(), top.indices.cpu().numpy()
        rank_rows = np.arange(self.inputs)[:, None] * beams + top_index // vocab
        rank_tokens = top_index % vocab
        ends = rank_tokens == r.eos_id
        open_ = ~self.ended
        # an ending in the top num_beams of an open input is a hypothesis, in rank order
        for b, k in zip(*np.nonzero(ends[:, :beams] & open_[:, None])):
            self._add(int(b), int(rank_rows[b, k]), float(top_scores[b, k]))
        # 3.2's `is_done`: the hypotheses full and (early stopping, or no open beam can beat them)
        best = top_scores[:, 0].astype(np.float64) / self.cur_len**r.length_penalty
        done_now = self.full & (r.early_stopping | (self.worst >= best))
        self.ended = self.ended | (open_ & done_now)
        if self.ended.all():  # 3.2 ends before taking the step's beams
            self.finished = True
            return None
        # each input's first num_beams candidates that do not end; a done input's rows run on
        # with pad tokens and score 0
        keep = ~ends & (np.cumsum(~ends, axis=1) <= beams)
        own = np.arange(self.rows).reshape(self.inputs, beams)
        was_open = open_[:, None]
        source = np.where(was_open, rank_rows[keep].reshape(self.inputs, beams), own).ravel()
        token = np.where(was_open, rank_tokens[keep].reshape(self.inputs, beams), r.pad_id).ravel()
        score = np.where(was_open, top_scores[keep].reshape(self.inputs, beams), np.float32(0)).ravel()
        self.ids = np.concatenate([self.ids[source], token[:, None]], axis=1)
        self.beam_scores = score.astype(np.float32)
        self.cur_len += 1
        if self.cur_len >= r.max_length:  # every open beam of an input not done, at its full length
            self._add_open_beams()
            self.finished = True
            return None
        return torch.from_numpy(source).to(self.device)
