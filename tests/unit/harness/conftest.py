"""The harness adapters' shared fixture: the process's `Engine` (`q2_metric.runtime`) for
`{"tiny": false}` on scripted components (no model), the runtime's cache reset before and after
each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from q2_metric.runtime import cache
from q2_metric.runtime.engine import Engine
from q2_metric.testing.scripted import scripted_scorer


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "true")
    cache.reset()
    config, _ = cache.runtime_config({"tiny": False})
    engine = cache.engine(config)
    engine.scorer = scripted_scorer()
    yield engine
    cache.reset()
