"""The Space: `q2-metric space` assembles it; its requirements install in a fresh venv; `app.py`
serves on 127.0.0.1 with tiny models; headless Chromium types a response and knowledge, clicks
Score and reads the score, the explanation table and the signature from the page."""

import configparser
import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from browser import Browser, find_chromium

ROOT = Path(__file__).resolve().parents[1]
RESPONSE = "bob ross hosted the joy of painting on pbs in 1983"
KNOWLEDGE = "Bob Ross hosted The Joy of Painting, which aired on PBS from 1983 to 1994."


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "q2_metric.frontends.cli", *args], capture_output=True,
                          text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def space_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("space")
    run = cli("space", str(out))
    assert run.returncode == 0, run.stderr
    return out


def test_space_folder_is_complete(space_dir):
    files = {p.name for p in space_dir.iterdir()}
    [wheel] = [f for f in files if f.endswith(".whl")]
    assert {"README.md", "app.py", "q2.py", "requirements.txt"} <= files
    requirements = (space_dir / "requirements.txt").read_text().split()
    assert requirements[0] == f"./{wheel}" and any(r.startswith("gradio") for r in requirements)
    assert "q2-metric" not in requirements  # no package index has it
    assert (space_dir / "q2.py").read_text() == (ROOT / "q2_metric" / "q2_metric.py").read_text()
    card = (space_dir / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert f"pip install ./{wheel}" in card  # the card installs the wheel it ships
    gradio = next(r for r in requirements if r.startswith("gradio"))
    assert header["sdk_version"] in SpecifierSet(gradio[len("gradio"):])
    extras = configparser.ConfigParser()
    extras.read(ROOT / "setup.cfg")
    assert extras["options.extras_require"]["space"].split() == [gradio]  # one gradio range
    # the wheel's metadata: the paper authors' repository is the upstream reference, not our url
    with zipfile.ZipFile(space_dir / wheel) as whl:
        meta = whl.read(next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "Home-page: https://github.com/orhonovich" not in meta
    assert "Project-URL: Upstream (the paper authors' code and data), https://github.com/orhonovich/q-squared" in meta


def test_space_needs_a_checkout_one_sentence(tmp_path, monkeypatch):
    from q2_metric.frontends import space

    monkeypatch.setattr(space, "ROOT", tmp_path)
    with pytest.raises(space.SpaceBuildError, match=r"needs its source checkout, but .* has no setup.cfg\.$"):
        space.build_space(tmp_path / "out")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _space_venv(tmp_path: Path, space_dir: Path) -> Path:
    """A fresh venv for the Space's requirements. The heavy dependencies (torch, gradio, ...) come
    from this project's venv through a .pth file; q2-metric itself installs from the Space's wheel."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--disable-pip-version-check",
                          "-r", "requirements.txt"], cwd=space_dir, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    where = subprocess.run([str(python), "-c", "import q2_metric; print(q2_metric.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60).stdout
    assert where.startswith(str(venv)), where  # the wheel's copy, not this checkout
    return python


@pytest.mark.skipif(find_chromium() is None, reason="needs Debian's chromium (make setup installs it)")
def test_space_in_a_browser(space_dir, tiny_models, tmp_path):
    python = _space_venv(tmp_path, space_dir)
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "Q2_QG_MODEL": tiny_models["qg"], "Q2_QA_MODEL": tiny_models["qa"], "Q2_NLI_MODEL": tiny_models["nli"],
           "Q2_SPACE_OPTIONS": json.dumps({"device": "cpu", "decoding": "greedy", "max_question_length": 8})}
    log = open(tmp_path / "app.log", "w")
    app = subprocess.Popen([str(python), "app.py"], cwd=space_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert app.poll() is None, (tmp_path / "app.log").read_text()
            assert time.monotonic() < deadline, "the app did not serve within 90 s"
            time.sleep(0.5)

        profile = tmp_path / "chromium"
        profile.mkdir()
        with Browser(profile) as page:
            page.open(url)
            page.wait_for("document.querySelector('#q2-submit') !== null", 60, "the form")
            assert page.js("document.querySelector('#q2-signature textarea').value") == ""
            page.type_into("#q2-response textarea", RESPONSE)
            page.type_into("#q2-knowledge textarea", KNOWLEDGE)
            page.click("#q2-submit")
            page.wait_for("document.querySelector('#q2-signature textarea').value", 90, "the result")
            score = float(page.js("document.querySelector('#q2-score input').value"))
            table = page.js("document.querySelector('#q2-table').innerText")
            signature = page.js("document.querySelector('#q2-signature textarea').value")
            shot = page.screenshot(tmp_path / "space.png")
        assert 0.0 <= score <= 1.0
        for column in ("candidate", "question", "status", "span score"):
            assert column in table
        # the response's spans were asked about: the rows are this input's, not a placeholder
        assert "bob ross" in table and "1983" in table
        assert signature.startswith("q2:") and f"qg:{tiny_models['qg']}@local" in signature
        assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("Q2_SCREENSHOT"):  # refresh the README's picture
            Path(os.environ["Q2_SCREENSHOT"]).write_bytes(shot.read_bytes())
    finally:
        app.terminate()
        try:
            app.wait(timeout=15)
        except subprocess.TimeoutExpired:
            app.kill()
        log.close()


def test_space_config_from_environment(monkeypatch):
    from q2_metric.frontends.options import Q2OptionError
    from q2_metric.frontends.space import space_config

    monkeypatch.setenv("Q2_QG_MODEL", "/models/qg")
    monkeypatch.setenv("Q2_SPACE_OPTIONS", '{"variant": "dnli", "decoding": "greedy", "batch_size": 4}')
    config = space_config()
    assert config.qg_model == "/models/qg" and config.decoding == "greedy" and not config.personal_filter
    assert config.qa_batch_size == 4
    monkeypatch.setenv("Q2_SPACE_OPTIONS", '{"decoding": "sample"}')
    with pytest.raises(Q2OptionError, match="decoding='sample'"):
        space_config()


def test_explain_rows():
    """One row per generated question; the fallback and an unscored input get a row saying so."""
    from q2_metric.frontends.space import TABLE_COLUMNS, explain
    from q2_metric.testing import scripted_scorer

    scorer = scripted_scorer()
    score, rows, signature = explain("Bob Ross hosted the show.", "Bob Ross hosted the show.", scorer)
    assert score == 1.0 and signature.startswith("q2:") and all(len(r) == len(TABLE_COLUMNS) for r in rows)
    assert rows[0][:3] == ["Bob Ross", "what about Bob Ross?", "valid"] and rows[0][-1] == 1.0
    score, rows, _ = explain("it was nice.", "Bob Ross hosted the show.", scorer)
    assert rows[-1][2] == "fallback" and score == rows[-1][-1]
    score, rows, _ = explain("   ", "Bob Ross hosted the show.", scorer)
    assert score is None and rows == [["", "", "not scored: empty response", "", "", None, "", None]]
