"""Writing a set of outputs all-or-nothing (`commit_outputs`), and finishing or undoing what a killed
run left (`recover_outputs`); see `io` for how."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from q2_metric.io.interrupts import uninterruptible
from q2_metric.io.paths import check_regular_target

try:
    import fcntl
except ImportError:  # not POSIX: no locks; a manifest whose writer is alive is then left alone
    fcntl = None  # type: ignore[assignment]  # no fcntl (Windows): folders are not locked

TEMP_MARK = ".q2tmp-"
MANIFEST_SUFFIX = ".q2-manifest.json"

# what writes one output: it gets the open file, text (UTF-8, newline="") or bytes when it has `binary = True`
Writer = Callable[[Any], Any]


def pause_point(point: str) -> None:
    """Test-only hook for the kill tests: when Q2_TEST_PAUSE names `point`, write the file named by
    Q2_TEST_PAUSE_FILE and wait (up to 600 s) until the test removes it, so that a test can signal
    the process exactly here, or let it go on."""
    if os.environ.get("Q2_TEST_PAUSE") == point:
        flag = Path(os.environ["Q2_TEST_PAUSE_FILE"])
        flag.write_text(point)
        deadline = time.monotonic() + 600
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


@contextlib.contextmanager
def locked(path: Path, shared: bool = False) -> Iterator[None]:
    """An advisory lock (`flock`) on `path` (a file or a folder) while the block runs: other q2
    processes wait for it. Where locks are not supported the block runs unlocked."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        except OSError:  # e.g. a file system without locks
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _locked_folders(paths: Iterable[Path]) -> Iterator[None]:
    """Lock every existing folder of `paths`, in a fixed order (no deadlock between two sets)."""
    with contextlib.ExitStack() as stack:
        for folder in sorted({str(p.parent.resolve()) for p in paths}):
            if os.path.isdir(folder):
                stack.enter_context(locked(Path(folder)))
        yield


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _temp_name(path: Path) -> Path:
    return path.parent / f".{path.name}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _manifest_path(path: Path) -> Path:
    return path.parent / f".{path.name}{MANIFEST_SUFFIX}"


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_new(path: Path, write: Writer, target: Path | None = None) -> None:
    """Create `path` (mode 0666 less the umask, like any new file) and write it durably. An OS
    error (a full disk) names `target`, the file being written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        binary = getattr(write, "binary", False)  # a Parquet writer writes bytes
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(
            err.errno, f"{err.strerror} while writing (the earlier outputs are kept)", str(target or path)
        ) from None


def recover_outputs(paths: Iterable[str | Path]) -> None:
    """Finish or undo what a killed run left next to `paths`.

    A manifest means the killed run had written its whole set: its renames are completed. Temporary
    files of runs that are no longer alive are removed (a manifest's files are renamed first). Runs
    the output folders' locks, so that the manifest of a live run (which holds them while it
    commits) is never touched."""
    folders = [Path(p) for p in paths]
    with _locked_folders(folders):
        _recover(folders)


def _recover(paths: list[Path]) -> None:
    for path in paths:
        manifest = _manifest_path(path)
        if not manifest.exists():
            continue
        try:
            body = json.loads(manifest.read_text(encoding="utf-8"))
            pairs, writer = body["files"], body.get("pid")
        except (ValueError, KeyError, OSError):
            pairs, writer = [], None  # a manifest is renamed into place whole, so this is not expected
        if fcntl is None and writer not in (None, os.getpid()) and _alive(writer):
            continue  # no locks here: a live writer may be renaming this set right now
        for tmp, final in pairs:
            if Path(tmp).exists():
                os.replace(tmp, final)
        manifest.unlink(missing_ok=True)
    legacy = {p.parent / p.name: re.compile(re.escape(f".{p.name}.") + r"[a-z0-9_]{8}\.tmp") for p in paths}
    for folder in {p.parent for p in paths}:
        if not folder.is_dir():
            continue
        for stale in folder.iterdir():
            name = stale.name
            if any(folder == target.parent and pattern.fullmatch(name) for target, pattern in legacy.items()):
                stale.unlink(missing_ok=True)  # mkstemp names of earlier versions: no process to ask
                continue
            if not (name.startswith(".") and TEMP_MARK in name):
                continue
            try:
                pid = int(name.rsplit(TEMP_MARK, 1)[1].split("-")[0])
            except ValueError:
                continue
            if pid != os.getpid() and not _alive(pid):
                stale.unlink(missing_ok=True)


def commit_outputs(files: Sequence[tuple[str | Path, Writer]]) -> None:
    """Write every `(path, write)` of the set so that the set changes all at once or not at all.

    The output folders are locked while the set is written and renamed: two runs writing the same
    outputs take turns (the last one's set is kept whole). SIGINT/SIGTERM wait while the manifest
    and the renames are written."""
    targets = [Path(p) for p, _ in files]
    for target in targets:  # a link, a device or a folder in a target's place is never replaced
        check_regular_target(target, "output")
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
    with _locked_folders(targets):
        _recover(targets)
        temps: list[Path] = []
        try:
            for target, (_, write) in zip(targets, files):
                tmp = _temp_name(target)
                temps.append(tmp)
                _write_new(tmp, write, target)
            pause_point("temps-written")
            manifest = _manifest_path(targets[0])
            manifest_tmp = _temp_name(manifest)
            temps.append(manifest_tmp)
            body = json.dumps(
                {
                    "pid": os.getpid(),
                    "files": [[str(t.resolve()), str(p.resolve())] for t, p in zip(temps, targets)],
                }
            )
            _write_new(manifest_tmp, lambda f: f.write(body), manifest)
        except BaseException:
            for tmp in temps:
                tmp.unlink(missing_ok=True)
            raise
        with uninterruptible():
            os.replace(manifest_tmp, manifest)
            _fsync_dir(manifest.parent)
            # From here on the new set is decided: a kill is completed by the next run's recover_outputs.
            pause_point("manifest-written")
            for i, (tmp, target) in enumerate(zip(temps, targets)):
                os.replace(tmp, target)
                if i == 0:
                    pause_point("first-renamed")
            for folder in {t.parent for t in targets}:
                _fsync_dir(folder)
            manifest.unlink()
            _fsync_dir(manifest.parent)


def atomic_write(path: str | Path, write: Writer) -> None:
    """Write one file through a temporary file in the same folder: never a half-written file."""
    commit_outputs([(path, write)])


def commit_report(
    out: Path, files: Sequence[tuple[str, Callable[[Any], Any]]], figures: dict[str, bytes]
) -> None:
    """Write the named files and the PNG `figures` into the folder `out`, all or nothing."""

    def png(content: bytes) -> Callable[[Any], None]:
        def write(f: BinaryIO) -> None:
            f.write(content)

        write.binary = True  # type: ignore[attr-defined]  # the writer's flag: it writes bytes
        return write

    out.mkdir(parents=True, exist_ok=True)
    commit_outputs(
        [
            *[(out / name, write) for name, write in files],
            *[(out / name, png(content)) for name, content in figures.items()],
        ]
    )
