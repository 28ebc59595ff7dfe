"""The cache keyword of T5's modules across transformers 5.x releases."""

from __future__ import annotations

from typing import Any


def decoder_cache(kwargs: dict) -> Any:
    """The cache a T5 module was called with (None without one): transformers 5 named the keyword
    `past_key_values` in its first releases and `cache` later (5.24 accepts both, passes `cache`)."""
    cache = kwargs.get("cache")
    return kwargs.get("past_key_values") if cache is None else cache
