"""`q2 publish` refuses results of tiny random models in one sentence (issue 36); the card is untouched."""

import json

import pytest

from q2_metric.cli import main
from q2_metric.hub.publish import PublishError, card_metadata, write_model_card

TINY = (
    "q2:0.3.0|variant:paper|qg:tiny-random-0a1b2c3d|qa:tiny-random-4e5f6a7b|nli:tiny-random-8c9d0e1f"
    "|spacy:en_core_web_sm@3.8.0|dtype:float32"
)
REAL = (
    TINY.replace("tiny-random-0a1b2c3d", "local-0a1b2c3d")
    .replace("tiny-random-4e5f6a7b", "local-4e5f6a7b")
    .replace("tiny-random-8c9d0e1f", "local-8c9d0e1f")
)
RESULTS = {"q2": 0.5, "q2_no_nli": 0.4, "coverage": 1.0}


def test_tiny_results_are_refused(tmp_path):
    card = tmp_path / "README.md"
    card.write_text("---\nlicense: mit\n---\n# m\n")
    before = card.read_bytes()
    with pytest.raises(
        PublishError,
        match=r"^These results were made with tiny random models \(q2:0\.3\.0\|"
        r"models:tiny-random\|.*\), whose scores are meaningless",
    ):
        write_model_card(card, {**RESULTS, "signature": TINY}, "m", dataset_name="d", dataset_type="d")
    assert card.read_bytes() == before
    # one tiny role is enough
    with pytest.raises(PublishError):
        card_metadata(
            {**RESULTS, "signature": REAL.replace("local-8c9d0e1f", "tiny-random-8c9d0e1f")},
            "m",
            dataset_name="d",
            dataset_type="d",
        )
    assert card_metadata({**RESULTS, "signature": REAL}, "m", dataset_name="d", dataset_type="d")[
        "model-index"
    ]


def test_cli_says_one_sentence(tmp_path, capsys):
    results = tmp_path / "r.json"
    results.write_text(json.dumps({**RESULTS, "signature": TINY}))
    card = tmp_path / "README.md"
    assert main(["publish", "--results", str(results), "--model-name", "m", "--card", str(card)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tiny random models" in err[0] and "models:tiny-random" in err[0]
    assert not card.exists()
