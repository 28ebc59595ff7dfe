"""Q²: factual consistency of knowledge-grounded dialogue responses (Honovich et al., EMNLP 2021).

>>> from q2_metric import Q2Scorer, Q2Config
>>> scorer = Q2Scorer(Q2Config(device="cpu"))            # paper's models, loaded on first use
>>> # result = scorer.score(responses, knowledge); result.q2, result.scores, result.responses[0]
"""

from __future__ import annotations

from pathlib import Path

from q2_metric.components import NO_ANSWER, Answer, ParsedText
from q2_metric.config import Q2Config
from q2_metric.frontends.hub import quiet_evaluate_cache_notice
from q2_metric.models.checks import DeviceNotAvailable, ModelCheckError
from q2_metric.models.loading import ModelNotAvailable
from q2_metric.normalize import f1_score, normalize_answer
from q2_metric.results import Q2Result, QuestionTrace, ResponseScore
from q2_metric.scorer import Q2Scorer, cached_scorer, score
from q2_metric.signature import Signature
from q2_metric.system_score import SystemScore
from q2_metric.validation import Q2InputError

__version__ = "0.3.0"


def module_path() -> str:
    """Directory of the `evaluate` metric module: `evaluate.load(q2_metric.module_path())`."""
    return str(Path(__file__).resolve().parent)


__all__ = ["Q2Scorer", "Q2Config", "Q2Result", "ResponseScore", "QuestionTrace", "SystemScore",
           "Signature", "Answer", "NO_ANSWER", "ParsedText", "ModelNotAvailable", "ModelCheckError",
           "DeviceNotAvailable", "Q2InputError",
           "score", "cached_scorer", "f1_score", "normalize_answer", "module_path", "__version__"]

quiet_evaluate_cache_notice()  # `evaluate.load("q2")` after `q2-metric register`: no misleading warning
