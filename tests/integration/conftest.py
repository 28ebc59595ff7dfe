import pytest


@pytest.fixture(scope="session")
def harness_tiny(tmp_path_factory):
    """The tiny Q² models (built once into a private folder) and a tiny random causal LM (the model
    under evaluation; its replies are gibberish)."""
    from q2_metric.harness.tiny_lm import build_tiny_lm
    from q2_metric.models.tiny import ensure_tiny_models

    q2 = ensure_tiny_models(tmp_path_factory.mktemp("harness-q2") / "tiny-models")
    lm = build_tiny_lm(tmp_path_factory.mktemp("harness-lm") / "lm")
    return {"q2": q2, "lm": str(lm)}
