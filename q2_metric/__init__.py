"""Q²: factual consistency of knowledge-grounded dialogue responses (Honovich et al., EMNLP 2021).

>>> from q2_metric import Q2Scorer, Q2Config
>>> scorer = Q2Scorer(Q2Config(device="cpu"))            # paper's models, loaded on first use
>>> # result = scorer.score(responses, knowledge); result.q2, result.scores, result.responses[0]
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from q2_metric.components import NO_ANSWER, Answer, ParsedText
    from q2_metric.config import Q2Config
    from q2_metric.errors import (
        DeviceNotAvailable,
        ModelCheckError,
        ModelNotAvailable,
        OutputPathError,
        Q2Error,
        Q2InputError,
        Q2OptionError,
        TinyModelsWarning,
    )
    from q2_metric.results import Q2Result, QuestionTrace, ResponseScore
    from q2_metric.runtime.stream import Q2Stream
    from q2_metric.scorer import Q2Scorer, cached_scorer, score
    from q2_metric.signature import Signature
    from q2_metric.steps.normalize import f1_score, normalize_answer
    from q2_metric.steps.system_score import SystemScore

# The public names, imported on first use: `import q2_metric` (and so the `q2` command's start,
# where the interrupt handlers are installed first) does not import torch.
_EXPORTS = {
    "q2_metric.components": ("NO_ANSWER", "Answer", "ParsedText"),
    "q2_metric.config": ("Q2Config",),
    "q2_metric.errors": (
        "Q2Error",
        "Q2InputError",
        "Q2OptionError",
        "OutputPathError",
        "ModelNotAvailable",
        "ModelCheckError",
        "DeviceNotAvailable",
        "TinyModelsWarning",
    ),
    "q2_metric.steps.normalize": ("f1_score", "normalize_answer"),
    "q2_metric.results": ("Q2Result", "QuestionTrace", "ResponseScore"),
    "q2_metric.runtime.stream": ("Q2Stream",),
    "q2_metric.scorer": ("Q2Scorer", "cached_scorer", "score"),
    "q2_metric.signature": ("Signature",),
    "q2_metric.steps.system_score": ("SystemScore",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'q2_metric' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


from q2_metric.evaluate_registry import quiet_evaluate_cache_notice  # noqa: E402 (light: no torch, no evaluate)
from q2_metric.version import __version__  # noqa: E402 (after the lazy names above, as the notice import)


def module_path() -> str:
    """Directory of the `evaluate` metric module: `evaluate.load(q2_metric.module_path())`."""
    return str(Path(__file__).resolve().parent)


__all__ = [
    "NO_ANSWER",
    "Answer",
    "DeviceNotAvailable",
    "ModelCheckError",
    "ModelNotAvailable",
    "OutputPathError",
    "ParsedText",
    "Q2Config",
    "Q2Error",
    "Q2InputError",
    "Q2OptionError",
    "Q2Result",
    "Q2Scorer",
    "Q2Stream",
    "QuestionTrace",
    "ResponseScore",
    "Signature",
    "SystemScore",
    "TinyModelsWarning",
    "__version__",
    "cached_scorer",
    "f1_score",
    "module_path",
    "normalize_answer",
    "score",
]

quiet_evaluate_cache_notice()  # `evaluate.load("q2")` after `q2-metric register`: no misleading warning
