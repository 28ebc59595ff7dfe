"""Convert an AllenNLP RoBERTa NLI archive (the paper's `snli_roberta-2020.06.09.tar.gz`) into a
transformers `RobertaForSequenceClassification` directory.

The archive's model is a `basic_classifier`: a RoBERTa embedder (`pretrained_transformer`), a
`cls_pooler`, one tanh feed-forward layer and a linear classification layer, with the label names
in `vocabulary/labels.txt`. That is exactly RoBERTa's classification head (dense + tanh + out_proj
over the first token), so the weights map one to one. The archive holds no tokenizer or
transformer config: both come from the embedder's `model_name` (roberta-large) unless
`base_model` names another source. The written config carries `q2_nli_input: allennlp10`, so the
NLI backend feeds the model the ids AllenNLP 1.0 built (`allennlp_input`).
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
from collections.abc import Callable
from pathlib import Path

from q2_metric.errors import Q2Error
from q2_metric.models.paper.allennlp_input import ALLENNLP, MARKER

EMBEDDER = "_text_field_embedder.token_embedder_tokens.transformer_model."
FEEDFORWARD = "_feedforward._linear_layers.0."
CLASSIFIER = "_classification_layer."


class ArchiveError(Q2Error, ValueError):
    """The archive is not an AllenNLP RoBERTa classifier this converter understands."""


def read_archive(path: str | Path) -> tuple[dict, dict, list[str]]:
    """(config, state dict, label names) of an AllenNLP model archive (.tar.gz or a folder).

    Only the three regular files `config.json`, `weights.th` and `vocabulary/labels.txt` are read
    (by exact name: `../config.json` is not `config.json`); a link, a folder in their place, bad
    JSON or weights that are not a PyTorch state dict raise `ArchiveError`. Nothing is extracted."""
    path = Path(path)
    if path.is_dir():

        def read(name: str) -> bytes:
            member = path / name
            if member.is_symlink() or not member.is_file():
                what = "a link" if member.is_symlink() else "missing" if not member.exists() else "not a file"
                raise ArchiveError(f"{path}: {name} is {what}; is this an AllenNLP model archive?")
            return member.read_bytes()

        return _parse(path, read)
    if not path.is_file():
        raise ArchiveError(f"{path}: no such archive.")
    try:
        tar = tarfile.open(path)  # noqa: SIM115 (entered by `with tar:` below; apart so only opening errors get this sentence)
    except (tarfile.TarError, OSError) as err:
        raise ArchiveError(f"{path}: not a tar archive ({err}); pass the .tar.gz AllenNLP wrote.") from None
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, OSError, EOFError) as err:
            raise ArchiveError(f"{path}: the archive is damaged ({err}).") from None
        names: dict[str, tarfile.TarInfo] = {}
        for m in members:
            name = posixpath.normpath(m.name)  # "./config.json" -> "config.json"; "../x" stays "../x"
            names.setdefault(name, m)

        def read(name: str) -> bytes:
            member = names.get(name)
            if member is None:
                raise ArchiveError(f"{path}: {name} is missing; is this an AllenNLP model archive?")
            if not member.isfile():
                kind = (
                    "a symbolic link"
                    if member.issym()
                    else "a hard link"
                    if member.islnk()
                    else "a directory"
                    if member.isdir()
                    else "not a regular file"
                )
                raise ArchiveError(
                    f"{path}: {name} is {kind} in the archive, not a file; is this an AllenNLP model archive?"
                )
            try:
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file (checked above) always has its bytes
                return extracted.read()
            except (tarfile.TarError, OSError, EOFError) as err:
                raise ArchiveError(
                    f"{path}: {name} cannot be read ({err}); the archive is damaged."
                ) from None

        return _parse(path, read)


def _parse(path: Path, read: Callable[[str], bytes]) -> tuple[dict, dict, list[str]]:
    import torch

    raw = read("config.json")
    try:
        config = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ArchiveError(f"{path}: config.json is not valid JSON ({err}).") from None
    if not isinstance(config, dict):
        raise ArchiveError(f"{path}: config.json is not a JSON object.")
    data = read("weights.th")
    try:
        weights = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds (pickle, zip, runtime) for a file it cannot read
        raise ArchiveError(
            f"{path}: weights.th is not a PyTorch state dict ({type(err).__name__})."
        ) from None
    if not isinstance(weights, dict) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise ArchiveError(f"{path}: weights.th is not a PyTorch state dict of tensors.")
    raw = read("vocabulary/labels.txt")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError(f"{path}: vocabulary/labels.txt is not UTF-8 text.") from None
    return config, weights, [line.strip() for line in text.splitlines() if line.strip()]


def check_layout(config: dict) -> str:
    """The embedder's `model_name`, after checking that the model is the expected classifier."""
    model = config.get("model")
    if not isinstance(model, dict):
        raise ArchiveError("the archive's config.json has no model section.")
    try:  # a section that is not an object is as wrong as a missing one
        ff = model.get("feedforward") or {}
        ok = (
            model.get("type") == "basic_classifier"
            and (model.get("seq2vec_encoder") or {}).get("type") == "cls_pooler"
            and ff.get("num_layers") == 1
            and ff.get("activations") in ("tanh", ["tanh"])
        )
        embedder = ((model.get("text_field_embedder") or {}).get("token_embedders") or {}).get("tokens") or {}
        ok = (
            ok
            and embedder.get("type") == "pretrained_transformer"
            and isinstance(embedder.get("model_name"), str)
        )
    except AttributeError:
        ok = False
    if not ok:
        raise ArchiveError(
            "the archive's model is not a basic_classifier with a pretrained_transformer embedder, "
            "a cls_pooler and one tanh feed-forward layer."
        )
    return embedder["model_name"]


def convert_archive(archive: str | Path, out_dir: str | Path, base_model: str | None = None) -> Path:
    """Write a `RobertaForSequenceClassification` + tokenizer directory with the archive's labels."""
    from transformers import AutoConfig, AutoTokenizer, RobertaForSequenceClassification

    config, weights, labels = read_archive(archive)
    base = base_model or check_layout(config)
    if base_model:
        check_layout(config)
    try:
        hf_config = AutoConfig.from_pretrained(base)
    except (OSError, ValueError) as err:
        raise ArchiveError(
            f"the base model {base!r} (the transformer config and tokenizer) cannot be loaded: "
            f"{str(err).splitlines()[0] if str(err) else type(err).__name__}; pass --base-model."
        ) from None
    hf_config.num_labels = len(labels)
    hf_config.id2label = dict(enumerate(labels))
    hf_config.label2id = {name: i for i, name in enumerate(labels)}
    setattr(hf_config, MARKER, ALLENNLP)  # the NLI backend then feeds AllenNLP 1.0's input (allennlp_input)
    model = RobertaForSequenceClassification(hf_config)
    state = {
        "roberta." + k[len(EMBEDDER) :]: v
        for k, v in weights.items()
        if k.startswith(EMBEDDER) and not k[len(EMBEDDER) :].startswith("pooler.")
    }
    try:
        state.update({f"classifier.dense.{p}": weights[FEEDFORWARD + p] for p in ("weight", "bias")})
        state.update({f"classifier.out_proj.{p}": weights[CLASSIFIER + p] for p in ("weight", "bias")})
        missing, unexpected = model.load_state_dict(state, strict=False)
    except (KeyError, RuntimeError) as err:
        raise ArchiveError(f"the archive's weights do not fit {base}: {str(err).splitlines()[0]}.") from None
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ArchiveError(
            f"the archive's weights do not fit {base}: missing {missing[:3]}, unexpected {unexpected[:3]}."
        )
    import tempfile

    from q2_metric.io.paths import move_into

    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    # written beside the target folder, then each file renamed into it: never a half-written model
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.q2tmp-") as tmp:
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(base).save_pretrained(tmp)
        move_into(tmp, out)
    return out
