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


@dataclass(frozen=True)
class Group:
    """Consecutive inputs of a merged beam search searched as their own `beam_search` would search
    them, with their own length limits (`max_length`, `min_length` as `beam_search`'s)."""

    inputs: int
    max_length: int
    min_length: int = 0


def beam_search(
    step: Callable[..., torch.Tensor],
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
    groups: Sequence[Group] | None = None,
    may_leave: Callable[[list[int]], bool] | None = None,
) -> list[list[list[int]]]:
    """Each input's `num_return_sequences` best sequences (best first), as transformers 3.2's
    `generate(num_beams=..., do_sample=False)` returned them for an encoder-decoder model: the
    decoder start token, the tokens, and the end token when the sequence is shorter than
    `max_length` (no padding).

    `step(tokens, beam_idx)` runs the decoder on the last token of each of the
    `batch_size * num_beams` rows (rows `i * num_beams ...` belong to input `i`) and returns the
    next-token logits, one row each; `beam_idx` (None on the first step) says which row's state
    each row continues, so the step reorders its cache by it first.

    With `groups` (consecutive inputs summing to `batch_size`; `max_length` and `min_length` are
    then the groups'), each group is searched as a `beam_search` of its inputs alone with its
    limits would search it, as long as the step gives its rows the same logits: the step is called
    as `step(tokens, beam_idx, running)` with the rows of the groups in `running` (indices, in
    order) and `beam_idx` indexing the rows of its previous call. A group stops searching when all
    its inputs are done or at its `max_length`; its rows stop running when `may_leave(the groups
    left)` allows it (else they run on, their results unused, as a done input's rows do).
    """
    if groups is None:
        spec = [Group(batch_size, max_length, min_length)]
    else:
        spec = list(groups)
        assert sum(g.inputs for g in spec) == batch_size
    first = [sum(g.inputs for g in spec[:k]) for k in range(len(spec))]
    members = [range(first[k], first[k] + g.inputs) for k, g in enumerate(spec)]
    hyps = [Hypotheses(num_beams, length_penalty, early_stopping) for _ in range(batch_size)]
    done = [False] * batch_size
    seqs = [[start_id] for _ in range(batch_size * num_beams)]
    # the first step continues the first beam only
    scores_of = [0.0 if k == 0 else -1e9 for _ in range(batch_size) for k in range(num_beams)]
    token_of = [start_id] * (batch_size * num_beams)
    parent = list(range(batch_size * num_beams))  # the row whose state each row continues
    searching = [k for k, g in enumerate(spec) if g.inputs > 0 and g.max_length > 1]
    for k in range(len(spec)):  # a limit of one token: the start token is every beam
        if k not in searching:
            for b in members[k]:
                for r in range(b * num_beams, (b + 1) * num_beams):
                    hyps[b].add(seqs[r], scores_of[r])
    running = list(searching)
    previous: list[int] | None = None  # the rows of the step's previous call
    cur_len = 1
    while searching:
        inputs = [b for k in running for b in members[k]]
        rows = [b * num_beams + j for b in inputs for j in range(num_beams)]
        beam_idx = None
        if previous is not None:
            position = {r: i for i, r in enumerate(previous)}
            beam_idx = torch.tensor([position[parent[r]] for r in rows], dtype=torch.long, device=device)
        tokens = torch.tensor([token_of[r] for r in rows], dtype=torch.long, device=device)
        logits = step(tokens, beam_idx) if groups is None else step(tokens, beam_idx, list(running))
        previous = rows
        scores = torch.log_softmax(logits.float(), dim=-1)
        start = 0
        for k in running:
            n = spec[k].inputs * num_beams
            if cur_len < spec[k].min_length:
                if n == len(rows):
                    scores[:, eos_id] = NEG_INF
                else:
                    scores[start : start + n, eos_id] = NEG_INF
            start += n
        if no_repeat_ngram_size > 0:
            banned = [
                (i, t) for i, r in enumerate(rows) for t in banned_ngram_tokens(seqs[r], no_repeat_ngram_size)
            ]
            if banned:
                i, t = zip(*banned)
                scores[list(i), list(t)] = NEG_INF
        vocab = scores.shape[-1]
        current = torch.tensor([scores_of[r] for r in rows], dtype=torch.float, device=device)
        next_scores = (scores + current[:, None]).view(len(inputs), num_beams * vocab)
        next_scores, next_tokens = torch.topk(next_scores, 2 * num_beams, dim=1, largest=True, sorted=True)
        top_scores, top_tokens = next_scores.tolist(), next_tokens.tolist()
        chosen: dict[int, list[tuple[float, int, int]]] = {}  # input -> (score, token, row it continues)
        for a, b in enumerate(inputs):
            if done[b]:
                chosen[b] = [(0.0, pad_id, b * num_beams + k) for k in range(num_beams)]
                continue
            beam: list[tuple[float, int, int]] = []
            for rank, (score, index) in enumerate(zip(top_scores[a], top_tokens[a])):
                row, token = b * num_beams + index // vocab, index % vocab
                if token == eos_id:
                    if rank < num_beams:  # an ending below the top num_beams is not a hypothesis
                        hyps[b].add(list(seqs[row]), score)
                else:
                    beam.append((score, token, row))
                if len(beam) == num_beams:
                    break
            done[b] = hyps[b].is_done(top_scores[a][0], cur_len)
            chosen[b] = beam
        still = []
        for k in running:
            if k in searching and all(done[b] for b in members[k]):
                # as its own search: it ends before taking the step's beams (should its rows run on,
                # each continues itself)
                for r in range(first[k] * num_beams, (first[k] + spec[k].inputs) * num_beams):
                    token_of[r], parent[r] = pad_id, r
                continue
            ended = [c for b in members[k] for c in chosen[b]]
            parents = [seqs[row] for _, _, row in ended]
            for r, (score, token, row), seq in zip(range(first[k] * num_beams, len(seqs)), ended, parents):
                scores_of[r], token_of[r], parent[r] = score, token, row
                seqs[r] = seq + [token]
            if k in searching and cur_len + 1 >= spec[k].max_length:
                # the length limit: every open beam of an input not done is a hypothesis, at its full length
                for b in members[k]:
                    if not done[b]:
                        for r in range(b * num_beams, (b + 1) * num_beams):
                            hyps[b].add(seqs[r], scores_of[r])
                continue
            if k in searching:
                still.append(k)
        searching = still
        if searching and searching != running:
            if may_leave is None or may_leave(list(searching)):
                running = list(searching)
            else:  # the ended groups' rows run on as a done input's rows do (pad tokens)
                for k in running:
                    if k not in searching:
                        for b in members[k]:
                            done[b] = True
        cur_len += 1
    return [
        [
            hyp + [eos_id] if len(hyp) < spec[k].max_length else hyp
            for hyp in hyps[b].best(num_return_sequences)
        ]
        for k in range(len(spec))
        for b in members[k]
    ]
