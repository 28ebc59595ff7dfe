"""`q2 convert-nli`: an AllenNLP RoBERTa NLI archive in the paper's layout, built here from a tiny
RoBERTa, becomes a transformers model whose logits equal the archive's computed by hand."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import torch
from support.cli import cli
from support.data import sample_rows

from q2_metric.config import Q2Config
from q2_metric.models.hf_nli import HFNLIClassifier
from q2_metric.models.tiny_builder import train_tokenizer

LABELS = ["entailment", "contradiction", "neutral"]  # AllenNLP's order for SNLI


def build_archive(tmp_path):
    from transformers import RobertaConfig, RobertaModel

    texts = [r["response"] for r in sample_rows()] + [r["knowledge"] for r in sample_rows()]
    base = tmp_path / "tiny-roberta"
    torch.manual_seed(0)
    roberta = RobertaModel(
        RobertaConfig(
            vocab_size=600,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=514,
            pad_token_id=0,
        )
    )
    roberta.save_pretrained(base)
    train_tokenizer(texts, vocab_size=600).save_pretrained(base)
    ff, cls = torch.nn.Linear(32, 32), torch.nn.Linear(32, 3)
    weights = {
        f"_text_field_embedder.token_embedder_tokens.transformer_model.{k}": v
        for k, v in roberta.state_dict().items()
    }
    weights.update({f"_feedforward._linear_layers.0.{k}": v for k, v in ff.state_dict().items()})
    weights.update({f"_classification_layer.{k}": v for k, v in cls.state_dict().items()})
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
            "dropout": 0.1,
        }
    }
    archive = tmp_path / "snli_roberta-tiny.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (
            ("config.json", json.dumps(config).encode()),
            ("vocabulary/labels.txt", ("\n".join(LABELS) + "\n").encode()),
            ("vocabulary/non_padded_namespaces.txt", b"*tags\n*labels\n"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        buf = io.BytesIO()
        torch.save(weights, buf)
        info = tarfile.TarInfo("weights.th")
        info.size = buf.tell()
        buf.seek(0)
        tar.addfile(info, buf)
    return archive, roberta, ff, cls


def test_converted_model_equals_the_archive_by_hand(tmp_path):
    archive, roberta, ff, cls = build_archive(tmp_path)
    roberta.eval()
    res = subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", "convert-nli", str(archive), str(tmp_path / "nli")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    nli = HFNLIClassifier(Q2Config(nli_model=str(tmp_path / "nli"), device="cpu"))
    assert nli.model.config.id2label == dict(enumerate(LABELS))
    premises = ["gardening is considered to be a relaxing activity.", "bob ross hosted a show on pbs."]
    hypotheses = ["i love gardening .", "he was born on pbs ."]
    enc = nli.tokenizer(premises, hypotheses, return_tensors="pt", padding=True)
    with torch.no_grad():
        converted = nli.model(**enc).logits
        first = roberta(**enc).last_hidden_state[:, 0]  # cls_pooler
        by_hand = cls(torch.tanh(ff(first)))  # feed-forward (tanh), classification layer
    torch.testing.assert_close(converted, by_hand)
    expected = [LABELS[i] for i in by_hand.argmax(-1).tolist()]
    assert nli.classify(premises, hypotheses) == expected


def test_not_an_allennlp_archive_is_one_sentence(tmp_path):
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        data = b"{}"
        info = tarfile.TarInfo("config.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    res = subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", "convert-nli", str(bad), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 2
    assert res.stderr.strip() == f"q2: {bad}: weights.th is missing; is this an AllenNLP model archive?"


def tar_with(path: Path, members: list[tuple[str, bytes | None, bytes]]) -> Path:
    """(name, data or None, type) members; type is a tarfile type (REGTYPE, SYMTYPE, LNKTYPE, DIRTYPE)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = "/etc/passwd"
            if data is not None and kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return path


def test_convert_nli_damaged_archives_are_one_sentence(tmp_path):
    import torch

    buf = io.BytesIO()
    torch.save({"w": torch.zeros(1)}, buf)
    weights, labels = buf.getvalue(), b"entailment\ncontradiction\nneutral\n"
    good_config = json.dumps({"model": {"type": "basic_classifier"}}).encode()
    R, S, L, D = tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE
    rest = [("weights.th", weights, R), ("vocabulary/labels.txt", labels, R)]
    cases = {
        "symlink": (
            [("config.json", None, S), *rest],
            "config.json is a symbolic link in the archive, not a file",
        ),
        "hardlink": (
            [("config.json", None, L), *rest],
            "config.json is a hard link in the archive, not a file",
        ),
        "dir": ([("config.json", None, D), *rest], "config.json is a directory in the archive, not a file"),
        "badjson": ([("config.json", b"{nope", R), *rest], "config.json is not valid JSON"),
        "notorch": (
            [
                ("config.json", good_config, R),
                ("weights.th", b"not a pickle", R),
                ("vocabulary/labels.txt", labels, R),
            ],
            "weights.th is not a PyTorch state dict",
        ),
        "dotdot": ([("../config.json", good_config, R), *rest], "config.json is missing"),
    }
    (tmp_path / "work").mkdir()
    for name, (members, expected) in cases.items():
        archive = tar_with(tmp_path / f"{name}.tar.gz", members)
        res = cli("convert-nli", str(archive), "out", cwd=tmp_path / "work")
        assert res.returncode == 2 and res.stderr.count("\n") == 1, (name, res.stderr)
        assert res.stderr.startswith(f"q2: {archive}: {expected}"), (name, res.stderr)
    not_tar = tmp_path / "plain.tar.gz"
    not_tar.write_text("hello")
    res = cli("convert-nli", str(not_tar), "out", cwd=tmp_path / "work")
    assert res.returncode == 2 and res.stderr.startswith(f"q2: {not_tar}: not a tar archive"), res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*(f"{n}.tar.gz" for n in cases), "plain.tar.gz", "work"]
    )
    assert list((tmp_path / "work").iterdir()) == []  # nothing written, not even the output folder
