"""Each extra installed alone, as its page says: a fresh venv, torch, then `pip install -e '.[X]'`,
`pip check`, the first example of the extra's documentation page run there (offline, tiny models),
and `hf download --help` (the command Q²'s "models not found" sentence suggests). Prints a table
(extra, install seconds, resolver result, first example ran) and, with `--write-docs`, puts its rows
into docs/extras.md.

    python benchmarks/check_extras.py                      # every extra, one after the other
    python benchmarks/check_extras.py --extras deepeval,inspect
    python benchmarks/check_extras.py --rotate 2           # CI: two extras, chosen by the day of the year

The exit status is 1 when any row is not green (an install, `pip check`, the example or `hf download
--help` failed), 0 otherwise. Needs `python3 -m venv` and pip's index (PyPI or a mirror).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "extras.md"
TORCH = "torch==2.13.0"  # the Makefile's; installed first, as the pages say
BEGIN_MARK, END_MARK = "<!-- extras-table: begin -->", "<!-- extras-table: end -->"
VERSIONS = ("transformers", "huggingface_hub", "click", "rich")


@dataclass(frozen=True)
class Example:
    """Where an extra's first example is: a page and (optionally) a word its block must contain;
    or, for an extra whose page has no runnable block, a command of its own."""

    page: str
    contains: str = ""
    command: str = ""
    norun_too: bool = False  # a block the docs tests leave out (`norun`) is this extra's example too


# setup.cfg's [options.extras_require], each with the example it is checked by
EXAMPLES: dict[str, Example] = {
    "meta": Example(
        "meta-eval.md",
        command="q2 meta-eval --annotated-dir {root}/data/q2_wow --baselines-only --bootstrap 10 --no-bertscore --out-dir meta",
    ),
    "space": Example("hub.md", command="q2-metric space --help"),
    "ray": Example(
        "ray.md",
        command="q2 score {root}/q2_metric/data/wow_sample.csv -o scored.csv --tiny --ray --workers 1",
    ),
    # the set `make run` and `make try` install (the core and the serve extra): `make try`'s command
    "serve": Example("serve.md", command="q2 demo --tiny --limit 4 && q2 serve --help"),
    "docs": Example("index.md", command="cd {root} && mkdocs build --strict --quiet -d {cwd}/site"),
    "coref": Example("coref.md"),
    "lm-eval": Example("lm-eval.md"),
    "inspect": Example("inspect.md"),
    "ragas": Example("ragas.md"),
    # its page's block is `norun` for the docs tests (importing Guardrails AI fetches NLTK data)
    "guardrails": Example("guardrails.md", contains="from guardrails import", norun_too=True),
    "nemo": Example("guardrails.md", contains="nemoguardrails"),
    "mlflow": Example("mlflow.md"),
    "deepeval": Example("deepeval.md"),
    "harness": Example("lm-eval.md"),
    "lighteval": Example("lighteval.md"),
    # OpenTelemetry's events (cli.md's section): the emitter and the SDK it emits through import
    "otel": Example(
        "cli.md",
        command="python -c 'import opentelemetry.sdk._logs, q2_metric.telemetry.events' && q2 score --help | head -3",
    ),
    "lint": Example("layout.md", command="cd {root} && ruff check . && ruff format --check ."),
    "test": Example(
        "layout.md",
        command="cd {root} && python -m pytest -q --collect-only -p no:cacheprovider tests/unit | tail -1",
    ),
}


@dataclass
class Row:
    extra: str
    torch_s: float = 0.0
    install_s: float = 0.0
    resolver: str = ""
    example: str = ""
    hf: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return self.resolver == "ok" and self.example == "ran" and self.hf == "ok"


def declared_extras() -> list[str]:
    """setup.cfg's extras, in its order."""
    names, inside = [], False
    for line in (ROOT / "setup.cfg").read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            inside = line.strip() == "[options.extras_require]"
        elif inside and re.match(r"^[A-Za-z][\w-]*\s*=", line):
            names.append(line.split("=")[0].strip())
    return names


BLOCK = re.compile(r"(<!--([^>]*)-->\s*\n)?```(bash|python)\n(.*?)```", re.S)


def first_example(example: Example) -> tuple[str, str, dict[str, str]]:
    """(language, code, environment) of the page's first runnable block (not `norun`) after its
    set-up block (`. .venv/bin/activate`, whose exports are kept), or the extra's own command."""
    env: dict[str, str] = {}
    text = (ROOT / "docs" / example.page).read_text(encoding="utf-8")
    for m in BLOCK.finditer(text):
        comment, lang, code = m.group(2) or "", m.group(3), m.group(4)
        if "norun" in comment and not (example.norun_too and example.contains in code):
            continue
        if lang == "bash" and code.lstrip().startswith(". .venv/bin/activate"):
            for k, v in re.findall(r"\b([A-Z][A-Z0-9_]+)=(\S+)", code):
                env[k] = v
            continue
        if example.command:
            break
        if example.contains and example.contains not in code:
            continue
        return lang, code, env
    if not example.command:
        raise SystemExit(f"docs/{example.page} has no runnable block for this extra")
    return "bash", example.command, env


def run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)


def last_line(text: str) -> str:
    lines = [
        x.strip() for x in text.strip().splitlines() if x.strip() and not x.startswith("WARNING: Location")
    ]
    return (lines[-1] if lines else "")[:160]


def check(extra: str, work: Path, timeout: float) -> Row:
    row = Row(extra)
    venv = work / f"venv-{extra}"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py, pip = str(venv / "bin" / "python"), [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    t = time.monotonic()
    res = run([*pip, TORCH], timeout)
    row.torch_s = time.monotonic() - t
    if res.returncode:
        row.resolver = f"torch failed: {last_line(res.stderr)}"
        return row
    t = time.monotonic()
    res = run([*pip, "-e", f"{ROOT}[{extra}]"], timeout)
    row.install_s = time.monotonic() - t
    errors = [x for x in (res.stdout + res.stderr).splitlines() if x.startswith("ERROR")]
    if res.returncode:
        row.resolver = f"install failed: {last_line(res.stderr)}"
        return row
    checked = run([py, "-m", "pip", "check"], 120)
    row.resolver = (
        "ok"
        if not errors and checked.returncode == 0
        else f"pip check: {last_line(checked.stdout) or errors[0][:160]}"
    )
    listed = json.loads(run([py, "-m", "pip", "list", "--format", "json"], 120).stdout or "[]")
    have = {p["name"].lower().replace("-", "_"): p["version"] for p in listed}
    row.versions = {name: have.get(name, "-") for name in VERSIONS}
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("Q2_", "VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        "HF_HOME": str(work / "hf-home"),
        "HF_HUB_OFFLINE": "1",
        "Q2_TINY": "1",
    }
    hf = run([str(venv / "bin" / "hf"), "download", "--help"], 120, env=env)
    row.hf = (
        "ok" if hf.returncode == 0 and "usage" in hf.stdout.lower() else f"failed: {last_line(hf.stderr)}"
    )
    lang, code, page_env = first_example(EXAMPLES[extra])
    env.update(page_env)
    cwd = Path(tempfile.mkdtemp(prefix=f"example-{extra}-", dir=work))
    code = code.replace("{root}", str(ROOT)).replace("{cwd}", str(cwd))
    (cwd / ("example.py" if lang == "python" else "example.sh")).write_text(code, encoding="utf-8")
    cmd = [py, "example.py"] if lang == "python" else ["bash", "-eo", "pipefail", "example.sh"]
    t = time.monotonic()
    try:
        ex = run(cmd, timeout, cwd=cwd, env=env)
        ok, detail = ex.returncode == 0, last_line(ex.stderr) or last_line(ex.stdout)
    except subprocess.TimeoutExpired:
        ok, detail = False, f"over {timeout:.0f} s"
    row.example = "ran" if ok else f"failed: {detail}"
    row.notes.append(f"example {time.monotonic() - t:.0f} s")
    shutil.rmtree(venv, ignore_errors=True)  # a venv is 1-3 GB
    return row


def table(rows: list[Row]) -> str:
    head = (
        "| extra | install s (torch s) | resolver, `pip check` | first example | `hf download --help` | "
        "transformers / huggingface_hub / click / rich |\n|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| `{r.extra}` | {r.install_s:.0f} ({r.torch_s:.0f}) | {r.resolver} | {r.example} "
        f"({', '.join(r.notes)}) | {r.hf} | {' / '.join(r.versions.get(v, '-') for v in VERSIONS)} |\n"
        for r in rows
    )
    return head + body


def write_docs(rows: list[Row], when: str) -> None:
    """Replace these extras' rows in docs/extras.md's table (the others stay as they were)."""
    text = DOCS.read_text(encoding="utf-8")
    start, end = text.index(BEGIN_MARK) + len(BEGIN_MARK), text.index(END_MARK)
    old = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([\w-]+)` \|.*$", text[start:end], re.M)}
    new = {r.extra: table([r]).splitlines()[-1] for r in rows}
    order = [e for e in declared_extras() if e in old or e in new]
    lines = table([]).rstrip("\n") + "\n" + "\n".join(new.get(e, old.get(e, "")) for e in order)
    DOCS.write_text(f"{text[:start]}\n{lines}\n\nLast run: {when}.\n{text[end:]}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extras", help="comma-separated extras (default: every extra of setup.cfg)")
    ap.add_argument("--rotate", type=int, metavar="N", help="N extras, chosen by the day of the year (CI)")
    ap.add_argument("--work", help="folder for the venvs (default: a temporary folder, removed at the end)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per install or example")
    ap.add_argument("--write-docs", action="store_true", help="put the rows into docs/extras.md")
    args = ap.parse_args(argv)
    extras = declared_extras()
    missing = sorted(set(extras) ^ set(EXAMPLES))
    if missing:
        print(f"check_extras: setup.cfg's extras and EXAMPLES differ: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.extras:
        chosen = [e.strip() for e in args.extras.split(",") if e.strip()]
        unknown = [e for e in chosen if e not in extras]
        if unknown:
            print(
                f"check_extras: no extra {', '.join(unknown)}; choose from {', '.join(extras)}",
                file=sys.stderr,
            )
            return 2
    elif args.rotate is not None:
        day = datetime.date.today().timetuple().tm_yday
        chosen = [extras[(day * args.rotate + i) % len(extras)] for i in range(args.rotate)]
    else:
        chosen = extras
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="q2-extras-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for extra in chosen:
            print(f"check_extras: {extra} ...", file=sys.stderr, flush=True)
            row = check(extra, work, args.timeout)
            rows.append(row)
            print(table([row]).splitlines()[-1], flush=True)
            if args.write_docs:  # row by row: a long run stopped half-way keeps what it measured
                write_docs([row], datetime.datetime.now().strftime("%Y-%m-%d"))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows), end="")
    return 0 if all(r.green for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
