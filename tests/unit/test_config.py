"""Q2Config refuses unknown choices."""

from __future__ import annotations

import pytest

from q2_metric import Q2Config


def test_config_rejects_unknown_choices():
    with pytest.raises(ValueError, match="decoding"):
        Q2Config(decoding="sampling")
    with pytest.raises(ValueError, match="num_return_sequences"):
        Q2Config(num_beams=2, num_return_sequences=5)
