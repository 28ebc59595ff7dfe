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
