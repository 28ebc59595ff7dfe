"""Stage "questions" with a long response: QG inputs past the limit counted as cut, or (with
`long_inputs="windows"`) given the window of whole sentences around their candidate. A scripted
generator counts an input's tokens as its words; the expected windows are written out by hand."""

from __future__ import annotations

from q2_metric.results import Pair, ResponseScore
from q2_metric.steps.questions import generate_questions, sentence_bounds
from q2_metric.testing.scripted import ScriptedQG

RESPONSE = "Ann sings. Bob dances well. Cid paints. Dee writes. Eve runs."


class CountingQG(ScriptedQG):
    """Questions "what about A?", and every input's words counted as its tokens (the prompt's
    `answer:`, `context:` and `</s>` included)."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts: list[str] = []

    def input_lengths(self, answers, contexts):
        return [len(f"answer: {a}  context: {c} </s>".split()) for a, c in zip(answers, contexts)]

    def generate(self, answers, contexts):
        self.contexts += list(contexts)
        return super().generate(answers, contexts)


def pair(candidates: list[str]) -> Pair:
    res = ResponseScore(0, 0.0, 0.0, candidates=candidates)
    res.candidate_offsets = [(RESPONSE.index(c), RESPONSE.index(c) + len(c)) for c in candidates]
    return Pair(RESPONSE, "k", res)


def test_sentences_are_cut_at_their_ends():
    assert [RESPONSE[s:e] for s, e in sentence_bounds(RESPONSE)] == [
        "Ann sings.",
        "Bob dances well.",
        "Cid paints.",
        "Dee writes.",
        "Eve runs.",
    ]
    assert sentence_bounds("no end") == [(0, 6)]


def test_inputs_past_the_limit_are_counted_and_left_to_the_generator():
    p, qg = pair(["Ann", "Cid", "Eve"]), CountingQG()
    # a whole input: 4 words of prompt (`answer:`, the candidate, `context:`, `</s>`) + 11 = 15
    generate_questions([p], qg, limit=14)
    assert p.result.qg_cut == 3 and p.result.qg_windows == 0
    assert set(qg.contexts) == {RESPONSE}
    p, qg = pair(["Ann"]), CountingQG()
    generate_questions([p], qg, limit=15)  # it fits: nothing cut
    assert p.result.qg_cut == 0 and qg.contexts == [RESPONSE]
    generate_questions([p], CountingQG(), limit=None)  # not measured: nothing counted
    assert p.result.qg_cut == 0


def test_windows_hold_whole_sentences_around_the_candidate():
    p, qg = pair(["Ann", "Cid", "Eve"]), CountingQG()
    generate_questions([p], qg, limit=10, long_inputs="windows")  # 4 of prompt + 6 words of response
    assert qg.contexts == [
        "Ann sings. Bob dances well.",  # the first sentence, then the next (one more: 7 words)
        "Cid paints. Dee writes. Eve runs.",  # the next; the previous does not fit; the next again
        "Cid paints. Dee writes. Eve runs.",  # the last: the previous ones, while they fit
    ]
    assert p.result.qg_windows == 3 and p.result.qg_cut == 0
    assert [t.candidate for t in p.result.questions] == ["Ann", "Cid", "Eve"]
    # one sentence longer than the limit: that sentence alone, still cut (and counted)
    p, qg = pair(["Bob"]), CountingQG()
    generate_questions([p], qg, limit=6, long_inputs="windows")
    assert qg.contexts == ["Bob dances well."] and p.result.qg_windows == 1 and p.result.qg_cut == 1
