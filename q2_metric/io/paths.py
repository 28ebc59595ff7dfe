"""The one output-path guard every front-end calls before any work (`check_run`): no output may
be, contain or lie inside anything the run reads (its data, every local model folder, the
tiny-model folder, the Hugging Face cache), two outputs may not collide, and no output replaces
anything but a regular file.

Paths are compared twice: as written (absolute, `..` folded, no link followed) and as the file
system resolves them (every link followed), so that neither a link to the input nor a link
inside it slips through. An existing output that is a link, a folder, a device, a pipe or a socket
is refused: outputs are written beside their target and renamed into place
(`io.commit_outputs`), which would replace the link or the device node by a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

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
        raise OutputPathError(f"The output path '{path}' ({flag}) cannot be examined ({err.strerror}); "
                              "choose another path.") from None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        raise OutputPathError(f"The output path '{path}' ({flag}) is a symbolic link (to '{target}'); name "
                              "the file to write itself, so that nothing the link points to is replaced.")
    if not stat.S_ISREG(st.st_mode):
        what = _kind(st.st_mode)
        hint = f" name a file in it, e.g. {Path(path) / 'scores.csv'}" if what == "a folder" else \
            " name a regular file"
        raise OutputPathError(f"The output path '{path}' ({flag}) is {what}, not a regular file;{hint}.")


def check_outputs(inputs: Mapping[str, str | os.PathLike | None] | Iterable[tuple[str, str | os.PathLike | None]],
                  outputs: Mapping[str, str | os.PathLike | None] | Iterable[tuple[str, str | os.PathLike | None]],
                  *, folders: Iterable[str] = ()) -> None:
    """Raise `OutputPathError` (one sentence naming both paths) when an output is, contains or lies
    inside an input, or two outputs collide, or an existing output file is not a regular file.

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
                raise OutputPathError(f"The output '{out}' ({flag}) {how} the input '{inp}'{named}; write "
                                      "the output somewhere else, so that the input is kept as it is.")
        for other_flag, other in outs[:i]:
            how = relation(out, other)
            if how == "is":
                raise OutputPathError(f"{other_flag} and {flag} name the same path '{out}'; give each output "
                                      "its own path.")
            if how:
                raise OutputPathError(f"The output '{out}' ({flag}) {how} the output '{other}' ({other_flag}); "
                                      "give each output its own place.")
        if flag not in folders:
            check_regular_target(out, flag)
        elif os.path.lexists(out) and (os.path.islink(out) or not os.path.isdir(out)):
            what = "a symbolic link" if os.path.islink(out) else "not a folder"
            raise OutputPathError(f"The output folder '{out}' ({flag}) is {what}; name a folder.")


def hub_cache_dir() -> Path:
    """The Hugging Face cache of downloaded models (HF_HUB_CACHE, else $HF_HOME/hub, else
    $XDG_CACHE_HOME/huggingface/hub), found as huggingface_hub finds it, without importing it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


TINY_FOLDER = "the tiny-model folder, Q2_TINY_MODELS"


def protected_reads(config: Q2Config | None = None) -> dict[str, str]:
    """What every run reads besides its data (description -> path): each local model folder of
    `config`, the tiny-model folder and the Hugging Face cache."""
    from q2_metric.config import tiny_models_dir

    reads = {}
    for name in MODEL_FIELDS if config is not None else ():
        value = getattr(config, name, None)
        if isinstance(value, str) and value and os.path.isdir(os.path.expanduser(value)):
            reads[f"the {name} folder"] = value
    reads[TINY_FOLDER] = str(tiny_models_dir())
    reads["the Hugging Face cache"] = str(hub_cache_dir())
    return reads


def check_run(reads: PathMap, writes: PathMap, *, config: Q2Config | None = None,
              folders: Iterable[str] = (), builds_tiny_models: bool = False) -> None:
    """The one guard of a run's paths, called by every front-end before any work.

    Args:
        reads: what the run reads (its name as the user gave it, e.g. `input` or `--dataset`
            -> path). The model folders of `config`, the tiny-model folder and the Hugging Face
            cache are added here; an output may not be or lie inside them.
        writes: what the run writes (flag -> path); None entries are skipped.
        config: the run's configuration, whose local model folders are read.
        folders: the names in `writes` that are folders the run writes into.
        builds_tiny_models: the run writes the tiny-model folder (`models.tiny`'s builder).

    Raises:
        OutputPathError: one sentence naming both paths, when an output is, contains or lies inside
            something read, two outputs collide, or an existing output is not a regular file.
    """
    check_outputs(reads, writes, folders=folders)
    outs = [(n, p) for n, p in writes.items() if p]
    for name, folder in protected_reads(config).items():
        if builds_tiny_models and name == TINY_FOLDER:
            continue
        for flag, out in outs:
            how = relation(out, folder)
            if how in ("is", "lies inside"):  # (an output folder may hold them: it writes only its own files)
                raise OutputPathError(f"The output '{out}' ({flag}) {how} {name} '{folder}'; write the output "
                                      "somewhere else, so that it is kept as it is.")


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
