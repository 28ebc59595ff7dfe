"""The streaming check in process (`q2_metric.runtime.stream`): the sentence rule on hand cases and
under any chunking, the engine's focus (the default path unchanged), and `Q2Stream`, whose final
record is `Q2Scorer.score`'s on the whole answer. Expected sentences are written by hand from the
rule; expected scores come from the batch path (`Q2Scorer.score`)."""

from __future__ import annotations

import random

import pytest

from q2_metric import frontend
from q2_metric.errors import Q2InputError
from q2_metric.runtime.stream import SentenceSplitter, StreamCore


def split(*chunks: str) -> list[str]:
    s = SentenceSplitter()
    ranges = [r for c in chunks for r in s.feed(c)] + s.end()
    return [s.text[a:b] for a, b in ranges]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Dr. Smith came. He sat.", ["Dr.", "Smith came.", "He sat."]),  # no abbreviation list
        ("Pi is 3.14 or so, e.g.,roughly. Yes", ["Pi is 3.14 or so, e.g.,roughly.", "Yes"]),
        ('He said "Hi." Then he left.', ['He said "Hi."', "Then he left."]),
        (
            "(Yes!) No?! Fine\u2026 ok. \u201cQuoted.\u201d End",
            ["(Yes!)", "No?!", "Fine\u2026 ok.", "\u201cQuoted.\u201d", "End"],
        ),
        ("no terminator at all", ["no terminator at all"]),
        ("   A.   \n\t B.  \n", ["A.", "B."]),  # whitespace runs, leading and trailing
        ("Wait... what?", ["Wait...", "what?"]),
        (
            "\u00c7a va? Tr\u00e8s bien.\u00a0Et toi?\u3000Oui.",
            ["\u00c7a va?", "Tr\u00e8s bien.", "Et toi?", "Oui."],
        ),
        (
            "\u6771\u4eac\u3002\u5927\u962a\u3002",
            ["\u6771\u4eac\u3002\u5927\u962a\u3002"],
        ),  # no space: one sentence
        ("A.B. c", ["A.B.", "c"]),
        ("", []),
        ("   ", []),
        ("Done.", ["Done."]),
    ],
)
def test_sentence_rule_on_hand_cases(text, sentences):
    assert split(text) == sentences


def test_a_sentence_completes_only_when_a_further_character_arrives():
    s = SentenceSplitter()
    assert s.feed("One.") == [] and s.feed("  ") == [] and s.feed('"') == [(0, 4)]
    assert s.feed("Two.\u201d") == [] and s.end() == [(6, 12)]
    with pytest.raises(ValueError):
        s.feed("more")


def test_any_chunking_gives_the_same_sentences(rows):
    rng = random.Random(7)
    for row in rows:
        text = row["response"] + "  Next one? Yes! " + row["knowledge"][:80]
        whole = split(text)
        for _ in range(5):
            cuts = sorted(rng.sample(range(len(text) + 1), rng.randint(0, min(12, len(text)))))
            chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
            assert split(*chunks) == whole


def test_core_items_carry_the_previous_sentence_and_focus_the_current_one():
    core = StreamCore("Some knowledge.", max_chars=40)
    first = core.take("Ann met Bob. Bob")
    assert [(s.index, s.text) for s, _ in first] == [(0, "Ann met Bob.")]
    assert (first[0][1].response, first[0][1].focus) == ("Ann met Bob.", (0, 12))
    items, whole = core.finish(" left. Then")
    assert [s.text for s, _ in items] == ["Bob left.", "Then"]
    assert [(i.response, i.focus) for _, i in items] == [
        ("Ann met Bob. Bob left.", (13, 22)),
        ("Bob left. Then", (10, 14)),
    ]
    assert (whole.response, whole.knowledge, whole.focus) == (
        "Ann met Bob. Bob left. Then",
        "Some knowledge.",
        None,
    )
    with pytest.raises(Q2InputError, match="ended"):
        core.take("x")


def test_core_refuses_bad_text_and_too_many_characters():
    with pytest.raises(Q2InputError, match="field 'knowledge'"):
        StreamCore(7)
    core = StreamCore(["passage one", "passage two"], max_chars=10)
    assert core.knowledge.knowledge == "passage one passage two"  # the contract's one item check
    with pytest.raises(Q2InputError, match="Field 'text' must be a string, got int"):
        core.take(7)
    core.take("0123456789")
    with pytest.raises(Q2InputError, match="at most 10"):
        core.take("x")


# -- the engine's focus ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scorer(tiny_config):
    from q2_metric import Q2Scorer

    return Q2Scorer(tiny_config)


def test_focus_off_is_the_default_path(scorer, rows, monkeypatch):
    items = [frontend.Item(f"row {n}", r["response"], r["knowledge"]) for n, r in enumerate(rows[:6])]
    checked = frontend.check_items(items)
    seen = []
    original = scorer.score_checked

    def spy(*args, **kwargs):
        seen.append(sorted(kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(scorer, "score_checked", spy)
    plain = frontend.score_checked(scorer, checked)
    assert seen == [["progress"]]  # no focus reaches the engine on the default path
    want = scorer.score([r["response"] for r in rows[:6]], [r["knowledge"] for r in rows[:6]])
    assert [i.score.to_dict() for i in plain.items] == [r.to_dict() for r in want.responses]
    # a focus over the whole response changes nothing
    whole = [frontend.with_response(c, c.key, c.response, (0, len(c.response))) for c in checked]
    focused = frontend.score_checked(scorer, whole)
    assert [i.score.to_dict() for i in focused.items] == [r.to_dict() for r in want.responses]


def test_focus_keeps_only_the_candidates_inside_it(scorer, rows):
    text = rows[0]["response"] + " " + rows[1]["response"]
    cut = len(rows[0]["response"]) + 1
    item = frontend.check_items([frontend.Item("x", text, rows[0]["knowledge"])])[0]
    full = frontend.score_checked(scorer, [item]).items[0].score
    part = (
        frontend.score_checked(scorer, [frontend.with_response(item, "x", text, (cut, len(text)))])
        .items[0]
        .score
    )
    assert part.spans and all(s.start >= cut for s in part.spans)
    assert [(s.start, s.text) for s in part.spans] == [
        (s.start, s.text) for s in full.spans if s.start >= cut
    ]


# -- Q2Stream --------------------------------------------------------------------------------------


def tiny_options(config):
    return {
        "qg_model": config.qg_model,
        "qa_model": config.qa_model,
        "nli_model": config.nli_model,
        "device": "cpu",
        "max_question_length": config.max_question_length,
    }


def test_q2stream_final_is_the_batch_result(tiny_config, scorer, rows):
    from q2_metric import Q2Stream

    rng = random.Random(3)
    for row in rows[:6]:
        answer = row["response"] + " And more? " + rows[-1]["response"]
        with Q2Stream(row["knowledge"], **tiny_options(tiny_config)) as stream:
            got = []
            pos = 0
            while pos < len(answer):
                step = rng.randint(1, 25)
                got += stream.feed(answer[pos : pos + step])
                pos += step
            final = stream.end()
        got = stream.sentences
        assert [s.sentence.text for s in got] == split(answer)
        for s in got:  # offsets in the whole answer
            assert all(answer[p.start : p.end] == p.text for p in s.record.spans)
            assert all(s.sentence.start <= p.start and p.end <= s.sentence.end for p in s.record.spans)
        want = scorer.score([answer], [row["knowledge"]])
        expected = frontend.record_of(
            frontend.ItemResult("the stream", "scored", want.responses[0]), want.signature
        )
        assert final == expected


def test_q2stream_context_manager_ends_and_refuses_coref(tiny_config):
    from q2_metric import Q2OptionError, Q2Stream

    with Q2Stream("Bob Ross hosted the show.", **tiny_options(tiny_config)) as stream:
        assert stream.feed("Bob Ross hosted the show.") == []
    assert stream.final is not None and [s.sentence.text for s in stream.sentences] == [
        "Bob Ross hosted the show."
    ]
    with pytest.raises(Q2OptionError, match="coref"):
        Q2Stream("k", coref=True)


def test_a_sentence_without_a_checked_span_falls_back_to_nli_on_the_sentence_alone():
    from q2_metric.testing.scripted import ScriptedNLI, scripted_scorer

    read: list[tuple[str, str]] = []
    scorer = scripted_scorer(nli=ScriptedNLI(rule=lambda p, h: read.append((p, h)) or "entailment"))
    text = "Bob Ross painted. it was nice."
    item = frontend.check_items([frontend.Item("x", text, "Bob Ross painted. It was nice.")])[0]
    out = frontend.score_checked(scorer, [frontend.with_response(item, "x", text, (18, len(text)))])
    score = out.items[0].score
    assert score.fallback and score.candidates == [] and score.spans == []
    assert [h for _, h in read] == ["it was nice."]  # the sentence, not its context


def test_a_sentence_in_a_language_the_set_does_not_cover_is_unverified(tiny_config):
    """The language gate reaches streamed sentences and the final (German text, written for this
    test, against the English set): unverified with the gate's sentence, never an English score;
    the English sentence of the same stream is scored."""
    from q2_metric import Q2Stream

    english = "Bob Ross hosted the show The Joy of Painting on PBS."
    german = "Der Rhein fließt durch Basel und Köln und mündet in die Nordsee."
    knowledge = "Bob Ross hosted The Joy of Painting. Der Rhein fließt durch Basel und Köln."
    with Q2Stream(knowledge, **tiny_options(tiny_config)) as stream:
        stream.feed(english + " ")
        stream.feed(german)
        final = stream.end()
    first, second = (s.record for s in stream.sentences)
    assert first.verdict in ("consistent", "inconsistent")
    assert second.verdict == "unverified" and second.score is None
    assert second.reason.endswith("is in German (de), which the English (en) model set does not cover.")
    assert final.verdict != "unverified"  # the whole answer is judged whole, as the batch check does
    with Q2Stream(knowledge, **tiny_options(tiny_config)) as stream:
        stream.feed(german + " ")
        final = stream.end(german)
    assert [s.record.verdict for s in stream.sentences] == ["unverified", "unverified"]
    assert final.verdict == "unverified" and final.score is None
