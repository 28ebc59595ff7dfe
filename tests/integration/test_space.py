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
from support.browser import Browser, find_chromium
from support.data import ROOT

RESPONSE = "bob ross hosted the joy of painting on pbs in 1983"
KNOWLEDGE = "Bob Ross hosted The Joy of Painting, which aired on PBS from 1983 to 1994."


def cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "q2_metric.cli", *args], capture_output=True, text=True, timeout=300, **kw
    )


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
    assert header["sdk_version"] in SpecifierSet(gradio[len("gradio") :])
    extras = configparser.ConfigParser()
    extras.read(ROOT / "setup.cfg")
    assert extras["options.extras_require"]["space"].split() == [gradio]  # one gradio range
    # the wheel's metadata: the paper authors' repository is the upstream reference, not our url
    with zipfile.ZipFile(space_dir / wheel) as whl:
        meta = whl.read(next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "Home-page: https://github.com/orhonovich" not in meta
    assert (
        "Project-URL: Upstream (the paper authors' code and data), https://github.com/orhonovich/q-squared"
        in meta
    )


def test_space_needs_a_checkout_one_sentence(tmp_path, monkeypatch):
    from q2_metric.hub import space

    monkeypatch.setattr(space, "ROOT", tmp_path)
    with pytest.raises(space.SpaceBuildError, match=r"needs its source checkout, but .* has no setup.cfg\.$"):
        space.build_space(tmp_path / "out")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _venv_env(**extra: str) -> dict:
    """The environment for the Space's venv: no PYTHONPATH, which would put a checkout first."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **extra}


def _space_venv(tmp_path: Path, space_dir: Path) -> Path:
    """A fresh venv for the Space's requirements. The heavy dependencies (torch, gradio, ...) come
    from this project's venv through a .pth file; q2-metric itself installs from the Space's wheel."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--no-index",
            "--disable-pip-version-check",
            "-r",
            "requirements.txt",
        ],
        cwd=space_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    where = subprocess.run(
        [str(python), "-c", "import q2_metric; print(q2_metric.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        env=_venv_env(),
    ).stdout
    assert where.startswith(str(venv)), where  # the wheel's copy, not this checkout
    return python


@pytest.mark.skipif(find_chromium() is None, reason="needs Debian's chromium (make setup installs it)")
def test_space_in_a_browser(space_dir, tiny_models, tmp_path):
    python = _space_venv(tmp_path, space_dir)
    port = _free_port()
    env = _venv_env(
        HF_HUB_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_SERVER_PORT=str(port),
        Q2_QG_MODEL=tiny_models["qg"],
        Q2_QA_MODEL=tiny_models["qa"],
        Q2_NLI_MODEL=tiny_models["nli"],
        Q2_SPACE_OPTIONS=json.dumps({"device": "cpu", "decoding": "greedy", "max_question_length": 8}),
    )
    with open(tmp_path / "app.log", "w") as log:  # the child keeps its own copy of the handle
        app = subprocess.Popen(
            [str(python), "app.py"], cwd=space_dir, env=env, stdout=log, stderr=subprocess.STDOUT
        )
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
            # no score before anything is scored (gr.Number showed 0 here)
            assert page.js("document.querySelector('#q2-score textarea, #q2-score input').value") == ""
            page.type_into("#q2-response textarea", RESPONSE)
            page.type_into("#q2-knowledge textarea", KNOWLEDGE)
            page.click("#q2-submit")
            page.wait_for("document.querySelector('#q2-signature textarea').value", 90, "the result")
            score = float(page.js("document.querySelector('#q2-score textarea, #q2-score input').value"))
            reason = page.js("document.querySelector('#q2-reason textarea, #q2-reason input').value")
            marks = page.js(
                "[...document.querySelectorAll('#q2-spans mark.q2-span')].map("
                "m => [m.innerText, m.dataset.status, m.dataset.score || null])"
            )
            spans_text = page.js("document.querySelector('#q2-spans .q2-response').innerText")
            table = page.js("document.querySelector('#q2-table').innerText")
            widths = page.js(
                "(() => { const t = document.querySelector('#q2-table'); "
                "return [t.scrollWidth, t.clientWidth, document.documentElement.scrollWidth]; })()"
            )
            signature = page.js("document.querySelector('#q2-signature textarea').value")
            shot = page.screenshot(tmp_path / "space.png")
            page.type_into("#q2-response textarea", "x" * 1001)
            page.wait_for(
                "document.querySelector('#q2-response textarea').value.length === 1001", 10, "the input"
            )
            page.click("#q2-submit")
            error = page.wait_for(
                "(t => t.includes('characters long') && t)(document.body.innerText)", 60, "the length error"
            )
        # The tiny models (greedy, 8 tokens): each span's question is a walk of the chain QG's words;
        # the lexical QA answers "the joy"'s with "joy" from the response (the candidate once the
        # article goes: valid) and from the knowledge (the same answer: 1), and the other three with
        # another word of the response (not the candidate: no valid question). So the score is 1 and
        # the one-line reason beside it names the one valid question.
        assert score == 1.0
        assert reason == "The question was answered the same way from the knowledge.", reason
        # the response's answer candidates are highlighted, in order, each with its status; a valid
        # one carries its score
        assert spans_text.replace("\n", "") == RESPONSE.replace("the joy", "the joy 1.00"), spans_text
        # spaCy's candidates here (entities, then new noun chunks): bob ross, pbs, 1983, the joy
        assert marks == [
            ["bob ross", "no valid question", None],
            ["the joy 1.00", "valid", "1.00"],  # the mark holds its score
            ["pbs", "no valid question", None],
            ["1983", "no valid question", None],
        ], marks
        for column in ("span", "question", "status", "score"):
            assert column in table
        # the response's spans were asked about: the rows are this input's, not a placeholder
        assert "bob ross" in table and "1983" in table
        assert widths[0] <= widths[1] + 1 and widths[2] <= 1280, widths  # the table fits 1280 px
        assert "1,001 characters long; this Space takes at most 1,000" in error, error
        assert (
            signature.startswith("q2:") and "|qg:local-" in signature and tiny_models["qg"] not in signature
        )
        if os.environ.get("Q2_SCREENSHOT"):  # refresh the README's picture
            Path(os.environ["Q2_SCREENSHOT"]).write_bytes(shot.read_bytes())
    finally:
        app.terminate()
        try:
            app.wait(timeout=15)
        except subprocess.TimeoutExpired:
            app.kill()


def test_space_config_from_environment(monkeypatch):
    from q2_metric.errors import Q2OptionError
    from q2_metric.hub.space import space_config

    monkeypatch.setenv("Q2_QG_MODEL", "/models/qg")
    monkeypatch.setenv("Q2_SPACE_OPTIONS", '{"variant": "dnli", "decoding": "greedy", "batch_size": 4}')
    config = space_config()
    assert config.qg_model == "/models/qg" and config.decoding == "greedy" and not config.personal_filter
    assert config.qa_batch_size == 4
    monkeypatch.setenv("Q2_SPACE_OPTIONS", '{"decoding": "sample"}')
    with pytest.raises(Q2OptionError, match="decoding='sample'"):
        space_config()


def test_explain_rows():
    """One row per generated question, a one-line reason and the highlighted spans (scripted models:
    'Bob Ross' was answered the same way from the knowledge, 'PBS' was not answered by it). Expected values
    by hand from the scripted components' rules (q2_metric/testing/scripted.py)."""
    from q2_metric.hub.space import TABLE_COLUMNS, explain
    from q2_metric.testing.scripted import scripted_scorer

    scorer = scripted_scorer()
    score, reason, spans, rows, signature = explain(
        "Bob Ross hosted the show on PBS.", "Bob Ross hosted the show.", scorer
    )
    assert (
        score == "0.500" and signature.startswith("q2:") and all(len(r) == len(TABLE_COLUMNS) for r in rows)
    )
    assert (
        reason
        == "1 of 2 questions was answered the same way from the knowledge; 1 was not answered by the knowledge."
    )
    assert rows[0][:3] == ["Bob Ross", "what about Bob Ross?", "valid"] and rows[0][-1] == 1.0
    assert 'data-status="valid" data-score="1.00"' in spans and 'data-score="0.00"' in spans
    assert "hsl(120," in spans and "hsl(0," in spans  # green for 1, red for 0
    score, reason, spans, rows, _ = explain("it was nice.", "Bob Ross hosted the show.", scorer)
    assert score == "0.500" and rows == [] and "<mark" not in spans
    assert reason == (
        "No valid question (the response has no answer candidate); end-to-end NLI: the knowledge "
        "neither entails nor contradicts the response."
    )
    score, reason, spans, rows, _ = explain("   ", "Bob Ross hosted the show.", scorer)
    assert score == "" and rows == [] and reason == "Not scored: empty response."


def test_reason_line_counts():
    """Counts by verdict, in a fixed order (hand-built traces)."""
    from q2_metric.display import reason_line
    from q2_metric.results import QuestionTrace, ResponseScore

    def trace(f1, nli=None, answered=True):
        return QuestionTrace(
            "x",
            "q?",
            0,
            "valid",
            knowledge_answer="a" if answered else "",
            knowledge_has_answer=answered,
            f1=f1,
            nli_label=nli,
            score=0.0,
        )

    res = ResponseScore(
        0, 0.75, 0.75, questions=[trace(1.0), trace(1.0), trace(1.0), trace(0.0, "contradiction")]
    )
    assert reason_line(res) == (
        "3 of 4 questions were answered the same way from the knowledge; 1 was answered in "
        "contradiction of the response (NLI)."
    )
    res = ResponseScore(
        0, 0.5, 0.5, questions=[trace(0.5, "entailment"), trace(0.5, "neutral"), trace(0.0, None, False)]
    )
    assert reason_line(res) == (
        "1 of 3 questions was answered differently, but NLI found the answers consistent "
        "(entailment); 1 was partly matched (token F1, NLI neutral); 1 was not answered by the knowledge."
    )
    assert (
        reason_line(ResponseScore(0, 1.0, 1.0, questions=[trace(1.0)]))
        == "The question was answered the same way from the knowledge."
    )


def test_space_input_bounds():
    from q2_metric.hub.space import MAX_KNOWLEDGE_CHARS, MAX_RESPONSE_CHARS, check_lengths

    check_lengths("a" * MAX_RESPONSE_CHARS, "b" * MAX_KNOWLEDGE_CHARS)
    with pytest.raises(
        ValueError, match=r"^The knowledge is 4,001 characters long; this Space takes at most 4,000 "
    ):
        check_lengths("a", "b" * (MAX_KNOWLEDGE_CHARS + 1))


def test_app_file_bounds_the_queue():
    """The Space's app.py serves through `launch()`, which bounds gradio's queue (`max_size`)."""
    from q2_metric.hub import space

    class FakeApp:
        def queue(self, **options):
            self.options = options
            return self

        def launch(self):
            self.launched = True

    app = FakeApp()
    space.launch(app)
    assert app.launched and app.options["max_size"] == space.QUEUE_SIZE == 16
    assert "from q2_metric.hub.space import launch" in (ROOT / "hub_card" / "app.py").read_text()
