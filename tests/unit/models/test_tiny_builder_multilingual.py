"""The tiny multilingual random models: a SentencePiece vocabulary trained here on the bundled
multi-script text, the four roles built offline in seconds, the same bytes on every build, and
tokenizers whose offsets slice the text exactly in every script."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from q2_metric.models import tiny_builder as tb

SCRIPTS = {
    "latin, combining marks": "Cafe\u0301 au lait et cre\u0300me bru\u0302le\u0301e, Köln",
    "cyrillic": "Юрий Гагарин полетел в космос 12 апреля 1961 года.",
    "cjk, no spaces": "北京是中国的首都。会議は２０２１年３月５日に開かれた。",
    "arabic, right to left": "القاهرة هي عاصمة مصر. افتتح المتحف في ٥ مارس ٢٠٢١.",
    "english": "Berlin is the capital of Germany.",
}


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_bundled_text_has_every_script_and_a_licence_header():
    head = tb.MULTILINGUAL_TEXT.read_text(encoding="utf-8").splitlines()[:5]
    assert any("licence" in line.lower() for line in head) and all(line.startswith("#") for line in head[:3])
    text = "\n".join(tb.multilingual_texts())
    assert "\u0301" in text  # a combining mark
    for first, last in [("\u0400", "\u04ff"), ("\u4e00", "\u9fff"), ("\u0600", "\u06ff"), ("a", "z")]:
        assert any(first <= c <= last for c in text), (first, last)


def test_four_roles_with_their_heads_and_labels(tiny_multilingual_models):
    configs = {r: json.loads(Path(p, "config.json").read_text()) for r, p in tiny_multilingual_models.items()}
    assert set(configs) == {"qg", "qa", "nli", "ner"}
    assert configs["qg"]["architectures"] == ["T5ForConditionalGeneration"]
    assert configs["qa"]["architectures"] == ["AlbertForQuestionAnswering"]
    assert sorted(configs["nli"]["id2label"].values()) == ["contradiction", "entailment", "neutral"]
    labels = set(configs["ner"]["id2label"].values())
    assert "O" in labels and all(lab == "O" or lab[:2] in ("B-", "I-") for lab in labels)
    for path in tiny_multilingual_models.values():  # small: seconds to build and load
        assert Path(path, "model.safetensors").stat().st_size < 1_000_000
        assert Path(path, "tokenizer.json").is_file()


def test_build_is_byte_for_byte_reproducible(tmp_path, tiny_multilingual_models):
    tb.build_tiny_multilingual_models(tmp_path / "again")
    first = Path(tiny_multilingual_models["qa"]).parent
    assert _digests(tmp_path / "again") == _digests(first)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_offsets_slice_the_text_in_every_script(tiny_multilingual_models, script):
    from transformers import AutoTokenizer

    text = SCRIPTS[script]
    for role in ("qa", "nli", "ner"):
        tok = AutoTokenizer.from_pretrained(tiny_multilingual_models[role])
        assert tok.is_fast
        enc = tok(text, return_offsets_mapping=True)
        pieces = tok.convert_ids_to_tokens(enc["input_ids"])
        for piece, (start, end) in zip(pieces, enc["offset_mapping"]):
            if piece in tok.all_special_tokens or piece == "▁":
                continue
            # the piece is the text it points to (a leading "▁" is the space before the word)
            assert text[start:end].lstrip(" ") == piece.lstrip("▁"), (piece, text[start:end])
        assert tok.unk_token_id not in enc["input_ids"]  # every character of the bundled text is known


def test_highlight_marker_is_one_token(tiny_multilingual_models):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_multilingual_models["qg"])
    ids = tok("generate question: Sie wohnt in <hl> Berlin <hl>.")["input_ids"]
    assert ids.count(tok.convert_tokens_to_ids("<hl>")) == 2
    assert ids[-1] == tok.eos_token_id
