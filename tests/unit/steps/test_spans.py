"""Spans: every candidate occurrence at its character offsets in the response as given, with its
question, answers and span scores; the unsupported ones (span score < 1).

Every expected offset below was counted by hand on the string written next to it (Python string
indices: one per code point, so the emoji is one character)."""

import math

from q2_metric import Q2Config
from q2_metric.components import CONTRADICTION, ParsedText
from q2_metric.models.spacy_parser import SpacyParser
from q2_metric.steps.coref import Replacement
from q2_metric.steps.spans import to_original
from q2_metric.testing.scripted import ScriptedCoref, ScriptedNLI, ScriptedParser, ScriptedQA, scripted_scorer


def _triples(res):
    return [(s.start, s.end, s.text) for s in res.spans]


def _check_offsets(response, res):
    for s in res.spans:
        assert response[s.start : s.end] == s.text


# "😀 Zoë met Zoë at  Oslo." : 😀0 ' '1 Z2 o3 ë4 ' '5 m6 e7 t8 ' '9 Z10 o11 ë12 ' '13 a14 t15 ' '16 ' '17 O18..o21 .22
EMOJI = "😀 Zoë met Zoë at  Oslo."


def test_unicode_repeats_and_double_space_on_scripted_parser():
    res = scripted_scorer().score([EMOJI], ["Zoë lives in Bergen."]).responses[0]
    assert _triples(res) == [(2, 5, "Zoë"), (10, 13, "Zoë"), (18, 22, "Oslo")]
    _check_offsets(EMOJI, res)
    # Zoë: the knowledge answers "Zoë" (F1 1, span score 1); Oslo: no answer in the knowledge (0)
    assert [s.supported for s in res.spans] == [True, True, False]
    assert [(s.start, s.end, s.text, s.score) for s in res.unsupported_spans] == [(18, 22, "Oslo", 0.0)]
    oslo = res.spans[2]
    assert (oslo.question, oslo.response_answer, oslo.knowledge_answer, oslo.knowledge_has_answer) == (
        "what about Oslo?",
        "Oslo",
        "",
        False,
    )
    assert res.q2 == 2 / 3  # the scores are the mean of the span scores, as before (1, 1, 0)


def test_parser_without_offsets_is_located_left_to_right():
    # "Ana and ana  and Ana." : A0 n1 a2 ' '3 a4 n5 d6 ' '7 a8 n9 a10 ' '11 ' '12 a13 n14 d15 ' '16 A17 n18 a19 .20
    text = "Ana and ana  and Ana."
    parser = ScriptedParser({text: ParsedText(entities=["Ana", "Ana"], noun_chunks=["ana"])})
    res = scripted_scorer(parser=parser).score([text], ["Ana is here."]).responses[0]
    # entities in order: the first "Ana" at 0, the second at 17 (the lower-case one is no match);
    # the chunk "ana" equals an entity case-insensitively, so it is no candidate
    assert _triples(res) == [(0, 3, "Ana"), (17, 20, "Ana")]


def test_nli_decides_support_where_f1_is_below_one():
    # knowledge answers "the Oslo area" for Oslo: token F1 of "oslo" vs "oslo area" = 2*(1/2*1)/(1/2+1) = 2/3
    knowledge = "Zoë lives in the Oslo area."
    qa = ScriptedQA({("what about Oslo?", knowledge): "the Oslo area"})
    text = "Zoë lives in Oslo."
    res = scripted_scorer(qa=qa).score([text], [knowledge]).responses[0]
    oslo = res.spans[1]
    # the scripted NLI entails ("what about oslo oslo" lies in "what about oslo oslo area"): span score 1
    assert (oslo.f1, oslo.nli_label, oslo.score, oslo.score_no_nli, oslo.supported) == (
        2 / 3,
        "entailment",
        1.0,
        2 / 3,
        True,
    )
    assert res.unsupported_spans == []
    # contradiction: span score 0, unsupported, whatever the F1
    nli = ScriptedNLI({("what about Oslo? the Oslo area.", "what about Oslo? Oslo."): CONTRADICTION})
    res = scripted_scorer(qa=qa, nli=nli).score([text], [knowledge]).responses[0]
    assert [(s.start, s.end, s.score, s.score_no_nli) for s in res.unsupported_spans] == [
        (13, 17, 0.0, 2 / 3)
    ]
    # NLI off: the span score is the F1, 2/3 < 1 -> unsupported
    res = scripted_scorer(Q2Config(use_nli=False), qa=qa).score([text], [knowledge]).responses[0]
    assert [(s.text, s.score, s.supported) for s in res.spans] == [("Zoë", 1.0, True), ("Oslo", 2 / 3, False)]


def test_occurrence_without_valid_question_is_unchecked_and_fallback_has_no_unsupported():
    # the scripted QA answers from the response only what it contains: "what about X?" -> X; a
    # question whose response answer differs from the candidate is no_match -> no valid question
    text = "Zoë met Ada."
    qa = ScriptedQA({("what about Ada?", text): "Zoë"})
    res = scripted_scorer(qa=qa).score([text], ["Zoë met Ada."]).responses[0]
    assert [(s.text, s.question, s.supported) for s in res.spans] == [
        ("Zoë", "what about Zoë?", True),
        ("Ada", None, None),
    ]
    # no candidate survives: end-to-end NLI, nothing located as unsupported
    qa = ScriptedQA({("what about Ada?", text): None, ("what about Zoë?", text): None})
    res = scripted_scorer(qa=qa).score([text], ["Nothing."]).responses[0]
    assert res.fallback and res.unsupported_spans == [] and [s.supported for s in res.spans] == [None, None]


def test_multi_mode_one_span_per_valid_question():
    text = "Zoë sang."
    qg_questions = {("Zoë", text): ["what about Zoë?", "What about Zoë?"]}
    from q2_metric.testing.scripted import ScriptedQG

    res = (
        scripted_scorer(Q2Config(question_mode="multi"), qg=ScriptedQG(qg_questions))
        .score([text], ["Zoë sang."])
        .responses[0]
    )
    assert [(s.start, s.end, s.question) for s in res.spans] == [
        (0, 3, "what about Zoë?"),
        (0, 3, "What about Zoë?"),
    ]


def test_empty_response_has_no_spans_and_to_dict_carries_them():
    result = scripted_scorer().score(["  ", "Zoë sang."], ["k", "Ada sang."])
    assert result.responses[0].spans == [] and math.isnan(result.responses[0].q2)
    d = result.to_dict(details=True)["details"][1]
    assert d["spans"][0]["start"] == 0 and d["spans"][0]["end"] == 3 and d["spans"][0]["supported"] is False
    assert d["unsupported_spans"] == d["spans"]
    assert "candidate_offsets" not in d


# Coreference: "Marie Curie won. She won again in  Paris."
#  M0 .. e10 ' '11 w12 o13 n14 .15 ' '16 S17 h18 e19 ' '20 ... ' '33 ' '34 P35 a36 r37 i38 s39 .40
CURIE = "Marie Curie won. She won again in  Paris."


def test_coref_offsets_stay_in_the_response_as_given():
    scorer = scripted_scorer(Q2Config(coref=True), coref=ScriptedCoref([["Marie Curie", "She"]]))
    res = scorer.score([CURIE], ["Marie Curie won in Paris."]).responses[0]
    assert res.coref.resolved == "Marie Curie won. Marie Curie won again in  Paris."
    # the second "Marie Curie" was found in the resolved text; it is reported over "She", as written
    assert [(s.start, s.end, s.text, s.candidate, s.replaced) for s in res.spans] == [
        (0, 11, "Marie Curie", "Marie Curie", False),
        (17, 20, "She", "Marie Curie", True),
        (35, 40, "Paris", "Paris", False),
    ]
    _check_offsets(CURIE, res)


def test_to_original_by_hand():
    # "I had coffee. It was hot." -> "I had coffee. coffee was hot." (It at 14-16 becomes 6 characters)
    reps = [Replacement(14, 16, "It", "coffee")]
    assert to_original(14, 20, reps) == (14, 16, True)  # the replaced word itself
    assert to_original(21, 24, reps) == (17, 20, False)  # "was" after it, shifted back by 4
    assert to_original(0, 29, reps) == (0, 25, True)  # the whole text
    assert to_original(17, 24, reps) == (14, 20, True)  # starts inside the replacement
    # two replacements: "He met her." (H0 e1 ' '2 m3 e4 t5 ' '6 h7 e8 r9 .10) -> "Tom Li met Ann F."
    # (T0..i5 ' '6 m7 e8 t9 ' '10 A11 n12 n13 ' '14 F15 .16): +4, then +2
    reps = [Replacement(0, 2, "He", "Tom Li"), Replacement(7, 10, "her", "Ann F")]
    assert to_original(7, 10, reps) == (3, 6, False)
    assert to_original(11, 16, reps) == (7, 10, True)
    assert to_original(0, 17, reps) == (0, 11, True)
    assert to_original(16, 17, reps) == (10, 11, False)


def test_real_spacy_parser_offsets():
    # "Café Müller was opened by  Pina Bausch in Wuppertal; Pina Bausch danced." :
    #  Café Müller 0-11, ' was opened by  ' 11-27, Pina Bausch 27-38, ' in ' 38-42, Wuppertal 42-51,
    #  '; ' 51-53, Pina Bausch 53-64
    text = "Café Müller was opened by  Pina Bausch in Wuppertal; Pina Bausch danced."
    scorer = scripted_scorer(parser=SpacyParser(Q2Config()))
    res = scorer.score([text], ["Pina Bausch worked in Wuppertal."]).responses[0]
    triples = _triples(res)
    assert (27, 38, "Pina Bausch") in triples and (53, 64, "Pina Bausch") in triples
    assert (42, 51, "Wuppertal") in triples
    _check_offsets(text, res)


def test_space_colours_from_the_offsets():
    """The Space's HTML marks exactly the spans' offsets: with coref the replaced mention "She" is
    marked (the candidate scored was "Marie Curie", not in the response at that place), and both
    repeats of "Zoë" are marked where they are."""
    from q2_metric.hub.explain import span_segments

    scorer = scripted_scorer(Q2Config(coref=True), coref=ScriptedCoref([["Marie Curie", "She"]]))
    res = scorer.score([CURIE], ["Marie Curie won in Paris."]).responses[0]
    marked = [(text, status) for text, status, _ in span_segments(CURIE, res) if status]
    # Paris: no answer from the knowledge? it is there ("won in Paris"): valid, score 1
    assert marked == [("Marie Curie", "valid"), ("She", "valid"), ("Paris", "valid")]
    assert "".join(text for text, _, _ in span_segments(CURIE, res)) == CURIE
    res = scripted_scorer().score([EMOJI], ["Zoë lives in Bergen."]).responses[0]
    segments = span_segments(EMOJI, res)
    assert [(t, sc) for t, st, sc in segments if st] == [("Zoë", 1.0), ("Zoë", 1.0), ("Oslo", 0.0)]
    assert "".join(t for t, _, _ in segments) == EMOJI


def test_coref_with_the_real_spacy_parser():
    """spaCy parses the resolved response; its offsets come back to the response as given."""
    scorer = scripted_scorer(
        Q2Config(coref=True), parser=SpacyParser(Q2Config()), coref=ScriptedCoref([["Marie Curie", "She"]])
    )
    res = scorer.score([CURIE], ["Marie Curie won in Paris."]).responses[0]
    triples = [(s.start, s.end, s.text, s.candidate) for s in res.spans]
    # offsets counted by hand above CURIE's definition
    assert (0, 11, "Marie Curie", "Marie Curie") in triples and (35, 40, "Paris", "Paris") in triples
    assert (17, 20, "She", "Marie Curie") in triples
    _check_offsets(CURIE, res)


def test_same_spans_from_every_front_end_with_details(tmp_path):
    """The engine's spans are those of `q2 score --spans`, of `q2 rescore` and the Space's marks
    (scripted components; `compute` is compared with the engine in tests/integration/test_evaluate_module.py,
    ParlAI's explain file in tests/integration/test_parlai.py)."""
    import json

    from q2_metric.corpus.files import score_file
    from q2_metric.corpus.logs import rescore_log
    from q2_metric.hub.explain import span_segments

    pairs = [(EMOJI, "Zoë lives in Bergen."), ("Ada met Ada in  Rome.", "Ada lives in Rome.")]
    engine = scripted_scorer().score([r for r, _ in pairs], [k for _, k in pairs]).responses
    want = [[(s.start, s.end, s.text, s.score, s.supported) for s in r.spans] for r in engine]
    assert want[1] == [
        (0, 3, "Ada", 1.0, True),
        (8, 11, "Ada", 1.0, True),
        (16, 20, "Rome", 1.0, True),
    ]  # by hand

    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"response": r, "knowledge": k}) + "\n" for r, k in pairs), encoding="utf-8"
    )
    score_file(
        scripted_scorer(), src, tmp_path / "out.jsonl", spans_path=tmp_path / "spans.jsonl", cache_dir=None
    )
    log = tmp_path / "samples.jsonl"
    log.write_text(
        "".join(
            json.dumps({"doc_id": n, "doc": {"knowledge": k}, "filtered_resps": [r]}) + "\n"
            for n, (r, k) in enumerate(pairs)
        ),
        encoding="utf-8",
    )
    rescore_log(scripted_scorer(), log, tmp_path / "re.jsonl", tmp_path / "re.json")
    for path in (tmp_path / "spans.jsonl", tmp_path / "re.jsonl"):
        got = [
            [(s["start"], s["end"], s["text"], s["score"], s["supported"]) for s in json.loads(x)["spans"]]
            for x in path.read_text(encoding="utf-8").splitlines()
        ]
        assert got == want, path.name
    for (response, _), res, spans in zip(pairs, engine, want):
        marks, pos = [], 0
        for text, status, score in span_segments(response, res):
            if status:
                marks.append((pos, pos + len(text), text, score))
            pos += len(text)
        assert marks == [(s, e, t, sc) for s, e, t, sc, _ in spans]


# "Ana met  the show  in Oslo." : A0 n1 a2 ' '3 m4 e5 t6 ' '7 ' '8 t9 h10 e11 ' '12 s13 h14 o15 w16
#  ' '17 ' '18 i19 n20 ' '21 O22 s23 l24 o25 .26
SORTED = "Ana met  the show  in Oslo."


def test_spans_are_trimmed_and_in_the_responses_order_and_the_candidates_untouched():
    # the parser gives the entity Oslo first, then a chunk with whitespace around it (offsets 7..18),
    # then Ana: the spans come sorted by offset, the chunk trimmed to 9..17, its candidate as parsed
    parsed = ParsedText(
        entities=["Oslo"],
        noun_chunks=["  the show  ", "Ana"],
        entity_offsets=[(22, 26)],
        noun_chunk_offsets=[(7, 19), (0, 3)],
    )
    res = (
        scripted_scorer(parser=ScriptedParser({SORTED: parsed}))
        .score([SORTED], ["Ana met Oslo."])
        .responses[0]
    )
    assert res.candidates == ["Oslo", "  the show  ", "Ana"]  # what the models read: as parsed
    assert _triples(res) == [(0, 3, "Ana"), (9, 17, "the show"), (22, 26, "Oslo")]
    assert [(s.candidate, s.occurrence) for s in res.spans] == [("Ana", 2), ("  the show  ", 1), ("Oslo", 0)]
    _check_offsets(SORTED, res)
