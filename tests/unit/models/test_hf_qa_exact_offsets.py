"""The QA backend's generic path (`exact_offsets=True`): a fast tokenizer's offsets, SQuAD 2.0
decoding, answers that slice the text exactly in every script, and "no answer" through the CLS
position; run on the tiny multilingual QA model."""

from __future__ import annotations

import pytest

from q2_metric.components import NO_ANSWER
from q2_metric.config import Q2Config
from q2_metric.errors import ModelCheckError
from q2_metric.models.hf_qa import HFQuestionAnswerer

CONTEXTS = [
    "Die Mauer fiel am 9. November 1989 in Berlin.",
    "北京是中国的首都。长城全长约21196公里。",
    "القاهرة هي عاصمة مصر. يبلغ طول نهر النيل حوالي ٦٦٥٠ كيلومترا.",
    "Москва — столица России.",
    "Cafe\u0301 au lait, cre\u0300me bru\u0302le\u0301e.",
    "Berlin is the capital of Germany.",
]
QUESTIONS = ["wann?", "什么?", "ما هي?", "что это было?", "quoi donc?", "what is it, then?"]


@pytest.fixture(scope="module")
def qa(tiny_multilingual_models):
    config = Q2Config(qa_model=tiny_multilingual_models["qa"], device="cpu")
    return HFQuestionAnswerer(config, exact_offsets=True)


def test_answers_slice_the_context_exactly_in_every_script(qa):
    questions = [q for q in QUESTIONS for _ in CONTEXTS]
    contexts = CONTEXTS * len(QUESTIONS)
    spans = qa.answer_spans(questions, contexts)
    answers = qa.answer(questions, contexts)
    assert len(spans) == len(answers) == len(questions)
    for text, span, answer in zip(contexts, spans, answers):
        assert span is not None  # every context holds content pieces that outscore "no answer"
        start, end = span
        assert answer.has_answer and answer.text == text[start:end]
        assert answer.text == answer.text.strip() and answer.text
    # the answer depends on the question: one context, several answers
    by_context = {c: {a.text for a, t in zip(answers, contexts) if t == c} for c in CONTEXTS}
    assert sum(len(found) > 1 for found in by_context.values()) >= 3, by_context


def test_no_answer_through_the_cls_position(qa):
    # punctuation and a function word score below the CLS position's null score
    assert qa.answer(["wann?", "what?"], ["!!! ... ???", "a"]) == [NO_ANSWER, NO_ANSWER]
    assert qa.answer_spans(["wann?"], ["!!! ... ???"]) == [None]
    assert qa.answer([], []) == [] and qa.answer_spans([], []) == []


def test_long_context_in_windows_keeps_exact_offsets(tiny_multilingual_models):
    config = Q2Config(
        qa_model=tiny_multilingual_models["qa"], device="cpu", qa_max_length=32, qa_doc_stride=8
    )
    qa = HFQuestionAnswerer(config, exact_offsets=True)
    text = " ".join(CONTEXTS * 3)  # far over one window of 32 tokens
    features, examples, _ = qa.features(["wann?"], [text])
    assert len(features) > 3 and set(examples) == {0}
    (span,) = qa.answer_spans(["wann?"], [text])
    assert span is not None
    (answer,) = qa.answer(["wann?"], [text])
    assert answer.text == text[span[0] : span[1]]


def test_exact_offsets_need_a_fast_tokenizer(tiny_multilingual_models, monkeypatch):
    import transformers

    real = transformers.AutoTokenizer.from_pretrained

    def slow(*args, **kwargs):
        tok = real(*args, **kwargs)
        monkeypatch.setattr(type(tok), "is_fast", property(lambda self: False))
        return tok

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", slow)
    with pytest.raises(ModelCheckError, match="fast tokenizer"):
        HFQuestionAnswerer(
            Q2Config(qa_model=tiny_multilingual_models["qa"], device="cpu"), exact_offsets=True
        )


def test_padded_batches_give_the_packed_answers(qa, tiny_multilingual_models):
    """On a GPU pairs are padded, not packed (`qa_packing`): the same spans either way."""
    config = Q2Config(qa_model=tiny_multilingual_models["qa"], device="cpu", qa_packing="off")
    padded = HFQuestionAnswerer(config, exact_offsets=True)
    assert qa.packs() and not padded.packs()
    questions = [q for q in QUESTIONS for _ in CONTEXTS]
    contexts = CONTEXTS * len(QUESTIONS)
    assert padded.answer_spans(questions, contexts) == qa.answer_spans(questions, contexts)
