"""Beam search by transformers 3.2's rules (`q2_metric.models.paper.beam_search`), the length limit included.

Expected values: the sequences transformers 3.2.0's `generate` returned for tiny T5s saved by 3.2
(tests/data/ref32/record_beams.py, run in the conformance environment: beams.json and
beam_models/), one prompt per call as the released code called it, for beam 5 and 4, limits of 3
to 12 tokens, models whose beams end at different steps and one whose end token ties with another
token; and, for the rules themselves, sequences worked out by hand below.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch
from support.data import TEST_DATA

from q2_metric.config import Q2Config
from q2_metric.models.hf_qg import HFQuestionGenerator
from q2_metric.models.paper.beam_search import Hypotheses, banned_ngram_tokens, beam_search

REF32 = TEST_DATA / "ref32"
RECORDED = json.loads((REF32 / "beams.json").read_text(encoding="utf-8"))
PAD, EOS = 0, 1


def _padded(seqs: list[list[int]], width: int) -> list[list[int]]:
    """Sequences padded as 3.2 padded one call's output (`width` from the recorded output)."""
    return [s + [PAD] * (width - len(s)) for s in seqs]


@pytest.fixture(scope="module", params=sorted(RECORDED["models"]))
def recorded_model(request, tmp_path_factory):
    """A QG model folder: the 3.2-saved weights beside the ref32 T5 vocabulary."""
    name = request.param
    folder = tmp_path_factory.mktemp(f"beam_{name}")
    for f in (REF32 / "t5").iterdir():
        if f.name not in ("pytorch_model.bin", "config.json"):
            shutil.copy(f, folder / f.name)
    for f in (REF32 / "beam_models" / name).iterdir():
        shutil.copy(f, folder / f.name)
    return name, str(folder)


def _generator(folder: str, **options) -> HFQuestionGenerator:
    return HFQuestionGenerator(Q2Config(qg_model=folder, device="cpu", dtype="float32", **options))


@pytest.mark.parametrize("decoder", ["reference", "fast"])
def test_the_project_returns_what_transformers_3_2_returned(recorded_model, decoder):
    name, folder = recorded_model
    prompts = RECORDED["prompts"]
    qg = _generator(folder, qg_decoder=decoder)
    assert qg.decoder == decoder
    assert qg.tokenization.endswith("+xbias")  # saved by 3.2: the cross-attention bias applies
    checked = 0
    for run in RECORDED["models"][name]["runs"]:
        s = run["setting"]
        qg.config = qg.config.replace(max_question_length=run["max_length"], **s)
        got = qg.generate_batch_ids(prompts)  # one padded batch of prompts of different lengths
        for i, expected in enumerate(run["beams"]):
            assert _padded(got[i], len(expected[0])) == expected, (name, s, run["max_length"], i)
            checked += 1
    assert checked == len(RECORDED["settings"]) * len(RECORDED["max_lengths"]) * len(prompts)


def test_the_fast_path_returns_what_the_reference_path_returns(recorded_model):
    name, folder = recorded_model
    run = RECORDED["models"][name]["runs"][1]
    options = dict(max_question_length=run["max_length"], **run["setting"])
    fast = _generator(folder, qg_decoder="fast", **options)
    reference = _generator(folder, qg_decoder="reference", **options)
    assert fast.decoder == "fast" and reference.decoder == "reference"
    assert fast.generate_batch_ids(RECORDED["prompts"]) == reference.generate_batch_ids(RECORDED["prompts"])


def test_greedy_decoding_is_3_2s(recorded_model):
    name, folder = recorded_model
    qg = _generator(folder, decoding="greedy", max_question_length=8)
    got = qg.generate_batch_ids(RECORDED["prompts"])
    for ids, expected in zip(got, RECORDED["models"][name]["greedy_max_length_8"]):
        assert ids[0][: len(expected)] == expected and set(ids[0][len(expected) :]) <= {PAD}


def test_the_recorded_cases_are_ones_where_transformers_5_finalizes_otherwise():
    """The recorded set exercises the difference: transformers 5's own `generate()` returns other
    sequences on many of them (so the comparison above would fail on the old code)."""
    from transformers import T5ForConditionalGeneration

    from q2_metric.models.paper.t5_cross_bias import attach_cross_attention_bias

    prompts = RECORDED["prompts"]
    width = max(map(len, prompts))
    ids = torch.tensor([p + [PAD] * (width - len(p)) for p in prompts])
    mask = torch.tensor([[1] * len(p) + [0] * (width - len(p)) for p in prompts])
    differ = 0
    for name in ("eos", "tie"):
        model = T5ForConditionalGeneration.from_pretrained(str(REF32 / "beam_models" / name)).eval()
        attach_cross_attention_bias(model, str(REF32 / "beam_models" / name))
        for run in RECORDED["models"][name]["runs"]:
            s, k = run["setting"], run["setting"]["num_return_sequences"]
            with torch.no_grad():
                out = model.generate(
                    input_ids=ids, attention_mask=mask, max_length=run["max_length"], do_sample=False, **s
                ).tolist()
            for i, expected in enumerate(run["beams"]):
                differ += _padded(out[i * k : (i + 1) * k], len(expected[0])) != _padded(
                    expected, len(out[0])
                )
    assert differ >= 20


# --- the rules, on a scripted decoder (vocabulary: 0 start/pad, 1 end, 2 "a", 3 "b") ---


def scripted(table: dict[tuple[int, ...], dict[int, float]]):
    """A `step` whose next-token probabilities depend on the row's sequence so far."""
    rows: list[list[int]] = []

    def step(tokens, beam_idx):
        nonlocal rows
        if beam_idx is None:
            rows = [[t] for t in tokens.tolist()]
        else:
            rows = [rows[b] + [t] for b, t in zip(beam_idx.tolist(), tokens.tolist())]
        logits = torch.full((len(rows), 4), -math.inf)
        for r, seq in enumerate(rows):
            for token, p in table.get(tuple(seq), {2: 1.0}).items():
                logits[r, token] = math.log(p)
        return logits

    return step


def test_at_the_limit_open_beams_below_an_ending_one_are_hypotheses():
    # step 1: a .5, b .4, end .1 -> beams [0 a], [0 b]. Step 2, the last (max_length 3):
    # [0 a]: end .6, b .3, a .1; [0 b]: end .5, a .26, b .24. Candidates by probability:
    # a-end .30, b-end .20 (ranks 0-1: hypotheses [0 a] and [0 b], scores log .3 / 2, log .2 / 2),
    # a b .15, b a .104 (the open beams). At the limit 3.2 adds the open beams at length 3:
    # log .15 / 3 = -0.632 beats [0 b]'s -0.805, so the best two are [0 a] end (-0.602) and [0 a b].
    # (transformers 5 adds only the top two candidates of the last step: [0 a] end and [0 b] end.)
    table = {
        (0,): {1: 0.1, 2: 0.5, 3: 0.4},
        (0, 2): {1: 0.6, 3: 0.3, 2: 0.1},
        (0, 3): {1: 0.5, 2: 0.26, 3: 0.24},
    }
    out = beam_search(
        scripted(table),
        1,
        num_beams=2,
        num_return_sequences=2,
        max_length=3,
        start_id=0,
        eos_id=EOS,
        pad_id=PAD,
        early_stopping=False,
    )
    assert out == [[[0, 2, 1], [0, 2, 3]]]


def test_early_stopping_ends_an_input_when_its_hypotheses_are_full():
    # the same scores: at step 2 the two endings fill the list, so with early stopping the input is
    # done there and the open beams are never added
    table = {
        (0,): {1: 0.1, 2: 0.5, 3: 0.4},
        (0, 2): {1: 0.6, 3: 0.3, 2: 0.1},
        (0, 3): {1: 0.5, 2: 0.26, 3: 0.24},
    }
    out = beam_search(
        scripted(table),
        1,
        num_beams=2,
        num_return_sequences=2,
        max_length=3,
        start_id=0,
        eos_id=EOS,
        pad_id=PAD,
        early_stopping=True,
    )
    assert out == [[[0, 2, 1], [0, 3, 1]]]


def test_an_ending_ranked_below_num_beams_is_not_a_hypothesis():
    # step 1: a .5, b .3, end .2 (rank 2 of 2 beams: dropped); step 2 (the last): every beam goes on
    table = {(0,): {1: 0.2, 2: 0.5, 3: 0.3}, (0, 2): {2: 0.9, 3: 0.1}, (0, 3): {2: 0.9, 3: 0.1}}
    out = beam_search(
        scripted(table),
        1,
        num_beams=2,
        num_return_sequences=2,
        max_length=3,
        start_id=0,
        eos_id=EOS,
        pad_id=PAD,
    )
    assert out == [[[0, 2, 2], [0, 3, 2]]]


def test_hypotheses_keep_3_2s_order_on_ties():
    h = Hypotheses(num_beams=2, length_penalty=1.0, early_stopping=False)
    h.add([0, 5], -2.0)  # score -1.0
    h.add([0, 6], -2.0)  # -1.0, the list is full
    h.add([0, 7], -2.0)  # a tie does not enter (strictly better only)
    h.add([0, 8, 8], -3.0)  # -1.0: no
    assert [b for _, b in h.beams] == [[0, 5], [0, 6]]
    assert h.best(2) == [[0, 6], [0, 5]]  # on a tie the one added last comes first
    h.add([0, 9], -1.0)  # -0.5 enters; of the tied worst the first added goes
    assert h.best(2) == [[0, 9], [0, 6]]


def test_banned_ngrams_as_3_2_computed_them():
    # 3-grams of [0 5 6 5 6]: (0 5 6) (5 6 5) (6 5 6); the next token after (5 6) may not be 5
    assert banned_ngram_tokens([0, 5, 6, 5, 6], 3) == [5]
    assert banned_ngram_tokens([0, 5], 3) == []  # fewer than 2 tokens before the next one: none
    assert banned_ngram_tokens([0, 5, 5], 2) == [5]  # bigrams (0 5) (5 5): after 5, not 5
    assert banned_ngram_tokens([0, 5, 5, 5], 2) == [5, 5]  # as 3.2 listed them, once per occurrence


class HistoryModel:
    """A stand-in decoder whose next-token logits are a fixed random function of the row's tokens
    so far (its history), kept through `beam_idx` as a cache is; it records the rows of each call."""

    def __init__(self, vocab: int = 9, eos_bias: float = 0.0) -> None:
        self.vocab, self.eos_bias = vocab, eos_bias
        self.histories: list[tuple[int, ...]] = []
        self.calls: list[int] = []

    def __call__(self, tokens, beam_idx, running=None):
        if beam_idx is None:
            self.histories = [()] * len(tokens)
        else:
            self.histories = [self.histories[i] for i in beam_idx.tolist()]
        self.histories = [h + (t,) for h, t in zip(self.histories, tokens.tolist())]
        self.calls.append(len(tokens))
        rows = []
        for h in self.histories:
            g = torch.Generator().manual_seed(hash(h) % (2**31))
            logits = torch.randn(self.vocab, generator=g) * 2
            logits[EOS] += self.eos_bias * (len(h) - 2)  # the end grows likelier with the length
            rows.append(logits)
        return torch.stack(rows)


def _tagged(model: HistoryModel, group: int | None, groups, running=None):
    """`model` with each row's history starting with its group's index and its input's index in the
    group, so that a row's logits are those of the same row in its group's own search."""
    running = list(range(len(groups))) if running is None else running

    def step(tokens, beam_idx):
        tags = [
            (group if group is not None else k, i)
            for k in running
            for i in range(groups[k].inputs)
            for _ in range(3)
        ]
        if beam_idx is None:
            model.histories = [(t,) for t in tags]
            return model(tokens, torch.arange(len(tokens)))
        return model(tokens, beam_idx)

    return step
