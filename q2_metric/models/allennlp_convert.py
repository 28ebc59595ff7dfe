"""Convert an AllenNLP RoBERTa NLI archive (the paper's `snli_roberta-2020.06.09.tar.gz`) into a
transformers `RobertaForSequenceClassification` directory.

The archive's model is a `basic_classifier`: a RoBERTa embedder (`pretrained_transformer`), a
`cls_pooler`, one tanh feed-forward layer and a linear classification layer, with the label names
in `vocabulary/labels.txt`. That is exactly RoBERTa's classification head (dense + tanh + out_proj
over the first token), so the weights map one to one. The archive holds no tokenizer or
transformer config: both come from the embedder's `model_name` (roberta-large) unless
`base_model` names another source.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

EMBEDDER = "_text_field_embedder.token_embedder_tokens.transformer_model."
FEEDFORWARD = "_feedforward._linear_layers.0."
CLASSIFIER = "_classification_layer."


class ArchiveError(ValueError):
    """The archive is not an AllenNLP RoBERTa classifier this converter understands."""


def read_archive(path: str | Path) -> tuple[dict, dict, list[str]]:
    """(config, state dict, label names) of an AllenNLP model archive (.tar.gz or a folder)."""
    import torch

    path = Path(path)

    def load(read):
        config = json.loads(read("config.json"))
        weights = torch.load(io.BytesIO(read("weights.th", binary=True)), map_location="cpu", weights_only=True)
        labels = [line.strip() for line in read("vocabulary/labels.txt").splitlines() if line.strip()]
        return config, weights, labels

    if path.is_dir():
        return load(lambda name, binary=False: (path / name).read_bytes() if binary else (path / name).read_text())
    if not path.is_file():
        raise ArchiveError(f"{path}: no such archive.")
    with tarfile.open(path) as tar:
        names = {Path(m.name).as_posix().lstrip("./"): m for m in tar.getmembers()}

        def read(name: str, binary: bool = False):
            member = names.get(name)
            if member is None:
                raise ArchiveError(f"{path}: {name} is missing; is this an AllenNLP model archive?")
            data = tar.extractfile(member).read()
            return data if binary else data.decode("utf-8")

        return load(read)


def check_layout(config: dict) -> str:
    """The embedder's `model_name`, after checking that the model is the expected classifier."""
    model = config.get("model", {})
    ff = model.get("feedforward") or {}
    ok = (model.get("type") == "basic_classifier"
          and (model.get("seq2vec_encoder") or {}).get("type") == "cls_pooler"
          and ff.get("num_layers") == 1 and ff.get("activations") in ("tanh", ["tanh"]))
    embedder = ((model.get("text_field_embedder") or {}).get("token_embedders") or {}).get("tokens") or {}
    if not ok or embedder.get("type") != "pretrained_transformer":
        raise ArchiveError("the archive's model is not a basic_classifier with a pretrained_transformer embedder, "
                           "a cls_pooler and one tanh feed-forward layer.")
    return embedder["model_name"]


def convert_archive(archive: str | Path, out_dir: str | Path, base_model: str | None = None) -> Path:
    """Write a `RobertaForSequenceClassification` + tokenizer directory with the archive's labels."""
    from transformers import AutoConfig, AutoTokenizer, RobertaForSequenceClassification

    config, weights, labels = read_archive(archive)
    base = base_model or check_layout(config)
    if base_model:
        check_layout(config)
    hf_config = AutoConfig.from_pretrained(base)
    hf_config.num_labels = len(labels)
    hf_config.id2label = dict(enumerate(labels))
    hf_config.label2id = {name: i for i, name in enumerate(labels)}
    model = RobertaForSequenceClassification(hf_config)
    state = {"roberta." + k[len(EMBEDDER):]: v for k, v in weights.items()
             if k.startswith(EMBEDDER) and not k[len(EMBEDDER):].startswith("pooler.")}
    state.update({f"classifier.dense.{p}": weights[FEEDFORWARD + p] for p in ("weight", "bias")})
    state.update({f"classifier.out_proj.{p}": weights[CLASSIFIER + p] for p in ("weight", "bias")})
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ArchiveError(f"the archive's weights do not fit {base}: missing {missing[:3]}, unexpected {unexpected[:3]}.")
    out = Path(out_dir)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out
