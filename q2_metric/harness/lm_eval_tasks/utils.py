# lm-eval loads this file by its path (`!function utils.NAME`); the code and its state (one Q²
# engine per process) live in the installed package.
from q2_metric.harness.lm_eval import (  # noqa: F401 (re-exported: lm-eval finds these names here)
    agg_bad,
    agg_coverage,
    agg_empty,
    agg_q2,
    agg_q2_no_nli,
    agg_scored,
    agg_signature,
    dialogue_dataset,
    dialogue_doc_to_text,
    evaluate_figure,
    no_answer_share,
    num_responses,
    num_skipped,
    num_valid_questions,
    process_results,
    signature,
    wow_dataset,
    wow_doc_to_text,
)
