"""Tiny random models: the whole pipeline without the paper's weights (scores mean nothing).

Every front-end takes them the same way: `q2 demo --tiny`, `q2 score --tiny`, `compute(tiny=True)`,
ParlAI's `--q2-tiny true`, or `Q2_TINY=1` in the environment (the Space, and every front-end). They are
built once (a few seconds) into `q2_metric.config.tiny_models_dir()`:

    <dir>/qg/    a T5 question generator (2 layers, d_model 32)
    <dir>/qa/    an ALBERT extractive QA model
    <dir>/nli/   a RoBERTa NLI classifier
    (each with the same WordPiece tokenizer, whose vocabulary is the bundled sample's words)

Their scores mean nothing, but depend on the text, deterministically (0, 0.2, 0.5 and 1 on the bundled
sample, through valid questions and through the fallback): `tiny_builder` says how their weights are set.

Each `config.json` carries `"q2_tiny_random": true`, so the signature names these models
`tiny-random-<digest>` and its short form says `models:tiny-random`.

The tiny multilingual models (`tiny_builder.build_tiny_multilingual_models`: one SentencePiece
vocabulary trained on the bundled multi-script text) are built the same way, once, into
`<dir>/multilingual/` (qg/, qa/, nli/, ner/), by `ensure_tiny_multilingual_models`; a model id
`tiny:<role>-multilingual` (`tiny:qg-multilingual`, `tiny:qa-multilingual`, `tiny:nli-multilingual`,
`tiny:ner-multilingual`) names one of them wherever a model id is read (`resolve_tiny_id`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

# The tiny QG ends its questions by design (`tiny_builder.chain_qg`); a cap bounds the searches.
TINY_QUESTION_LENGTH = 16
MARKER = "q2_tiny_random"
ROLES = ("qg", "qa", "nli")
COREF = "coref"  # the F-Coref model of `coref=True`, built only when asked for
LOCK_FILE = ".lock"
MULTILINGUAL = "multilingual"  # the tiny multilingual models' subfolder
MULTILINGUAL_ROLES = ("qg", "qa", "nli", "ner")
TINY_ID_PREFIX, TINY_ID_SUFFIX = "tiny:", "-multilingual"
# The seed of every draw of the tiny models' weights: every build writes the same bytes.
TINY_SEED = 0
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "wow_sample.csv"


def ensure_tiny_models(
    folder: Path | None = None,
    say: Callable[[str], None] = lambda msg: None,
    *,
    coref: bool = False,
    reads: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The qg/, qa/ and nli/ tiny random models (and coref/ with `coref=True`) in `folder` (default
    `tiny_models_dir()`), built once and reused: role -> folder. Runs building at the same time
    wait for each other (a lock file in the folder); each model is built aside and renamed into
    place (never half-built). Nothing else in the folder is touched, and a model folder there that
    this package did not build is refused, and so is a folder inside what the run reads (`reads`:
    name -> path, e.g. its input folder), before anything is written (`io.paths.check_run`)."""
    from q2_metric.config import tiny_models_dir

    folder = Path(folder) if folder is not None else tiny_models_dir()
    roles = ROLES + (COREF,) * coref

    def build(missing: list[str]) -> None:
        _build(folder, [role for role in missing if role != COREF], coref=COREF in missing)

    return _ensure(folder, roles, build, "small random models", say, reads)


def _ensure(
    folder: Path,
    roles: tuple[str, ...],
    build: Callable[[list[str]], None],
    what: str,
    say: Callable[[str], None],
    reads: Mapping[str, Any] | None,
) -> dict[str, str]:
    """The rules of every tiny-model folder (`ensure_tiny_models`): role -> folder of `roles` in
    `folder`, the missing ones built once by `build` under the folder's lock; a model folder there
    this package did not build refused, and so is a folder inside what the run reads."""
    paths = {role: str(folder / role) for role in roles}
    if all(_is_tiny(folder / role) for role in roles):
        return paths
    from q2_metric.errors import Q2InputError

    foreign = [folder / role for role in roles if (folder / role).exists() and not _is_tiny(folder / role)]
    if foreign or (folder.exists() and not folder.is_dir()):
        raise Q2InputError(
            f"The tiny-model folder '{folder}' holds '{foreign[0] if foreign else folder}', which "
            "is not a tiny model this package built; point Q2_TINY_MODELS at an empty or new folder."
        )
    from q2_metric.io.paths import check_run

    check_run(
        {"the q2_metric package": SAMPLE.parents[1], **(reads or {})},
        {"Q2_TINY_MODELS": folder},
        folders=["Q2_TINY_MODELS"],
        builds_tiny_models=True,
    )
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / LOCK_FILE):
        missing = [role for role in roles if not _is_tiny(folder / role)]  # another run may have built them
        if missing:
            say(f"Building {what} into {folder} (once, a few seconds)...")
            build(missing)
    return paths
    from q2_metric.errors import Q2InputError

    foreign = [folder / role for role in roles if (folder / role).exists() and not _is_tiny(folder / role)]
    if foreign or (folder.exists() and not folder.is_dir()):
        raise Q2InputError(
            f"The tiny-model folder '{folder}' holds '{foreign[0] if foreign else folder}', which "
            "is not a tiny model this package built; point Q2_TINY_MODELS at an empty or new folder."
        )
    from q2_metric.io.paths import check_run

    check_run(
        {"the q2_metric package": SAMPLE.parents[1], **(reads or {})},
        {"Q2_TINY_MODELS": folder},
        folders=["Q2_TINY_MODELS"],
        builds_tiny_models=True,
    )
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / LOCK_FILE):
        missing = [role for role in roles if not _is_tiny(folder / role)]  # another run may have built them
        if missing:
            say(f"Building small random models into {folder} (once, a few seconds)...")
            _build(folder, [role for role in missing if role != COREF], coref=COREF in missing)
    return paths


def tiny_model_id(role: str) -> str:
    """The model id of a tiny multilingual model.

    >>> tiny_model_id("qa")
    'tiny:qa-multilingual'
    """
    return f"{TINY_ID_PREFIX}{role}{TINY_ID_SUFFIX}"


def is_tiny_id(model: str) -> bool:
    """Whether `model` is spelt as a tiny model id (`tiny:...`), known or not."""
    return str(model).startswith(TINY_ID_PREFIX)


def resolve_tiny_id(
    model: str,
    folder: Path | None = None,
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> str:
    """The folder of the tiny multilingual model `model` names (`tiny:<role>-multilingual`, built
    on first use by `ensure_tiny_multilingual_models`); any other model id comes back as it is.
    An id spelt `tiny:` that names no tiny model is refused in one sentence.

    >>> resolve_tiny_id("deepset/xlm-roberta-large-squad2")
    'deepset/xlm-roberta-large-squad2'
    """
    if not is_tiny_id(model):
        return model
    known = {tiny_model_id(role): role for role in MULTILINGUAL_ROLES}
    if model not in known:
        from q2_metric.errors import Q2InputError

        raise Q2InputError(
            f"The model '{model}' names no tiny model; the tiny models are {', '.join(known)}."
        )
    return ensure_tiny_multilingual_models(folder, say, reads=reads)[known[model]]


def ensure_tiny_multilingual_models(
    folder: Path | None = None,
    say: Callable[[str], None] = lambda msg: None,
    *,
    reads: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The tiny multilingual models (qg/, qa/, nli/, ner/) in `folder` (default
    `tiny_models_dir()/multilingual`), built once and reused, under the same rules as
    `ensure_tiny_models`: a lock, each model built aside and renamed into place, a model folder
    there that this package did not build refused, never inside what the run reads (`reads`)."""
    from q2_metric.config import tiny_models_dir

    folder = Path(folder) if folder is not None else tiny_models_dir() / MULTILINGUAL
    return _ensure(
        folder,
        tuple(MULTILINGUAL_ROLES),
        lambda missing: _build_multilingual(folder, missing),
        "small random multilingual models",
        say,
        reads,
    )


def _build_multilingual(folder: Path, roles: list[str]) -> None:
    import tempfile

    from q2_metric.models.loading import _quiet
    from q2_metric.models.tiny_builder import build_tiny_multilingual_models

    with tempfile.TemporaryDirectory(dir=folder, prefix=".tiny-") as tmp, _quiet():
        build_tiny_multilingual_models(tmp, seed=TINY_SEED)
        _mark_and_move(Path(tmp), folder, roles)


def _mark_and_move(tmp: Path, folder: Path, roles: list[str]) -> None:
    """Mark each built role's config (the mark the signature reads), then rename it into place."""
    import shutil

    for role in roles:
        config_file = tmp / role / "config.json"
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config_file.write_text(json.dumps({**config, MARKER: True}, indent=2), encoding="utf-8")
        if _is_tiny(folder / role):  # only our own earlier copy is replaced
            shutil.rmtree(folder / role)
        os.replace(tmp / role, folder / role)


def _build(folder: Path, roles: list[str], coref: bool) -> None:
    import tempfile

    from q2_metric.io import read_rows
    from q2_metric.models.loading import _quiet

    rows = [r.fields for r in read_rows(SAMPLE) if r.error is None]
    texts = [r["response"] for r in rows] + [r["knowledge"] for r in rows]
    with tempfile.TemporaryDirectory(dir=folder, prefix=".tiny-") as tmp, _quiet():
        if roles:
            from q2_metric.models.tiny_builder import build_tiny_models

            build_tiny_models(tmp, texts, size="tiny", seed=TINY_SEED)
        if coref:
            from q2_metric.models.hf_coref import build_tiny_coref_model

            build_tiny_coref_model(Path(tmp, COREF), texts, seed=TINY_SEED)
        _mark_and_move(Path(tmp), folder, roles + [COREF] * coref)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created if needed), held for the block."""
    import fcntl

    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_tiny(path: Path) -> bool:
    try:
        return json.loads((path / "config.json").read_text(encoding="utf-8")).get(MARKER) is True
    except (OSError, ValueError, AttributeError):
        return False


def uses_tiny(config: Any) -> bool:
    """Whether any model of `config` (a `Q2Config`) is one of these tiny random models: the one
    test of "are these the tiny models?" for a configuration (a signature's is `Signature.tiny`)."""
    return any(_is_tiny(Path(str(getattr(config, f"{role}_model")))) for role in ROLES)


@contextlib.contextmanager
def tiny_hint(
    how: str | None = None, spell: Callable[[str], str] | None = None, *, offer: str | None = None
) -> Iterator[None]:
    """A model missing: its message ends by pointing to the tiny models (`how`: the front-end's
    switch; default: the `tiny` option as `spell` spells it, e.g. "`tiny=True`" or "`--tiny`";
    `offer`: the whole pointer in the front-end's words, after "; or ")."""
    from q2_metric.errors import ModelNotAvailable

    if offer is None:
        if how is None:
            name = (spell or (lambda n: "--" + n))("tiny")
            how = f"`{name}`" if name.startswith("-") else f"`{name}=True`"
        offer = f"try the whole pipeline now on tiny random models (meaningless scores, no download): {how}"
    try:
        yield
    except ModelNotAvailable as err:
        text = str(err).rstrip(".")
        if "tiny random models" in text:
            raise
        raise ModelNotAvailable(f"{text}; or {offer}.") from None
