"""The paper's coreference procedure (arXiv v1, App. A) pinned mention by mention with a scripted
backend. Every expected text below was written by hand from the procedure's description (resolve the
opening turn, append the next turn to the resolved text, resolve again, ... through the response;
replace each mention by its cluster's first mention), not produced by the code. The caffeine and
Beatles dialogues are built after the paper's examples (its exact wording is not available offline)."""

from q2_metric.steps.coref import (
    Replacement,
    apply_replacements,
    join_turn,
    plan_replacements,
    resolve_dialogues,
)
from q2_metric.testing.scripted import ScriptedCoref

CAFFEINE_HISTORY = ["I drink coffee every morning for the caffeine."]
CAFFEINE = "Yes, it stimulates a certain portion of the nervous system!"
BEATLES_HISTORY = ["Have you heard of The Beatles?", "Yes! They were my favourite band growing up."]
BEATLES = "They were formed in Liverpool in 1960."


def _check_offsets(trace):
    # the reported replacements, made on the response as written, give the resolved response
    assert apply_replacements(trace.original, trace.replacements) == trace.resolved
    for r in trace.replacements:
        assert trace.original[r.start : r.end] == r.original


def test_caffeine_pronoun_becomes_its_first_mention():
    coref = ScriptedCoref([["the caffeine", "it"]])
    [trace] = resolve_dialogues([CAFFEINE_HISTORY], [CAFFEINE], coref)
    assert trace.resolved == "Yes, the caffeine stimulates a certain portion of the nervous system!"
    assert trace.replacements == [Replacement(5, 7, "it", "the caffeine")]
    assert trace.history_turns == 1
    _check_offsets(trace)


def test_possessive_pronoun_gets_apostrophe_s():
    coref = ScriptedCoref([["caffeine", "its"]])
    [trace] = resolve_dialogues([["Caffeine is in coffee."]], ["Its effect lasts hours."], coref)
    assert trace.resolved == "Caffeine's effect lasts hours."


def test_beatles_turn_by_turn_on_the_resolved_text():
    coref = ScriptedCoref([["The Beatles", "They"]])
    [trace] = resolve_dialogues([BEATLES_HISTORY], [BEATLES], coref)
    assert trace.resolved == "The Beatles were formed in Liverpool in 1960."
    assert trace.replacements == [Replacement(0, 4, "They", "The Beatles")]
    # each step resolves the previous step's *resolved* text followed by the next turn
    assert coref.seen == [
        "Have you heard of The Beatles?",
        "Have you heard of The Beatles? Yes! They were my favourite band growing up.",
        "Have you heard of The Beatles? Yes! The Beatles were my favourite band growing up. "
        "They were formed in Liverpool in 1960.",
    ]
    _check_offsets(trace)


def test_dialogues_are_batched_step_by_step():
    coref = ScriptedCoref([["the caffeine", "it"], ["The Beatles", "They"]])
    traces = resolve_dialogues(
        [CAFFEINE_HISTORY, BEATLES_HISTORY, []], [CAFFEINE, BEATLES, "Hello there."], coref
    )
    assert coref.calls == [3, 2, 1]  # step 1: three dialogues, step 2: two, step 3: the Beatles only
    assert [t.resolved for t in traces] == [
        "Yes, the caffeine stimulates a certain portion of the nervous system!",
        "The Beatles were formed in Liverpool in 1960.",
        "Hello there.",
    ]
    assert traces[2].replacements == [] and not traces[2].changed


def test_without_history_resolves_within_the_response():
    coref = ScriptedCoref([["The Beatles", "they"]])
    [trace] = resolve_dialogues([[]], ["The Beatles formed in 1960 and they split in 1970."], coref)
    assert trace.resolved == "The Beatles formed in 1960 and The Beatles split in 1970."
    assert trace.history_turns == 0
    assert coref.seen == ["The Beatles formed in 1960 and they split in 1970."]
    _check_offsets(trace)


def test_whole_response_is_a_mention():
    coref = ScriptedCoref([["The Beatles", "they"]])
    [trace] = resolve_dialogues([["Who sang Yesterday?", "The Beatles did."]], ["they"], coref)
    assert trace.resolved == "The Beatles"
    assert trace.replacements == [Replacement(0, 4, "they", "The Beatles")]


def test_offsets_after_earlier_replacements_in_the_history():
    # "He" -> "Paul McCartney" lengthens the history by 12 characters before the response starts
    coref = ScriptedCoref([["Paul McCartney", "He", "he"]])
    [trace] = resolve_dialogues(
        [["Paul McCartney wrote Yesterday.", "He was 22."]], ["Later he wrote Hey Jude, he says."], coref
    )
    assert trace.resolved == "Later Paul McCartney wrote Hey Jude, Paul McCartney says."
    assert trace.replacements == [
        Replacement(6, 8, "he", "Paul McCartney"),
        Replacement(25, 27, "he", "Paul McCartney"),
    ]
    assert coref.seen[-1] == (
        "Paul McCartney wrote Yesterday. Paul McCartney was 22. Later he wrote Hey Jude, he says."
    )
    _check_offsets(trace)


def test_nested_mentions_outer_one_wins():
    text = "Paul Simon formed a duo. His duo was famous."
    his, his_duo = (25, 28), (25, 32)
    clusters = [[(0, 10), his], [(18, 23), his_duo]]
    assert text[his[0] : his[1]] == "His" and text[his_duo[0] : his_duo[1]] == "His duo"
    plan = plan_replacements(text, clusters)
    assert plan == [Replacement(25, 32, "His duo", "a duo")]
    assert apply_replacements(text, plan) == "Paul Simon formed a duo. a duo was famous."


def test_mention_inside_a_first_mention_is_resolved_and_carried():
    text = "Simon sang. His band toured, and it sold out."
    clusters = [[(0, 5), (12, 15)], [(12, 20), (33, 35)]]  # Simon/His, His band/it
    plan = plan_replacements(text, clusters)
    assert plan == [Replacement(12, 15, "His", "Simon's"), Replacement(33, 35, "it", "Simon's band")]
    assert apply_replacements(text, plan) == "Simon sang. Simon's band toured, and Simon's band sold out."


def test_overlapping_mentions_and_a_mention_across_the_turn_boundary():
    text = "Ann met Bob Dylan today and Dylan sang."
    # (8, 17) "Bob Dylan" crosses a turn boundary at 12: never replaced
    plan = plan_replacements(text, [[(0, 3), (8, 17)]], keep_from=12)
    assert plan == []
    # "Dylan" (28, 33) and "Dylan sang" (28, 38) overlap: the outer, longer one is replaced
    plan = plan_replacements(text, [[(8, 17), (28, 33)], [(0, 3), (28, 38)]])
    assert plan == [Replacement(28, 38, "Dylan sang", "Ann")]


def test_cluster_led_by_a_pronoun_is_left_alone():
    text = "He met Ann. Paul smiled and he left. We know our town."
    clusters = [[(0, 2), (12, 16), (28, 30)], [(37, 39), (45, 48)]]  # He/Paul/he, We/our
    assert [text[s:e] for s, e in clusters[0] + clusters[1]] == ["He", "Paul", "he", "We", "our"]
    assert plan_replacements(text, clusters) == []


def test_cluster_with_one_mention_or_equal_text_changes_nothing():
    text = "The Beatles met The Beatles."
    assert plan_replacements(text, [[(0, 11)], [(0, 11), (16, 27)]]) == []


def test_join_turns():
    assert join_turn(None, "Hi.") == ("Hi.", 0)
    assert join_turn("Hi.", "Bye.") == ("Hi. Bye.", 4)
