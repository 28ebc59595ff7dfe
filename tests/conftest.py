import csv
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test touches the network
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from q2_metric.config import Q2Config  # noqa: E402
from q2_metric.models.random_models import build_random_models  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "q2_metric" / "data" / "wow_sample.csv"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "q2_wow"


def sample_rows() -> list[dict]:
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="session")
def rows() -> list[dict]:
    return sample_rows()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, str]:
    """qg/qa/nli directories of tiny random models with a tokenizer trained here."""
    texts = [r["response"] for r in sample_rows()] + [r["knowledge"] for r in sample_rows()]
    return build_random_models(tmp_path_factory.mktemp("tiny_models"), texts, size="tiny")


@pytest.fixture(scope="session")
def tiny_config(tiny_models) -> Q2Config:
    # Random weights never stop early: short questions keep the tests fast.
    return Q2Config(qg_model=tiny_models["qg"], qa_model=tiny_models["qa"], nli_model=tiny_models["nli"],
                    device="cpu", max_question_length=16)
