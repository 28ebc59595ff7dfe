"""`q2 data fetch NAME`: download a published labelled set from its pinned commit and check every
file's SHA-256 before any file is put in place.

Each file is `BASE/COMMIT/PATH` (BASE: GitHub's raw server by default; `--base-url` points at a
mirror, e.g. `file:///data/mirror`, laid out the same way). All files are downloaded to temporary
files beside their targets and checked; only when every one matches are they renamed into place,
so a failed or corrupted download leaves the folder as it was. A file already there with the
right SHA-256 is kept; one with another SHA-256 is refused (it is not ours to replace).
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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
        Source("google/BEGIN-dataset", BEGIN_V1, (
            PinnedFile("dev_05_24_21.tsv", "v1/dev_05_24_21.tsv",
                       "d4eb032eb23793238e1de5f5d534c1f9e675657e8f4f513a71a4a375f5cb7767"),
            PinnedFile("test_05_24_21.tsv", "v1/test_05_24_21.tsv",
                       "e21118775e9c66017ae5a6cb07682fb9680e940b1ffa795fdacf912f22ed73bc")),
               "CC BY 4.0"),
        Source("google/BEGIN-dataset", BEGIN_V2, (
            PinnedFile("wow/begin_dev_wow.tsv", "wow/begin_dev_wow.tsv",
                       "2ebfc95a1ff267e12dcce3250da4d158e1811c62e9e1a0d56f110efc9ace0178"),
            PinnedFile("wow/begin_test_wow.tsv", "wow/begin_test_wow.tsv",
                       "d5c106a42042c3abd481563f1157e07c95c107dbcdf67f23564d874e8a4d6e7e"),
            PinnedFile("topicalchat/begin_dev_tc.tsv", "topicalchat/begin_dev_tc.tsv",
                       "d799a8cb3635de41b7f284dcfc872544ddeadcbae0c2ffd684270cce671f7711"),
            PinnedFile("cmu-dog/begin_dev_cmu.tsv", "cmu-dog/begin_dev_cmu.tsv",
                       "9482294df23cf08a976773ca73203b84f7178534ecab1a206eaade365e97071c")),
               "WoW part CC BY 4.0, TopicalChat part CDLA-Sharing 1.0, CMU-DoG part per its NOTICE"),
    ),
    "q2-wow": (
        Source("orhonovich/q-squared", Q2_DATA, tuple(
            PinnedFile(f"third_party/data/{name}", name, digest) for name, digest in (
                ("dodeca_inconsistent.csv", "e8c97dcf7db823f69455042b1e27342f0d6db308ced1d491ad11bb5fc4d980c3"),
                ("dodeca_consistent.csv", "f3960661a527f8d481d8bd324bb4b4ed84797eb90e3f91d8d2c0038e5861c4a8"),
                ("memnet_inconsistent.csv", "6d80a4a2d513799a580accf463ad89b2968ade3e0b35dc55b1d174511a5a0277"),
                ("memnet_consistent.csv", "2e9b32dbc35d9708eade57205b4a39f0ed3ded3015229e45c1937239b41e1bc2"),
                ("cross_annotation.csv", "b9c92dcf44b93fc8c19fa4a289c6a2780d703b090cf1d341175728778c330446"))),
               "MIT (the annotations); Wizard of Wikipedia's terms for its text"),
    ),
}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, dest: Path, opener: Callable = urllib.request.urlopen) -> None:
    try:
        with opener(url, timeout=60) as response, open(dest, "wb") as out:
            for block in iter(lambda: response.read(1 << 20), b""):
                out.write(block)
    except (OSError, ValueError) as err:
        raise FetchError(f"{url} could not be downloaded ({getattr(err, 'reason', None) or err}); check the "
                         "network or --base-url.") from None


def fetch(name: str, out_dir: str | Path, base_url: str = GITHUB_RAW, *,
          say: Callable[[str], None] = lambda msg: None, opener: Callable = urllib.request.urlopen) -> list[Path]:
    """Download every pinned file of `name` into `out_dir` (all or none); the paths, in order."""
    if name not in SOURCES:
        raise FetchError(f"unknown dataset '{name}'; choose one of {', '.join(SOURCES)}.")
    out = Path(out_dir)
    plan = [(src, f, out / f.target) for src in SOURCES[name] for f in src.files]
    for _, f, target in plan:  # refuse before downloading anything
        if target.exists() and (not target.is_file() or sha256_of(target) != f.sha256):
            raise FetchError(f"{target} exists and is not the published {f.path}; move it away or choose another "
                             "folder (nothing was downloaded).")
    temps: list[tuple[Path, Path]] = []
    try:
        for src, f, target in plan:
            if target.exists():
                say(f"{target}: already there, SHA-256 checked")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f".{target.name}.part-{os.getpid()}")
            temps.append((temp, target))
            url = src.url(f, base_url)
            say(f"downloading {url}")
            _download(url, temp, opener)
            got = sha256_of(temp)
            if got != f.sha256:
                raise FetchError(f"{url} has SHA-256 {got}, not the published {f.sha256}; nothing was written.")
        for temp, target in temps:
            os.replace(temp, target)
        temps = []
    finally:
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
    for src in SOURCES[name]:
        say(f"{src.repo}@{src.commit[:12]}: license {src.license}; cite the dataset's paper when you publish numbers.")
    return [target for _, _, target in plan]


def add_data_parser(sub) -> None:
    """`q2 data fetch NAME [--out DIR] [--base-url URL]`."""
    data = sub.add_parser("data", help="download the published labelled sets (needs the network)")
    dsub = data.add_subparsers(dest="data_command", required=True)
    f = dsub.add_parser("fetch", help="download a set from its pinned commit and check its SHA-256")
    f.add_argument("name", choices=sorted(SOURCES), help="begin (both BEGIN releases) or q2-wow (the paper's set)")
    f.add_argument("--out", default=None, help="folder to write into (default: data/NAME)")
    f.add_argument("--base-url", default=GITHUB_RAW,
                   help="server or mirror laid out as BASE/OWNER/REPO/COMMIT/PATH (default GitHub's raw server; "
                        "file:///folder works)")
    f.set_defaults(func=cmd_data_fetch)


def cmd_data_fetch(args) -> int:
    import sys

    from q2_metric.io.paths import check_run

    out = args.out or Path("data") / args.name
    check_run({}, {"--out": out}, folders=["--out"])  # never into a model folder or a cache
    paths = fetch(args.name, out, args.base_url,
                  say=lambda msg: print(f"q2 data fetch: {msg}", file=sys.stderr))
    for p in paths:
        print(p)
    return 0
