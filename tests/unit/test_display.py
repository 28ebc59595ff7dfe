"""What front-ends show (`q2_metric.display`): the figures in words without NaN, the threshold rule,
the tiny line, the history cell format, each in one home. Expected values are written by hand (the
tiny line's text as the released package prints it; the decisions by the rule "consistent iff
Q² > threshold")."""

from __future__ import annotations


def test_system_figures_in_words_without_nan():
    from q2_metric.display import figures_text
    from q2_metric.steps.system_score import SystemScore

    text = figures_text(
        SystemScore(
            q2=float("nan"),
            q2_no_nli=float("nan"),
            coverage=float("nan"),
            no_answer_share=float("nan"),
            num_responses=2,
            num_scored=0,
            num_skipped=2,
            num_valid_questions=0,
        )
    )
    assert "nan" not in text.lower()
    assert "Q2 = n/a (no response could be scored)" in text and "; 2 not scored, left out" in text
    assert "no-answer share = n/a (no valid question)" in text
    ok = figures_text(SystemScore(0.5, 0.25, 1.0, 0.5, 2, 2, 0, 4))
    assert ok.splitlines()[0].startswith("Q2 = 0.5000: mean response score over 2 of 2 responses")
    assert "share of the 4 valid questions that the knowledge does not answer" in ok


def test_one_formatter_one_spelling_of_an_undefined_figure():
    """Every printed table formats numbers with `figure`: None and NaN are `n/a` (before: `-` in the
    meta-eval report, the benchmark's leaderboard and the ladder, `nan` in the leaderboard)."""
    import math

    from q2_metric.display import figure
    from q2_metric.figures import UNDEFINED
    from q2_metric.meta import bench_report, ladder, report

    assert UNDEFINED == "n/a"
    assert [figure(0.123456), figure(0.5, 3), figure(7), figure(-0.05, spec="+.4f")] == [
        "0.1235",
        "0.500",
        "7",
        "-0.0500",
    ]
    for undefined in (None, float("nan"), math.nan):
        assert figure(undefined) == figure(undefined, 3, spec=".1%") == "n/a"
        assert report._fmt(undefined) == bench_report._f(undefined) == ladder._f(undefined) == "n/a"
    assert bench_report._p(None, 1000) == "n/a" and bench_report._p(0.0, 1000) == "<0.001"


def test_decisions_at_a_threshold():
    from q2_metric.display import CONSISTENT, INCONSISTENT, decide, decision_counts, decisions, is_consistent

    assert (CONSISTENT, INCONSISTENT) == ("consistent", "inconsistent")
    assert [decide(s, 0.5) for s in (0.51, 0.5, 0.0, 1.0, None, float("nan"))] == [
        "consistent",
        "inconsistent",  # equal to the threshold: inconsistent (score <= threshold)
        "inconsistent",
        "consistent",
        None,
        None,
    ]
    assert [is_consistent(s, 0.5) for s in (0.51, 0.5, None)] == [True, False, False]
    made, counts = decisions([0.9, 0.2, None, 0.5], 0.5)
    assert made == ["consistent", "inconsistent", None, "inconsistent"]
    assert counts == {"threshold": 0.5, "num_consistent": 1, "num_inconsistent": 2}
    assert decision_counts([None], 0.0) == {"threshold": 0.0, "num_consistent": 0, "num_inconsistent": 0}


PAPER_DOWNLOADS = (
    "These scores are meaningless: the models are tiny and random (questions capped at 16 tokens). "
    "For the paper's scores, "
)
THEN = ": Q² then names any model to download."


def test_the_tiny_line_in_each_front_ends_words():
    from q2_metric.display import tiny_note

    assert tiny_note(always=True) == PAPER_DOWNLOADS + "leave out --tiny / Q2_TINY" + THEN
    assert tiny_note(always=True, turn_off="remove the Space's variable Q2_TINY=1") == (
        PAPER_DOWNLOADS + "remove the Space's variable Q2_TINY=1" + THEN
    )
    assert tiny_note() is None
    assert len(tiny_note(always=True)) <= 200  # before: about 400 characters


def test_the_tiny_line_is_said_once_per_process(tiny_env, monkeypatch):
    """The front-ends that report from inside another tool's run (Inspect, lm-eval, LightEval)
    said the line once per task, batch or epoch; now once per process."""
    from q2_metric import display
    from q2_metric.frontend import configure

    monkeypatch.setattr(display, "_TINY_SAID", [])
    tiny = configure(tiny=True)
    assert display.tiny_note_once(tiny) == display.tiny_note(tiny) is not None
    assert display.tiny_note_once(tiny) is None and display.tiny_note_once(configure(tiny=True)) is None


def test_tiny_note_only_for_tiny_models(tiny_env):
    from q2_metric.config import Q2Config
    from q2_metric.display import tiny_note
    from q2_metric.frontend import configure

    assert (
        tiny_note(configure(tiny=True)) == PAPER_DOWNLOADS + "leave out --tiny / Q2_TINY" + THEN
    )  # tiny_env's folder
    assert tiny_note(Q2Config()) is None


def test_the_tiny_line_names_the_runs_question_cap(tiny_env):
    """The line said "capped at 16 tokens" whatever cap the run had (its signature: `max128`):
    it names the run's cap, from its options or from its signature."""
    from q2_metric.display import tiny_note, tiny_note_for
    from q2_metric.frontend import configure
    from q2_metric.signature import Signature

    tiny = configure(tiny=True)
    models = {f"{role}_model": getattr(tiny, f"{role}_model") for role in ("qg", "qa", "nli")}
    for cap, config in (
        (16, tiny),
        (24, configure({"max_question_length": 24}, tiny=True)),
        (128, configure(models)),  # the tiny models named by their folders: the paper's cap
    ):
        signature = str(Signature.create(config, {"qg": "tiny-random-t5@x"}))
        assert f"-max{cap}-" in signature
        assert f"(questions capped at {cap} tokens)" in tiny_note(config)
        assert f"(questions capped at {cap} tokens)" in tiny_note_for(signature)


def test_history_cell_format():
    from q2_metric.display import history_separator, history_turns

    assert history_separator() == " ||| "
    assert history_turns("Do you like coffee? ||| I love caffeine.") == [
        "Do you like coffee?",
        "I love caffeine.",
    ]
    assert history_turns("  Hi. ||| Bye.  ") == ["Hi.", "Bye."]
    assert history_turns("a|||b") == ["a|||b"]  # the separator has its spaces
    assert history_turns("  ") == []


def _sources() -> dict[str, str]:
    from support.data import ROOT

    files = list((ROOT / "q2_metric").rglob("*.py")) + list((ROOT / "parlai_ext").glob("*.py"))
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in files}


def threshold_comparisons(sources: dict[str, str]) -> list[str]:
    """`path: line` of each comparison with a name or attribute called `threshold`."""
    import ast

    found = []
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare):
                names = [
                    n.id if isinstance(n, ast.Name) else n.attr
                    for n in [node.left, *node.comparators]
                    if isinstance(n, (ast.Name, ast.Attribute))
                ]
                if "threshold" in names and any(
                    isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in node.ops
                ):
                    found.append(f"{path}: {node.lineno}")
    return found


def test_the_threshold_rule_and_the_tiny_line_have_one_home():
    """The rule "consistent iff Q² > threshold" is compared in `display.decide` only (the range
    check of `check_threshold` compares a value, not a threshold name), and the tiny line's text is
    written in `display.tiny_note` only (issue 49: four doors of the rule, three of the line, before)."""
    sources = _sources()
    assert threshold_comparisons(sources) == [
        f"q2_metric/display.py: {_line_of(sources, 'return CONSISTENT if')}"
    ]
    assert [p for p, text in sources.items() if "These scores are meaningless" in text] == [
        "q2_metric/display.py"
    ]


def _line_of(sources: dict[str, str], text: str) -> int:
    lines = sources["q2_metric/display.py"].splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_the_comparison_check_sees_one():
    assert threshold_comparisons({"a.py": "ok = score >= self.threshold\nx = 1 < 2\n"}) == ["a.py: 1"]


def test_no_text_a_user_can_see_names_an_issue_number():
    """Every string of the package that is no docstring (messages, tables, notes: what a user can
    see) names no issue number ("issue 50's 77.2 is in no source checked" was in the published table);
    the task files beside the code too. Comments and docstrings are for the code's readers."""
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    issue = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
    found = []
    for path in [*(root / "q2_metric").rglob("*.py"), *(root / "parlai_ext").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            f"{path.relative_to(root)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and issue.search(node.value)
        ]
    for path in (root / "q2_metric").rglob("*.yaml"):
        found += [
            f"{path.relative_to(root)}:{i}"
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if issue.search(line)
        ]
    assert found == []
