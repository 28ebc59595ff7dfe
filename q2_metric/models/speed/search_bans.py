"""The n-gram ban of beam search over every row at once (the fast paths' `SearchState`).

`SearchState.banned` applies 3.2's `calc_banned_ngram_tokens` row by row in Python: at a few
hundred beam rows that is milliseconds per decoder step, which on a GPU the device waits for. Here
the same pairs come from tensor operations over all rows: for each row, the windows of `n - 1`
tokens equal to its last `n - 1` tokens, and the token after each.
"""

from __future__ import annotations

import torch

from q2_metric.models.paper.beam_search import SearchState


def banned_pairs(seqs: list[list[int]], n: int) -> list[tuple[int, int]]:
    """The (row, token) pairs 3.2's rule bans for rows `seqs` (each row's tokens so far, all rows
    of one length), in the order `SearchState.banned` gives them.

    >>> banned_pairs([[0, 5, 6, 5], [0, 5, 6, 7]], 2)
    [(0, 6)]
    """
    length = len(seqs[0]) if seqs else 0
    if n <= 0 or length + 1 < n:
        return []
    tokens = torch.tensor(seqs, dtype=torch.long)
    if n == 1:  # every token a row has is banned
        rows, at = torch.ones_like(tokens, dtype=torch.bool).nonzero(as_tuple=True)
    else:
        windows = tokens.unfold(1, n - 1, 1)[:, : length - n + 1]  # window i: tokens i .. i + n - 2
        prefix = tokens[:, length - n + 1 :]
        rows, at = (windows == prefix[:, None, :]).all(-1).nonzero(as_tuple=True)
        at = at + n - 1
    return list(zip(rows.tolist(), tokens[rows, at].tolist()))


class FastSearchState(SearchState):
    """`SearchState` with the n-gram ban over all rows at once: the same pairs, so the same search."""

    def banned(self) -> list[tuple[int, int]]:
        return banned_pairs(self.seqs, self.rules.no_repeat_ngram_size)
