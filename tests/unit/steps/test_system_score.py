"""The system figures in words, without NaN."""

from __future__ import annotations


def test_system_figures_in_words_without_nan():
    from q2_metric.steps.system_score import SystemScore, figures_text

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
    assert (
        "Q2 = n/a (no response could be scored)" in text and "2 with an empty response or knowledge" in text
    )
    assert "no-answer share = n/a (no valid question)" in text
    ok = figures_text(SystemScore(0.5, 0.25, 1.0, 0.5, 2, 2, 0, 4))
    assert ok.splitlines()[0].startswith("Q2 = 0.5000: mean response score over 2 of 2 responses")
    assert "share of the 4 valid questions that the knowledge does not answer" in ok


def test_one_formatter_one_spelling_of_an_undefined_figure():
    """Every printed table formats numbers with `figure`: None and NaN are `n/a` (before: `-` in the
    meta-eval report, the benchmark's leaderboard and the ladder, `nan` in the leaderboard)."""
    import math

    from q2_metric.meta import bench_report, ladder, report
    from q2_metric.steps.system_score import UNDEFINED, figure

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
