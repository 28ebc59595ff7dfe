"""The harness adapters' shared fixture: the process's `HarnessBatcher` for `{"tiny": false}` on
scripted components (no model), reset before and after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from q2_metric.harness import batcher as B
from q2_metric.testing.scripted import scripted_scorer


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[B.HarnessBatcher]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    B.reset_batchers()
    config, _ = B.harness_config({"tiny": False})
    batcher = B.harness_batcher(config)
    batcher.scorer = scripted_scorer()
    yield batcher
    B.reset_batchers()
