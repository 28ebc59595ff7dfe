"""The output-path rule every front-end applies before any model work: no output may be, contain
or lie inside an input, and no output replaces anything but a regular file.

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
from typing import Iterable, Mapping
from q2_metric.errors import OutputPathError



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
