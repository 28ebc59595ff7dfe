"""The QG backend's inputs: the paper's prompt unchanged, lmqg's highlighted answer for other
models (`prompt="lmqg-highlight"`), and a T5 that generates through either; run on the tiny
multilingual T5."""

from __future__ import annotations

import pytest

from q2_metric.config import Q2Config
from q2_metric.errors import Q2OptionError
from q2_metric.models.hf_qg import HFQuestionGenerator, lmqg_input, qg_input


def test_paper_prompt_is_the_released_string():
    assert qg_input("Berlin", "I live in Berlin.") == "answer: Berlin  context: I live in Berlin. </s>"


@pytest.mark.parametrize(
    "answer, context, span, expected",
    [
        ("Berlin", "Sie wohnt in Berlin.", None, "generate question: Sie wohnt in <hl> Berlin <hl>."),
        # the span given wins over the first occurrence
        ("Köln", "Köln und Köln", (9, 13), "generate question: Köln und <hl> Köln <hl>"),
        # CJK without spaces: the markers go around the characters
        ("北京", "首都是北京。", None, "generate question: 首都是<hl> 北京 <hl>。"),
        # right to left: offsets are in logical order
        ("مصر", "عاصمة مصر", None, "generate question: عاصمة <hl> مصر <hl>"),
        # not in the context: highlighted before it
        ("Paris", "Sie wohnt in Berlin.", None, "generate question: <hl> Paris <hl> Sie wohnt in Berlin."),
    ],
)
def test_lmqg_input_by_hand(answer, context, span, expected):
    assert lmqg_input(answer, context, span) == expected


@pytest.fixture(scope="module")
def config(tiny_multilingual_models):
    return Q2Config(qg_model=tiny_multilingual_models["qg"], device="cpu", max_question_length=16)


ANSWERS = ["1989", "北京", "مصر", "Москва"]
CONTEXTS = ["Die Mauer fiel 1989.", "北京是中国的首都。", "القاهرة هي عاصمة مصر.", "Москва — столица России."]


@pytest.mark.parametrize("prompt", ["q2", "lmqg-highlight"])
def test_tiny_multilingual_t5_generates(config, prompt):
    qg = HFQuestionGenerator(config, prompt=prompt)
    assert qg.tokenization == "hf"
    questions = qg.generate(ANSWERS, CONTEXTS)
    assert len(questions) == len(ANSWERS)
    assert all(
        len(beams) == config.num_return_sequences and all(q.strip() for q in beams) for beams in questions
    )
    assert len({beams[0] for beams in questions}) > 1  # the question depends on the input
    assert qg.generate(ANSWERS, CONTEXTS) == questions  # the same on a second call


def test_prompts_and_spans(config):
    qg = HFQuestionGenerator(config, prompt="lmqg-highlight")
    assert qg.prompts(["Köln"], ["Köln und Köln"], [(9, 13)]) == [
        "generate question: Köln und <hl> Köln <hl>"
    ]
    paper = HFQuestionGenerator(config)
    assert paper.prompts(["Köln"], ["Köln und Köln"], [(9, 13)]) == [qg_input("Köln", "Köln und Köln")]


def test_unknown_prompt_is_refused(config):
    with pytest.raises(Q2OptionError, match="prompt 'lmqg'"):
        HFQuestionGenerator(config, prompt="lmqg")
