"""Harness-only stand-in (no S3 access in the conformance harness)."""

from . import exceptions  # noqa: F401 (the stub package exposes its submodules)
