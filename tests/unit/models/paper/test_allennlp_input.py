"""The NLI input of a `q2 convert-nli` model equals what AllenNLP 1.0 fed the paper's RoBERTa SNLI
model. Expected ids were recorded from AllenNLP 1.0.0 / allennlp-models 1.0.0 (transformers 2.11)
running the released call, `Predictor.from_path(archive, "textual_entailment").predict(...)`, on a
tiny RoBERTa archive: tests/data/allennlp10/record_allennlp10.py (tokenizer files in roberta/)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
import torch
from support.data import TEST_DATA

from q2_metric.config import Q2Config
from q2_metric.models.allennlp_convert import convert_archive
from q2_metric.models.hf_nli import HFNLIClassifier
from q2_metric.models.paper.reference_tokenization import tokenization_path

DATA = TEST_DATA / "allennlp10"
LABELS = ["entailment", "contradiction", "neutral"]
RECORDED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))["pairs"]
# Pairs whose recorded ids come from 2.11's slow-tokenizer wrapper (whitespace stripped at special-token
# splits, whitespace-only text emptied), not from the fast tokenizer AllenNLP 1.0 used: not comparable.
COMPARABLE = [r for r in RECORDED if not r["slow_only"]]


def write_archive(tmp_path: Path) -> Path:
    """An AllenNLP archive in the paper's layout over a tiny random RoBERTa with the recorded tokenizer."""
    from transformers import RobertaConfig, RobertaModel

    base = tmp_path / "base"
    shutil.copytree(DATA / "roberta", base)
    torch.manual_seed(0)
    roberta = RobertaModel(RobertaConfig.from_pretrained(base))
    weights = {
        f"_text_field_embedder.token_embedder_tokens.transformer_model.{k}": v
        for k, v in roberta.state_dict().items()
    }
    for prefix, layer in (
        ("_feedforward._linear_layers.0.", torch.nn.Linear(32, 32)),
        ("_classification_layer.", torch.nn.Linear(32, 3)),
    ):
        weights.update({prefix + k: v for k, v in layer.state_dict().items()})
    config = {
        "model": {
            "type": "basic_classifier",
            "text_field_embedder": {
                "token_embedders": {
                    "tokens": {"type": "pretrained_transformer", "model_name": str(base), "max_length": 512}
                }
            },
            "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 32},
            "feedforward": {"input_dim": 32, "num_layers": 1, "hidden_dims": 32, "activations": "tanh"},
        }
    }
    buf = io.BytesIO()
    torch.save(weights, buf)
    archive = tmp_path / "snli.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (
            ("config.json", json.dumps(config).encode()),
            ("weights.th", buf.getvalue()),
            ("vocabulary/labels.txt", "\n".join(LABELS).encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("allennlp10")
    return str(convert_archive(write_archive(tmp), tmp / "nli"))


def fed(nli: HFNLIClassifier, premises: list[str], hypotheses: list[str]) -> list[dict]:
    """What the model receives, one dict per call (a hook on its forward)."""
    seen: list[dict] = []
    handle = nli.model.register_forward_pre_hook(
        lambda m, a, kw: seen.append({k: v.tolist() for k, v in kw.items() if v is not None}),
        with_kwargs=True,
    )
    try:
        nli.classify(premises, hypotheses)
    finally:
        handle.remove()
    return seen


def test_recorded_set_covers_the_cases():
    assert len(COMPARABLE) == 29 and len(RECORDED) == 33
    assert sum(len(r["input_ids"]) > 1 for r in COMPARABLE) == 4  # folded at 512 by AllenNLP
    assert all(r["token_type_ids"] is None for r in RECORDED)  # all type ids 0: AllenNLP passes none


def test_converted_model_receives_allennlp_ids(converted):
    nli = HFNLIClassifier(Q2Config(nli_model=converted, device="cpu", nli_batch_size=64))
    assert nli.tokenization == "allennlp10"
    calls = fed(nli, [r["premise"] for r in COMPARABLE], [r["hypothesis"] for r in COMPARABLE])
    rows = {}
    for call in calls:
        assert "token_type_ids" not in call
        for ids, mask in zip(call["input_ids"], call["attention_mask"]):
            n = sum(mask)
            assert mask == [1] * n + [0] * (len(mask) - n)
            rows.setdefault(tuple(ids[:n]), 0)
            rows[tuple(ids[:n])] += 1
    assert sum(rows.values()) == len(COMPARABLE)  # one row per pair: no windows
    for r in COMPARABLE:
        first = r["input_ids"][0]  # the segment whose <s> the cls_pooler reads
        assert r["attention_mask"][0] == [1] * len(first)
        assert tuple(first) in rows, (r["premise"][:40], r["hypothesis"][:40])


def test_one_pair_at_a_time_gives_the_same_ids(converted):
    nli = HFNLIClassifier(Q2Config(nli_model=converted, device="cpu", nli_batch_size=1))
    for r in COMPARABLE[:6] + [r for r in COMPARABLE if len(r["input_ids"]) > 1]:
        (call,) = fed(nli, [r["premise"]], [r["hypothesis"]])
        assert call["input_ids"] == [r["input_ids"][0]]


def test_signature_names_the_path(converted, tmp_path):
    assert tokenization_path(converted, "nli") == "allennlp10"
    plain = tmp_path / "plain"
    shutil.copytree(converted, plain)
    config = json.loads((plain / "config.json").read_text())
    del config["q2_nli_input"]
    (plain / "config.json").write_text(json.dumps(config))
    assert tokenization_path(str(plain), "nli") == "hf"
    assert HFNLIClassifier(Q2Config(nli_model=str(plain), device="cpu")).tokenization == "hf"
