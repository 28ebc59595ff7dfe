"""The documentation cannot drift: every ```bash and ```python block of README.md and docs/*.md runs here
as a user copies them into one terminal, except a block directly after a `<!-- norun: REASON -->` line,
which is listed with its reason. A page runs in an empty working folder that holds only the checkout's
`.venv` and `q2_metric/` (as a fresh clone has them: its bundled sample named by its package path),
so a page's commands read only files the page itself makes (before, the test made `responses.csv`,
`data.jsonl` and a dataset folder that no checkout has, and six commands named them), in the
environment a user has:
no `Q2_*`, `HF_*` or `TRANSFORMERS_*` variable, no virtual environment on PATH. What a page needs
(`. .venv/bin/activate`, `export Q2_TINY=1 HF_HUB_OFFLINE=1`) it says itself, in a block the reader
runs first; what a block exports or activates holds for the page's later blocks, and a ```python
block runs with the `python` the page's shell finds. The test sets only where caches go (a fresh
`XDG_CACHE_HOME` and `HF_HOME` for the session, where the tiny models are built once) and
`OMP_NUM_THREADS=1` (shared cores). Also: the offline error quoted in docs/models.md is what
`q2 demo` prints, the output columns listed are those `q2 score` writes, the README is short, and
`mkdocs build --strict` passes, its links pointing to `.html` files (the site opened from its files)."""

from __future__ import annotations

import csv
import html
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.data import ROOT

BIN = Path(sys.executable).parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
NORUN = re.compile(r"^<!--\s*norun:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    norun: str | None  # the reason, when not run


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, with the norun reason of the line right before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        before = NORUN.match(lines[start - 1]) if start else None
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        out.append(
            Block(
                name,
                start + 1,
                lang,
                "\n".join(lines[start + 1 : end]) + "\n",
                before.group(1) if before else None,
            )
        )
        i = end + 1
    return out


def test_block_parser_reads_norun_and_languages(tmp_path):
    """The parser itself, on a hand-written page."""
    page = tmp_path / "p.md"
    page.write_text(
        "x\n<!-- norun: needs a GPU -->\n```bash\nnvidia-smi\n```\n\n```python\nprint(1)\n```\n"
        "<!-- norun: -->\n```text\nout\n```\n"
    )
    got = [(b.lang, b.code, b.norun, b.line) for b in blocks(page)]
    assert got == [
        ("bash", "nvidia-smi\n", "needs a GPU", 3),
        ("python", "print(1)\n", None, 7),
        ("text", "out\n", "", 11),
    ]


ALL = [b for page in PAGES for b in blocks(page)]
RUNNABLE = [b for b in ALL if b.lang in ("bash", "python")]


def test_every_norun_block_says_why():
    """The blocks not run, each with its reason (printed: `pytest -s tests/integration/test_docs.py`)."""
    skipped = [b for b in RUNNABLE if b.norun is not None]
    for b in skipped:
        print(f"norun {b.page}:{b.line} ({b.lang}): {b.norun}")
    assert all(b.norun.strip() for b in skipped), [(b.page, b.line) for b in skipped if not b.norun.strip()]
    # most of what a newcomer copies does run
    assert len(RUNNABLE) - len(skipped) >= 8, len(RUNNABLE) - len(skipped)


def silent_expressions(code: str) -> list[str]:
    """The statements of a Python block that show something in an interactive session but print
    nothing when the block runs as a file: a bare expression other than a call (`result.q2,
    result.coverage`), at any depth."""
    import ast

    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Expr) and not isinstance(node.value, (ast.Call, ast.Await, ast.Constant))
    ]


def test_python_blocks_print_what_they_show():
    """python.md's blocks printed nothing when run as a file (`result.q2, result.coverage  # system
    figures`): every figure a block shows it prints."""
    assert silent_expressions("x = 1\nx\nprint(x)\nif x:\n    x.real\n") == ["x", "x.real"]
    silent = {
        f"{b.page}:{b.line}": found
        for b in ALL
        if b.lang == "python" and (found := silent_expressions(b.code))
    }
    assert silent == {}


def test_one_decision_rule_and_no_stale_page():
    """serve.md's contract said "score >= threshold" where the server (`display.decide`) and the
    text above it say "above"; inspect.md said LightEval is not installed, where lighteval.md
    installs it with its extra."""
    serve = " ".join((ROOT / "docs" / "serve.md").read_text(encoding="utf-8").split())
    assert "iff status is scored and score > threshold" in serve
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert ">= threshold" not in text and "LightEval is not installed" not in text, page.name


def test_guardrails_page_gives_on_fail_and_says_what_the_import_downloads():
    """guardrails.md: the service validator line had no `on_fail` (the default raised a long
    traceback on a blocked answer); the note that importing Guardrails AI downloads NLTK data was
    only in an HTML comment; nothing said that `validated_output` still holds a blocked answer."""
    page = (ROOT / "docs" / "guardrails.md").read_text(encoding="utf-8")
    validators = [b.code for b in blocks(ROOT / "docs" / "guardrails.md") if "Q2Consistency(" in b.code]
    assert validators and all("on_fail=" in code for code in validators)
    text = re.sub(r"<!--.*?-->", "", page, flags=re.S)  # what a reader sees
    flat = " ".join(text.split())
    assert "downloads NLTK's `punkt`" in flat
    assert "`outcome.validated_output` still holds the answer it blocked" in flat


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory) -> dict[str, str]:
    """The documented tiny-model cache, built once for the whole session."""
    from q2_metric.models.tiny import ensure_tiny_models

    return ensure_tiny_models(tmp_path_factory.mktemp("docs-tiny") / "tiny-models")


@pytest.fixture(scope="session")
def user_caches(tmp_path_factory) -> dict[str, str]:
    """A user's cache folders for the session: the tiny models built once where `Q2_TINY=1` looks
    for them (`$XDG_CACHE_HOME/q2-metric/tiny-models`), an empty Hugging Face cache."""
    from q2_metric.models.tiny import ensure_tiny_models

    home = tmp_path_factory.mktemp("docs-user")
    ensure_tiny_models(home / "xdg" / "q2-metric" / "tiny-models")
    return {"XDG_CACHE_HOME": str(home / "xdg"), "HF_HOME": str(home / "hf")}


CHECKOUT = {".venv", "q2_metric"}  # what a page's folder holds of a fresh clone (after `make setup`)


def _workdir(tmp_path: Path) -> Path:
    """A page's working folder: empty but for the checkout's `.venv` and package (`CHECKOUT`)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(BIN.parent, target_is_directory=True)  # a checkout's .venv
    # the checkout's package, with its bundled sample (README's examples run from the checkout's root)
    (work / "q2_metric").symlink_to(ROOT / "q2_metric", target_is_directory=True)
    return work


def user_env(caches: dict[str, str]) -> dict[str, str]:
    """The environment of a user's new shell: nothing of this package's, Hugging Face's or the test
    run's (HF_HUB_OFFLINE, Q2_TINY...), no virtual environment on PATH; only the cache folders."""
    venvs = {str(BIN), os.environ.get("VIRTUAL_ENV", "") and str(Path(os.environ["VIRTUAL_ENV"]) / "bin")}
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if d not in venvs)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("Q2_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "PYTEST_"))
        and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONWARNINGS")
    }
    return {**env, "PATH": path, **caches, "OMP_NUM_THREADS": "1"}


def _run(block: Block, work: Path, state: dict) -> subprocess.CompletedProcess:
    """One block in the page's shell state (`state`: env and cwd, updated by a bash block's exports,
    activations and `cd`)."""
    env, cwd = state["env"], state["cwd"]
    if block.lang == "python":
        python = shutil.which("python", path=env["PATH"])
        if python is None:
            return subprocess.CompletedProcess(
                [], 127, "", "python: command not found (activate .venv first)"
            )
        return subprocess.run(
            [python, "-c", block.code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
    script, dump = work.parent / "block.sh", work.parent / "block.env"
    script.write_text(block.code, encoding="utf-8")
    res = subprocess.run(
        [
            "bash",
            "-c",
            'set -e -o pipefail; . "$1"; env -0 > "$2"; pwd >> "$2"',
            "page",
            str(script),
            str(dump),
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if res.returncode == 0:
        *pairs, last = dump.read_text(encoding="utf-8").split("\0")
        state["env"] = dict(p.split("=", 1) for p in pairs if "=" in p)
        state["cwd"] = last.strip()
    return res


PAGES_WITH_CODE = sorted({b.page for b in RUNNABLE if b.norun is None})


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_page_snippets_run(page, user_caches, tmp_path):
    """Each page's runnable blocks, in order, in one shell and one working folder (a later block may
    use an earlier one's files and exports, as a reader would); the folder holds nothing else of
    the checkout's but `CHECKOUT`, so a command that names a file the page does not make fails."""
    work = _workdir(tmp_path)
    assert {p.name for p in work.iterdir()} == CHECKOUT
    state = {"env": user_env(user_caches), "cwd": str(work)}
    for block in [b for b in RUNNABLE if b.page == page and b.norun is None]:
        res = _run(block, work, state)
        where = f"{block.page}:{block.line}"
        assert res.returncode == 0, (
            f"{where} failed:\n{block.code}\n--- stdout\n{res.stdout[-3000:]}\n"
            f"--- stderr\n{res.stderr[-3000:]}"
        )
        assert "Traceback" not in res.stderr, f"{where}:\n{res.stderr[-3000:]}"
        assert not re.search(r"\bnan\b", res.stdout), f"{where} printed nan:\n{res.stdout[-3000:]}"


def test_a_page_without_its_setup_block_fails(user_caches, tmp_path):
    """The environment is a user's: `q2` is not found until the page activates .venv, and an export
    holds for the page's later blocks; a file the page does not make is not there."""
    work = _workdir(tmp_path)
    state = {"env": user_env(user_caches), "cwd": str(work)}
    assert "HF_HUB_OFFLINE" not in state["env"] and "Q2_TINY" not in state["env"]
    assert _run(Block("p.md", 1, "bash", "q2 --version\n", None), work, state).returncode == 127
    setup = ". .venv/bin/activate\nexport Q2_TINY=1\n"
    assert _run(Block("p.md", 2, "bash", setup, None), work, state).returncode == 0
    check = 'q2 --version\ntest "$Q2_TINY" = 1\n'
    assert _run(Block("p.md", 3, "bash", check, None), work, state).returncode == 0
    res = _run(
        Block("p.md", 4, "python", "import os, q2_metric; print(os.environ['Q2_TINY'])\n", None), work, state
    )
    assert res.returncode == 0 and res.stdout.strip() == "1", res.stderr
    missing = _run(Block("p.md", 5, "bash", "q2 score responses.csv -o scores.csv\n", None), work, state)
    assert missing.returncode != 0 and "responses.csv" in missing.stderr


def _env(tmp_path: Path, tiny: dict[str, str]) -> dict[str, str]:
    """The tests' own runs of `q2` (not a page's): the tiny models, offline."""
    folder = str(Path(tiny["qg"]).parent)
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "Q2_TINY": "1",
        "Q2_TINY_MODELS": folder,
        "HF_HUB_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        "OMP_NUM_THREADS": "1",
    }


def _marked_block(path: Path, marker: str) -> str:
    text = path.read_text(encoding="utf-8")
    after = text[text.index(f"<!-- {marker}") :]
    return after.split("```", 2)[1].split("\n", 1)[1]


def test_offline_error_quoted_is_what_q2_demo_prints(tmp_path):
    """docs/models.md quotes the offline error word for word (an empty Hugging Face cache, offline)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("Q2_")}
    env.update(
        HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    )
    res = subprocess.run(["q2", "demo"], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == _marked_block(ROOT / "docs" / "models.md", "offline-error").strip()
    assert "`make try`" in res.stderr and "hf download" in res.stderr


def _column_table(text: str) -> list[str]:
    return re.findall(r"^\| `(\w+)` \|", text, flags=re.M)


def test_output_columns_documented_are_written(tiny_cache, rows, tmp_path):
    work = _workdir(tmp_path)
    with open(work / "responses.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["response", "knowledge"])
        writer.writeheader()
        writer.writerows([{"response": r["response"], "knowledge": r["knowledge"]} for r in rows[:2]])
    res = subprocess.run(
        ["q2", "score", "responses.csv", "-o", "out.csv", "--quiet", "--no-cache"],
        cwd=work,
        env=_env(tmp_path, tiny_cache),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    with open(work / "out.csv", newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    added = header[2:]  # after the input's response and knowledge
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert _column_table(cli[cli.index("<!-- output-columns") :])[: len(added)] == added
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _column_table(readme[readme.index("## What comes out") :]) == added


def test_readme_q2_score_examples_name_files_a_fresh_checkout_has():
    """The first `q2 score` examples named `responses.csv`, which no checkout has (issue 49): every
    input a README block gives `q2 score` is a file of the checkout (the bundled sample)."""
    named = [
        line.split()[2]
        for block in RUNNABLE
        if block.page.endswith("README.md") and block.norun is None  # (the Ray line: the user's corpus)
        for line in block.code.splitlines()
        if line.startswith("q2 score ") and not line.split()[2].startswith("-")
    ]
    assert named and all((ROOT / name).is_file() for name in named), named


def test_readme_is_a_short_front_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    for page in re.findall(r"\]\(docs/([\w-]+\.md)", text):
        assert (ROOT / "docs" / page).is_file(), page


def test_mkdocs_build_strict(tmp_path):
    """`make docs` builds the site with --strict: a broken link or any warning fails."""
    mkdocs = BIN / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (make docs installs the docs extra)")
    res = subprocess.run(
        [str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "WARNING" not in res.stderr, res.stderr[-3000:]
    site = tmp_path / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert (
        "One example per front-end" in index and 'href="models.html"' in index
    )  # the README, links rewritten
    assert "fonts.googleapis" not in index
    # opened from its files (no server to turn `page/` into `page/index.html`): every link between
    # pages names an .html file that exists
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # a server's page for any missing path: its links are absolute
            continue
        text = page.read_text(encoding="utf-8")
        for href in re.findall(r'href="([^"#?]*)(?:[#?][^"]*)?"', text):
            if not href or re.match(r"[a-z]+:", href) or not href.endswith(("/", ".html")):
                continue  # an anchor, another site, an asset
            assert href.endswith(".html"), f"{page.relative_to(site)}: {href}"
            assert (page.parent / href).resolve().is_file(), f"{page.relative_to(site)}: {href}"
    # the API page's docstring examples are code, not a paragraph of prose
    api = (site / "api.html").read_text(encoding="utf-8")

    def texts(tag: str) -> list[str]:
        return [
            html.unescape(re.sub(r"<[^>]+>", "", m))
            for m in re.findall(rf"<{tag}\b[^>]*>(.*?)</{tag}>", api, re.S)
        ]

    assert any(">>> f1_score(" in t for t in texts("pre")), "f1_score's example is not a code block"
    # Markdown reads a bare `>>> x` as three nested quotes
    assert not re.search(r"<blockquote>\s*<blockquote>", api), "a docstring example rendered as quotes"
    prose = [t for t in texts("p") if ">>>" in t]
    assert not prose, f"docstring examples rendered as prose: {prose[:2]}"
    shutil.rmtree(tmp_path / "site")
