import pytest


@pytest.fixture(scope="session")
def harness_tiny(tmp_path_factory):
    """The tiny Q² models (built once into a private folder) and a tiny random causal LM."""
    from q2_metric.tiny import ensure_tiny_models

    from .harness_helpers import build_tiny_lm, wow_texts

    q2 = ensure_tiny_models(tmp_path_factory.mktemp("harness-q2") / "tiny-models")
    lm = build_tiny_lm(tmp_path_factory.mktemp("harness-lm") / "lm", wow_texts())
    return {"q2": q2, "lm": str(lm)}
