"""The Hugging Face Space: a gradio app over the engine, and `q2-metric space OUT_DIR` to assemble it.

The app takes a response and its knowledge and shows the score with a one-line reason, the
response with its spans highlighted by span score, one row per question (the explanation) and the
signature. Inputs are bounded (`MAX_RESPONSE_CHARS`, `MAX_KNOWLEDGE_CHARS`) and so is the queue
(`QUEUE_SIZE`). The models come from `Q2_QG_MODEL`, `Q2_QA_MODEL`, `Q2_NLI_MODEL`
(default: the paper's), or `Q2_TINY=1` (tiny random models); `Q2_SPACE_OPTIONS` may hold more options
as JSON (e.g. `{"device": "cpu"}`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from q2_metric.config import Q2Config
from q2_metric.errors import Q2Error, Q2InputError
from q2_metric.hub.explain import TABLE_COLUMNS, highlighted_html, question_rows
from q2_metric.progress import stage_label

ROOT = Path(__file__).resolve().parents[2]
CARD_DIR = ROOT / "hub_card"
MODULE_FILE = Path(__file__).resolve().parents[1] / "q2_metric.py"
GRADIO_REQUIREMENT = "gradio>=5.0,<7"
# Input bounds and the queue of the public Space (documented in the README and the card).
MAX_RESPONSE_CHARS = 1000
MAX_KNOWLEDGE_CHARS = 4000
QUEUE_SIZE = 16
# The table fits a 1280 px window: texts wrap, numbers get narrow columns.
COLUMN_WIDTHS = ["13%", "25%", "9%", "14%", "14%", "7%", "10%", "8%"]
EXAMPLE = (
    "he hosted the joy of painting on pbs",
    "Bob Ross was the creator and host of The Joy of Painting, which aired on PBS.",
)


class SpaceBuildError(Q2Error, RuntimeError):
    """The Space folder could not be assembled; the message is one sentence."""


def space_config() -> Q2Config:
    """The app's options: the paper's, with the environment's models and `Q2_SPACE_OPTIONS` (a JSON
    object, checked by `options.build_config` as every front-end's); a bad one is `Q2OptionError`
    in one sentence."""
    from q2_metric.errors import Q2OptionError
    from q2_metric.frontend import configure

    raw = os.environ.get("Q2_SPACE_OPTIONS") or "{}"
    try:
        options = json.loads(raw)
    except json.JSONDecodeError as err:
        raise Q2OptionError(
            f"The Space's variable Q2_SPACE_OPTIONS is not JSON ({err.msg}): {raw!r}; write "
            'a JSON object such as {"device": "cpu"}.'
        ) from None
    if not isinstance(options, dict):
        kind = {list: "a list", type(None): "null", str: "a string", bool: "a boolean"}.get(
            type(options), "a number"
        )
        raise Q2OptionError(
            f"The Space's variable Q2_SPACE_OPTIONS holds {kind} ({raw!r}), not a JSON object; "
            'write one such as {"device": "cpu"}.'
        )
    variant = options.pop("variant", "paper")
    try:
        # its options are the keys of Q2_SPACE_OPTIONS: Python's names (the default spelling)
        return configure(options, variant=variant, batch_size=options.pop("batch_size", None))
    except TypeError as err:  # an unknown option name (`check_option_names`)
        raise Q2OptionError(f"The Space's variable Q2_SPACE_OPTIONS names an unknown option: {err}") from None


def space_note() -> str:
    """The tiny-models banner in the Space's words: its switch is the variable Q2_TINY=1 (it has
    no --tiny flag)."""
    from q2_metric.display import tiny_note

    return tiny_note(always=True, turn_off="remove the Space's variable Q2_TINY=1")


def check_lengths(response: Any, knowledge: Any) -> None:
    """The Space's input bounds: one sentence naming the field and the limit when exceeded."""
    for name, text, limit in (
        ("response", response, MAX_RESPONSE_CHARS),
        ("knowledge", knowledge, MAX_KNOWLEDGE_CHARS),
    ):
        if isinstance(text, str) and len(text) > limit:
            raise Q2InputError(
                f"The {name} is {len(text):,} characters long; this Space takes at most {limit:,} "
                f"(score longer texts with `q2 score` on your own machine)."
            )


# The models a Space is set up with: each by its environment variable (`Q2_QG_MODEL`).
SPACE_VARIABLES = ("qg_model", "qa_model", "nli_model")
# A missing model's message also points to the Space's switch of the tiny models.
TINY_OFFER = (
    "set the variable Q2_TINY=1 to try the Space on tiny random models (meaningless scores, no download)"
)


def space_name(name: str) -> str:
    """An option as the Space's owner sets it (its `Spelling`): a model by the Space's variable
    (`qg_model` -> "the Space's variable Q2_QG_MODEL"), any other by its key in Q2_SPACE_OPTIONS."""
    return f"the Space's variable Q2_{name.upper()}" if name in SPACE_VARIABLES else name


STATUS_LEGEND = (
    "Status of each generated question: **valid**: the response, asked it, answers with its own "
    "span, so the question is kept and asked of the knowledge; **no_match**: the response's "
    "answer is not the span (or there is none), so the question is dropped; **personal**: it asks "
    "about I/you, dropped; **unused**: not examined, an earlier question of the span was valid; "
    "**discarded_unanswerable**: DNLI variant only."
)


def explain(
    response: str, knowledge: str, scorer: Any, progress: Any = None
) -> tuple[str, str, str, list[list], str]:
    """Score one pair: (score as text, "" when not scored; the one-line reason; the response with
    its spans highlighted, as HTML; one row per generated question; the signature)."""
    from q2_metric.errors import Q2InputError
    from q2_metric.frontend import Item, score_items

    outcome = score_items(scorer, [Item("the request", response, knowledge)], progress=progress)
    item = outcome.items[0]
    if item.status == "bad":
        raise Q2InputError(item.error)
    res = item.score
    if res is None:  # only a bad item has none
        raise Q2InputError(item.error)
    score = f"{res.q2:.3f}" if res.scored else ""
    return (score, item.reason, highlighted_html(response, res), question_rows(res), str(outcome.signature))


def score_or_message(
    response: str, knowledge: str, scorer: Any, note: str = "", progress: Any = None
) -> tuple:
    """The app's six outputs: `explain`'s five and the message line (`note`, e.g. that tiny models
    make meaningless scores). What stops scoring (a model missing, an input over the limit) leaves
    the five empty and is the message, in one place: gr.Error would mark every output box "Error"."""
    from q2_metric.frontend import model_words

    try:
        check_lengths(response, knowledge)
        with model_words(space_name, tiny_offer=TINY_OFFER):
            return (*explain(response, knowledge, scorer, progress), note)
    except Q2Error as err:
        return "", "", "", [], "", f"**Not scored:** {err}"


def make_app(config: Q2Config | None = None) -> Any:  # a gradio Blocks
    """The gradio Blocks app (models load on the first request and are kept). Serve it with
    `launch()`, which bounds the queue."""
    import gradio as gr

    from q2_metric.display import tiny_note
    from q2_metric.scorer import Q2Scorer

    problem = ""  # a bad Q2_SPACE_OPTIONS: the one message under the Score button, the Space still up
    if config is None:
        try:
            config = space_config()
        except ValueError as err:  # Q2OptionError included
            problem = f"**Not scored:** {err}"
    scorer = Q2Scorer(config) if config is not None else None
    note = problem or (f"**{space_note()}**" if tiny_note(config) else "")

    def run(response: str, knowledge: str, progress: Any = gr.Progress()) -> tuple:  # noqa: B008 (gradio's idiom: it fills a Progress default in)
        if problem:
            return "", "", "", [], "", problem

        def report(stage: str, done: int, total: int) -> None:
            progress((done, max(total, 1)), desc=f"Q² {stage_label(stage, bool(config and config.coref))}")

        return score_or_message(response, knowledge, scorer, note, report)

    with gr.Blocks(title="Q²") as app:
        gr.Markdown(
            "# Q²: factual consistency of a dialogue response with its knowledge\n"
            "Each informative span of the response becomes a question; the answers from the "
            "response and from the knowledge are compared (token F1, then NLI). "
            f"Higher is more consistent (0 to 1). At most {MAX_RESPONSE_CHARS:,} characters of "
            f"response and {MAX_KNOWLEDGE_CHARS:,} of knowledge."
        )
        with gr.Row():
            response = gr.Textbox(label="Response", lines=3, value=EXAMPLE[0], elem_id="q2-response")
            knowledge = gr.Textbox(label="Knowledge", lines=3, value=EXAMPLE[1], elem_id="q2-knowledge")
        button = gr.Button("Score", variant="primary", elem_id="q2-submit")
        message = gr.Markdown(note, elem_id="q2-message")
        with gr.Row(equal_height=True):
            score = gr.Textbox(label="Q² score", value="", interactive=False, elem_id="q2-score", scale=1)
            reason = gr.Textbox(label="Why", value="", interactive=False, elem_id="q2-reason", scale=5)
        gr.Markdown("The response's spans, coloured by span score (red 0, green 1; grey: no valid question):")
        spans = gr.HTML(value="", elem_id="q2-spans")
        table = gr.Dataframe(
            headers=TABLE_COLUMNS,
            label="Questions (explanation)",
            elem_id="q2-table",
            interactive=False,
            wrap=True,
            column_widths=COLUMN_WIDTHS,
        )
        gr.Markdown(STATUS_LEGEND, elem_id="q2-status-legend")
        signature = gr.Textbox(label="Signature", elem_id="q2-signature")
        button.click(
            run, inputs=[response, knowledge], outputs=[score, reason, spans, table, signature, message]
        )
    return app


def launch(app: Any = None) -> None:
    """Serve the app with a bounded queue: at most `QUEUE_SIZE` requests wait (later ones are told
    the queue is full), one is scored at a time."""
    app = app if app is not None else make_app()
    app.queue(max_size=QUEUE_SIZE, default_concurrency_limit=1).launch()


def _skip_in_copy(folder: str, names: list[str]) -> set[str]:
    """Build outputs, caches and virtual environments stay out of the wheel's source copy."""
    skip = {".git", "build", "dist", "__pycache__", ".q2_cache", ".pytest_cache", "node_modules"}
    return {
        n for n in names if n in skip or n.endswith(".egg-info") or (Path(folder, n, "pyvenv.cfg").exists())
    }


def build_wheel(out_dir: Path) -> Path:
    """Build this package's wheel into `out_dir` from a clean copy of the source checkout (so no
    stale `build/` file can slip into it)."""
    import tempfile

    if not (ROOT / "setup.cfg").exists():
        raise SpaceBuildError(
            f"q2-metric space builds a wheel of this package and needs its source "
            f"checkout, but {ROOT} has no setup.cfg."
        )
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "src"
        shutil.copytree(ROOT, source, ignore=_skip_in_copy)
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--disable-pip-version-check",
                "-q",
                "-w",
                str(Path(tmp) / "dist"),
                str(source),
            ],
            capture_output=True,
            text=True,
        )
        wheels = sorted((Path(tmp) / "dist").glob("q2_metric-*.whl"))
        if run.returncode != 0 or len(wheels) != 1:
            last = (run.stderr.strip().splitlines() or ["no output"])[-1]
            raise SpaceBuildError(f"Building the q2-metric wheel failed: {last}")
        return Path(shutil.copy2(wheels[0], out_dir / wheels[0].name))


def build_space(out_dir: str | Path) -> Path:
    """Write a complete Space folder: README.md (the card), app.py, q2.py (the evaluate module),
    requirements.txt and this package's wheel. Returns the folder."""
    import tempfile

    from q2_metric.io.paths import move_into

    check_space_folder(out_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # every file is written beside the folder, then renamed into it (a link in its place is refused)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.q2tmp-") as tmp:
        new = Path(tmp)
        wheel = build_wheel(new)
        shutil.copyfile(CARD_DIR / "README.md", new / "README.md")
        shutil.copyfile(CARD_DIR / "app.py", new / "app.py")
        shutil.copyfile(MODULE_FILE, new / "q2.py")
        (new / "requirements.txt").write_text(f"./{wheel.name}\n{GRADIO_REQUIREMENT}\n", encoding="utf-8")
        move_into(new, out)
    for old in out.glob("q2_metric-*.whl"):
        if old.name != wheel.name and old.is_file() and not old.is_symlink():
            old.unlink()
    return out


def check_space_folder(out_dir: str | Path) -> None:
    """The output-path rule for the Space folder: it is not, and does not hold, the package, the
    card's sources or the checkout; it does not lie inside the package or the card's sources (a
    folder inside the checkout is fine: the wheel takes only the package)."""
    from q2_metric.errors import OutputPathError
    from q2_metric.frontend import guard
    from q2_metric.io.paths import relation

    guard(
        {"the q2_metric package": MODULE_FILE.parent, "the card's sources": CARD_DIR},
        {"out_dir": out_dir},
        folders=["out_dir"],
    )
    if relation(out_dir, ROOT) in ("is", "contains"):
        raise OutputPathError(
            f"The output '{out_dir}' (out_dir) {relation(out_dir, ROOT)} the source checkout "
            f"'{ROOT}'; write the Space to a folder of its own."
        )
