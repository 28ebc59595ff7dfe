"""The NLI backend reads a model's labels from its id2label in any case and order; run on the
tiny multilingual classifier (lower-case labels)."""

from __future__ import annotations

import pytest

from q2_metric.config import Q2Config
from q2_metric.errors import ModelCheckError
from q2_metric.models.hf_nli import HFNLIClassifier, nli_label_map


@pytest.mark.parametrize(
    "id2label, expected",
    [
        (
            {0: "entailment", 1: "neutral", 2: "contradiction"},
            {0: "entailment", 1: "neutral", 2: "contradiction"},
        ),
        (
            {"0": "Contradiction", "1": "Entailment", "2": "Neutral"},
            {0: "contradiction", 1: "entailment", 2: "neutral"},
        ),
        (
            {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"},
            {0: "entailment", 1: "neutral", 2: "contradiction"},
        ),
    ],
)
def test_labels_by_name_in_any_case(id2label, expected):
    assert nli_label_map(id2label) == expected


def test_labels_that_name_no_nli_are_refused():
    with pytest.raises(ModelCheckError, match="do not name entailment"):
        nli_label_map({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_tiny_multilingual_nli_gives_labels_by_row(tiny_multilingual_models):
    nli = HFNLIClassifier(Q2Config(nli_model=tiny_multilingual_models["nli"], device="cpu"))
    premises = [
        "Die Mauer fiel am 9. November 1989.",
        "北京是中国的首都。",
        "القاهرة هي عاصمة مصر.",
        "Москва — столица России.",
        "Paris est la capitale de la France.",
        "Madrid es la capital de España.",
    ]
    hypotheses = premises[1:] + premises[:1]
    labels = nli.classify(premises + premises, premises + hypotheses)
    assert set(labels) <= {"entailment", "neutral", "contradiction"}
    assert len(set(labels)) >= 2, labels  # pairs get different labels
    assert nli.classify(premises, hypotheses) == labels[len(premises) :]  # the same in another batch
