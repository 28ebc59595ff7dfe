"""`q2 data fetch NAME`: download a published labelled set from its pinned commit and check every
file's SHA-256 before any file is put in place.

Each file is `BASE/COMMIT/PATH` (BASE: GitHub's raw server by default; `--base-url` points at a
mirror, e.g. `file:///data/mirror`, laid out the same way). All files are downloaded to temporary
files beside their targets and checked; only when every one matches are they renamed into place,
so a failed or corrupted download leaves the folder as it was. A file already there with the
right SHA-256 is kept; one with another SHA-256, or a FIFO, device or folder in a file's place, is
refused (it is not ours to replace, and is never opened). The download stops past a size cap
(`--max-mb`); a folder that cannot be written is reported as such before anything is downloaded;
part files left by a run killed with SIGKILL are removed by the next run (each live run holds a
lock on its own).
"""

from __future__ import annotations

import errno
import glob
import hashlib
import os
import stat
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # not POSIX: stale part files are told by their process id
    fcntl = None  # type: ignore[assignment]  # no fcntl (Windows): no lock

from q2_metric.errors import Q2InputError

GITHUB_RAW = "https://raw.githubusercontent.com"


class FetchError(Q2InputError):
    """A download failed or a file is not the published one; the message is one sentence."""


@dataclass(frozen=True)
class PinnedFile:
    path: str  # in the repository
    target: str  # in the output folder
    sha256: str


@dataclass(frozen=True)
class Source:
    repo: str
    commit: str
    files: tuple[PinnedFile, ...]
    license: str

    def url(self, file: PinnedFile, base: str = GITHUB_RAW) -> str:
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{file.path}"


BEGIN_V1 = "6f881995bca5405918f3138b04f29fdd2a1b73ae"  # google/BEGIN-dataset, first full release
BEGIN_V2 = "6e65f0d5a1ed1b9574643a7640ff1678d4e979b5"  # second release (wow/, topicalchat/, cmu-dog/)
Q2_DATA = "dd048c628a3d44180226515b2fc10e8deb031039"  # orhonovich/q-squared, third_party/data

SOURCES: dict[str, tuple[Source, ...]] = {
    "begin": (
        Source(
            "google/BEGIN-dataset",
            BEGIN_V1,
            (
                PinnedFile(
                    "dev_05_24_21.tsv",
                    "v1/dev_05_24_21.tsv",
                    "d4eb032eb23793238e1de5f5d534c1f9e675657e8f4f513a71a4a375f5cb7767",
                ),
                PinnedFile(
                    "test_05_24_21.tsv",
                    "v1/test_05_24_21.tsv",
                    "e21118775e9c66017ae5a6cb07682fb9680e940b1ffa795fdacf912f22ed73bc",
                ),
            ),
            "CC BY 4.0",
        ),
        Source(
            "google/BEGIN-dataset",
            BEGIN_V2,
            (
                PinnedFile(
                    "wow/begin_dev_wow.tsv",
                    "wow/begin_dev_wow.tsv",
                    "2ebfc95a1ff267e12dcce3250da4d158e1811c62e9e1a0d56f110efc9ace0178",
                ),
                PinnedFile(
                    "wow/begin_test_wow.tsv",
                    "wow/begin_test_wow.tsv",
                    "d5c106a42042c3abd481563f1157e07c95c107dbcdf67f23564d874e8a4d6e7e",
                ),
                PinnedFile(
                    "topicalchat/begin_dev_tc.tsv",
                    "topicalchat/begin_dev_tc.tsv",
                    "d799a8cb3635de41b7f284dcfc872544ddeadcbae0c2ffd684270cce671f7711",
                ),
                PinnedFile(
                    "cmu-dog/begin_dev_cmu.tsv",
                    "cmu-dog/begin_dev_cmu.tsv",
                    "9482294df23cf08a976773ca73203b84f7178534ecab1a206eaade365e97071c",
                ),
            ),
            "WoW part CC BY 4.0, TopicalChat part CDLA-Sharing 1.0, CMU-DoG part per its NOTICE",
        ),
    ),
    "q2-wow": (
        Source(
            "orhonovich/q-squared",
            Q2_DATA,
            tuple(
                PinnedFile(f"third_party/data/{name}", name, digest)
                for name, digest in (
                    (
                        "dodeca_inconsistent.csv",
                        "e8c97dcf7db823f69455042b1e27342f0d6db308ced1d491ad11bb5fc4d980c3",
                    ),
                    (
                        "dodeca_consistent.csv",
                        "f3960661a527f8d481d8bd324bb4b4ed84797eb90e3f91d8d2c0038e5861c4a8",
                    ),
                    (
                        "memnet_inconsistent.csv",
                        "6d80a4a2d513799a580accf463ad89b2968ade3e0b35dc55b1d174511a5a0277",
                    ),
                    (
                        "memnet_consistent.csv",
                        "2e9b32dbc35d9708eade57205b4a39f0ed3ded3015229e45c1937239b41e1bc2",
                    ),
                    (
                        "cross_annotation.csv",
                        "b9c92dcf44b93fc8c19fa4a289c6a2780d703b090cf1d341175728778c330446",
                    ),
                )
            ),
            "MIT (the annotations); Wizard of Wikipedia's terms for its text",
        ),
    ),
}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# The published sets are a few MB each; a server that sends far more is not sending them.
DEFAULT_MAX_MB = 256
PART = ".part-"


def _kind(mode: int) -> str:
    return (
        "a folder"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )


def _write_problem(folder: Path, err: OSError) -> FetchError:
    """One sentence for a local write that failed: the folder, not the network, is to blame."""
    if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return FetchError(
            f"{folder} cannot be written ({err.strerror}: a read-only folder or file system); "
            "choose another --out (nothing was downloaded)."
        )
    if err.errno in (errno.ENOTDIR, errno.EEXIST):
        return FetchError(
            f"{folder} is not a folder (a file is in its place or above it); choose another "
            "--out (nothing was written)."
        )
    return FetchError(f"{folder}: {err.strerror} while writing there; nothing was written.")


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock on `fd` without waiting; True if taken (or locks are not supported)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks
        return True
    return True


def _remove_stale_parts(target: Path) -> None:
    """Remove `.NAME.part-*` files beside `target` that no running fetch holds: a run killed with
    SIGKILL leaves its part files, and each running fetch holds a lock on its own until it renames
    them (where there are no locks, a part file of a process that is gone is stale)."""
    if not target.parent.is_dir():
        return
    for stale in target.parent.glob(f".{glob.escape(target.name)}{PART}*"):
        try:
            st = os.lstat(stale)
            if not stat.S_ISREG(st.st_mode):
                continue  # not ours (we only write regular files); opening a FIFO could block
            fd = os.open(stale, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if fcntl is None:
                pid = stale.name.rsplit(PART, 1)[1]
                free = pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid))
            else:
                free = _try_lock(fd)
            if free:
                stale.unlink(missing_ok=True)
        finally:
            os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _open_part(target: Path) -> tuple[Path, BinaryIO]:
    """Create the locked part file beside `target` (never an existing file: O_EXCL)."""
    temp = target.with_name(f".{target.name}{PART}{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    _try_lock(fd)
    return temp, os.fdopen(fd, "wb")


def _local_source(url: str) -> None:
    """A file:// source must be a regular file: reading a FIFO or a device would block or never end."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return
    path = urllib.request.url2pathname(parts.path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # the opener reports it missing
    if not stat.S_ISREG(mode):
        raise FetchError(
            f"{url} is {_kind(mode)}, not a regular file; point --base-url at a copy of the files."
        )


def _download(
    url: str,
    out: BinaryIO,
    folder: Path,
    opener: Callable = urllib.request.urlopen,
    limit: int | None = None,
    cap_mb: float = DEFAULT_MAX_MB,
) -> int:
    """Copy `url` into `out`; the number of bytes. Stops past `limit` bytes."""

    def too_big() -> FetchError:
        return FetchError(
            f"{url} goes past the {cap_mb:g} MB cap on what one fetch downloads (--max-mb); "
            "stopped, nothing was written."
        )

    def network(err: BaseException) -> FetchError:
        return FetchError(
            f"{url} could not be downloaded ({getattr(err, 'reason', None) or err}); check the "
            "network or --base-url."
        )

    _local_source(url)
    try:
        response = opener(url, timeout=60)
    except (OSError, ValueError) as err:
        raise network(err) from None
    total = 0
    with response:
        length = getattr(response, "headers", None) and response.headers.get("Content-Length")
        if limit is not None and length and str(length).isdigit() and int(length) > limit:
            raise too_big()
        while True:
            try:
                block = response.read(1 << 20)
            except (OSError, ValueError) as err:
                raise network(err) from None
            if not block:
                return total
            total += len(block)
            if limit is not None and total > limit:
                raise too_big()
            try:
                out.write(block)
            except OSError as err:
                raise _write_problem(folder, err) from None


def fetch(
    name: str,
    out_dir: str | Path,
    base_url: str = GITHUB_RAW,
    *,
    say: Callable[[str], None] = lambda msg: None,
    opener: Callable = urllib.request.urlopen,
    max_mb: float = DEFAULT_MAX_MB,
) -> list[Path]:
    """Download every pinned file of `name` into `out_dir` (all or none); the paths, in order.
    `max_mb`: a cap on the bytes downloaded in all (past it the fetch stops, nothing written)."""
    if name not in SOURCES:
        raise FetchError(f"unknown dataset '{name}'; choose one of {', '.join(SOURCES)}.")
    if not max_mb > 0:
        raise FetchError(f"--max-mb must be more than 0, got {max_mb:g}.")
    out = Path(out_dir)
    plan = [(src, f, out / f.target) for src in SOURCES[name] for f in src.files]
    for _, f, target in plan:  # refuse before downloading anything
        try:
            st = os.stat(target)  # follows a link, like the check below
        except FileNotFoundError:
            continue
        except OSError as err:
            if err.errno == errno.ENOTDIR:
                raise _write_problem(out, err) from None
            raise FetchError(
                f"{target} cannot be examined ({err.strerror}); choose another folder."
            ) from None
        if not stat.S_ISREG(st.st_mode):  # never opened: a FIFO would block the read forever
            raise FetchError(
                f"{target} exists and is {_kind(st.st_mode)}, not the published {f.path}; move it "
                "away or choose another folder (nothing was downloaded)."
            )
        if sha256_of(target) != f.sha256:
            raise FetchError(
                f"{target} exists and is not the published {f.path}; move it away or choose another "
                "folder (nothing was downloaded)."
            )
    todo = [(src, f, target) for src, f, target in plan if not target.exists()]
    temps: list[tuple[Path, BinaryIO, Path]] = []
    try:
        for (
            _,
            _,
            target,
        ) in todo:  # every part file first: a folder we cannot write is found before any download
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                _remove_stale_parts(target)
                temp, handle = _open_part(target)
            except OSError as err:
                raise _write_problem(target.parent, err) from None
            temps.append((temp, handle, target))
        left = int(max_mb * 2**20)
        for (src, f, target), (temp, handle, _) in zip(todo, temps):
            url = src.url(f, base_url)
            say(f"downloading {url}")
            left -= _download(url, handle, target.parent, opener, limit=left, cap_mb=max_mb)
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as err:
                raise _write_problem(target.parent, err) from None
            got = sha256_of(temp)
            if got != f.sha256:
                raise FetchError(
                    f"{url} has SHA-256 {got}, not the published {f.sha256}; nothing was written."
                )
        for temp, _, target in temps:  # renamed while still locked: no other fetch takes them for stale
            os.replace(temp, target)
        for _, _, target in plan:
            if target not in {t for _, _, t in todo}:
                say(f"{target}: already there, SHA-256 checked")
        done, temps = temps, []
        for _, handle, _ in done:
            handle.close()
    finally:
        for temp, handle, _ in temps:
            temp.unlink(missing_ok=True)
            handle.close()
    for src in SOURCES[name]:
        say(
            f"{src.repo}@{src.commit[:12]}: license {src.license}; cite the dataset's paper when you publish numbers."
        )
    return [target for _, _, target in plan]
