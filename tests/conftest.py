import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test touches the network
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# MLflow and DeepEval decide on their telemetry when first imported (collection may import them)
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")

from support.data import sample_rows

from q2_metric.config import Q2Config
from q2_metric.models.tiny_builder import build_tiny_models

INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config, items):
    """Every test under tests/integration/ is `slow` (subprocesses, ParlAI, Ray, the browser, the docs):
    `pytest -m "not slow"` (make test-fast) leaves them out."""
    for item in items:
        if item.path.resolve().is_relative_to(INTEGRATION):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def rows() -> list[dict]:
    return sample_rows()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, str]:
    """qg/qa/nli directories of the tiny random models, built here: scores that vary with the text
    (0, 0.2, 0.5 and 1 on the sample; `q2_metric.models.tiny_builder`), so row-by-row comparisons can fail."""
    texts = [r["response"] for r in sample_rows()] + [r["knowledge"] for r in sample_rows()]
    return build_tiny_models(tmp_path_factory.mktemp("tiny_models"), texts, size="tiny")


@pytest.fixture(scope="session")
def tiny_config(tiny_models) -> Q2Config:
    # Questions end by the design (`tiny_builder.chain_qg`); a short limit still bounds the searches.
    return Q2Config(
        qg_model=tiny_models["qg"],
        qa_model=tiny_models["qa"],
        nli_model=tiny_models["nli"],
        device="cpu",
        max_question_length=16,
    )


@pytest.fixture(scope="session")
def tiny_multilingual_models(tmp_path_factory) -> dict[str, str]:
    """qg/qa/nli/ner directories of the tiny multilingual random models (a SentencePiece
    vocabulary trained on the bundled multi-script text; `tiny_builder.build_tiny_multilingual_models`),
    built here."""
    from q2_metric.models.tiny_builder import build_tiny_multilingual_models

    return build_tiny_multilingual_models(tmp_path_factory.mktemp("tiny_multilingual"))


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    """The tiny-models folder `q2 demo --tiny` builds (Q2_TINY_MODELS), built once here."""
    from q2_metric.models.tiny import ensure_tiny_models

    folder = tmp_path_factory.mktemp("newcomer") / "tiny-models"
    ensure_tiny_models(folder)
    return folder


@pytest.fixture
def tiny_env(tiny_dir, monkeypatch):
    monkeypatch.setenv("Q2_TINY_MODELS", str(tiny_dir))
    for name in ("Q2_TINY", "Q2_QG_MODEL", "Q2_QA_MODEL", "Q2_NLI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tiny_dir


@pytest.fixture(autouse=True)
def _grad_mode_kept():
    """Each test ends in the grad mode it began in: importing LightEval's transformers model turns
    PyTorch's gradients off for the whole process (`torch.set_grad_enabled(False)` at its import),
    which a later test of gradients would otherwise inherit."""
    import torch

    enabled = torch.is_grad_enabled()
    yield
    torch.set_grad_enabled(enabled)
