"""The language gate's rule (`languages.identify`): the script first, then py3langid's normalized
probability of the set's language, with the benefit of the doubt to a text py3langid is unsure of."""

import csv

import pytest
from support.data import ANNOTATED, DATA, SAMPLE

from q2_metric.languages.identify import FLOOR, MIN_WORDS, language_problem, other_language, probabilities


def english_texts() -> list[str]:
    """Every English text of the repository's English sets (the annotated WoW set, the sample,
    BEGIN's dev files): responses, knowledge and dialogue turns."""
    texts = []
    for path in [*sorted(ANNOTATED.glob("*.csv")), SAMPLE]:
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                texts += [row.get(k) or "" for k in ("response", "knowledge", "message")]
    for path in (DATA / "begin" / "wow" / "begin_dev_wow.tsv", DATA / "begin" / "v1" / "dev_05_24_21.tsv"):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                texts += [row.get(k) or "" for k in ("response", "knowledge", "evidence", "message")]
    return [t for t in dict.fromkeys(texts) if t.strip()]


def test_no_english_text_of_the_repository_is_judged_another_language():
    texts = english_texts()
    assert len(texts) > 3000
    assert [t for t in texts if other_language(t, "en") is not None] == []
    # the margin: py3langid's lowest English probability on those of three words or more, against
    # the floor (a word or two is spread evenly over its 140 languages, under the floor)
    assert min(probabilities(t)["en"] for t in texts if sum(w.isalpha() for w in t.split()) >= 3) > 2 * FLOOR


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Der Rhein fließt durch Basel, Straßburg und Köln in die Nordsee.", "de"),
        ("Wo ist der Bahnhof?", "de"),
        ("鲍勃·罗斯主持了一个电视节目。", "zh"),  # Wu judged: folded into Chinese
        ("القاهرة هي عاصمة مصر وأكبر مدنها.", "ar"),
        ("Москва — столица России.", "ru"),
    ],
)
def test_another_language_is_named(text, language):
    assert other_language(text, "en") == language
    assert other_language(text, language) is None  # its own set covers it


def test_the_script_is_the_first_and_certain_signal():
    """Ten letters or more, mostly not Latin: not English, whatever py3langid's doubt."""
    assert other_language("東京 大阪 京都 名古屋 札幌", "en") is not None


def test_unsure_short_text_keeps_the_benefit_of_the_doubt():
    for text in (
        "Zoë sang.",
        "Zoë met Bob.",
        "hahaha what?",
        "Is it programming?",
        "ok",
        "1983",
        "Bob Ross!",
        "lol",
        " ! ! ! !",
    ):
        assert other_language(text, "en") is None, text


def test_the_sentence_names_the_item_the_field_and_the_language():
    problem = language_problem(
        "row 3", {"response": "Hi there, Bob.", "knowledge": "القاهرة هي عاصمة مصر وأكبر مدنها."}, "en"
    )
    assert (
        problem
        == "row 3: field 'knowledge' is in Arabic (ar), which the English (en) model set does not cover."
    )
    assert language_problem(
        "row 3", {"response": "Bob Ross painted happy little trees on his television show."}, "de"
    ) == ("row 3: field 'response' is in English (en), which the German (de) model set does not cover.")
    assert (
        language_problem("item 0", {"response": "Der Hund schläft im Garten hinter dem Haus."}, "de") is None
    )


def test_the_benchmarks_short_sentences_are_told_apart_from_english():
    """The 70 short sentences written for `benchmarks/langid_short.py` (2-9 words, 14 languages):
    each non-English one named by its language but the one of two words in Latin letters ("İstasyon
    nerede?"), which is too short to be judged (`MIN_WORDS`)."""
    import importlib.util

    from support.data import ROOT

    spec = importlib.util.spec_from_file_location("langid_short", ROOT / "benchmarks" / "langid_short.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for language, sentences in bench.SENTENCES.items():
        for sentence in sentences:
            found = other_language(sentence, "en")
            short = language not in ("ru", "zh", "ja", "ko", "ar") and len(sentence.split()) < MIN_WORDS
            assert found == (None if language == "en" or short else language), sentence


def test_the_services_warm_up_item_passes_every_bundled_languages_gate():
    """`q2 serve` warms the models of another language's set on a name and a year (the English
    item would be unverified there, the models left cold)."""
    from q2_metric.languages import model_sets
    from q2_metric.serve.service import NEUTRAL_WARM_ITEM, WARM_ITEM

    assert other_language(str(WARM_ITEM.response), "en") is None
    for code in model_sets():
        for text in (NEUTRAL_WARM_ITEM.response, NEUTRAL_WARM_ITEM.knowledge):
            assert other_language(str(text), code) is None, code


def test_the_model_is_unpacked_in_memory_and_ranks_as_py3langid_does():
    """py3langid's own loader unpacks its model into a temporary file (a full disk failed the gate
    before any scoring); ours reads it in memory and gives the same ranking, to the last digit."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from q2_metric.languages.identify import _identifier

    theirs = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    for text in (
        "Der Rhein fließt durch Basel.",
        "Bob Ross hosted a show.",
        "鲍勃·罗斯主持了节目。",
        "مرحبا بالعالم",
    ):
        assert _identifier().rank(text) == theirs.rank(text)
