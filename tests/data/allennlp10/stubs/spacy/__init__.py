"""Harness-only stand-in for spaCy 2.x: allennlp 1.0 imports spaCy at module level, but the NLI
tokenization path (pretrained_transformer tokenizer/indexer, snli reader) never calls it.
spaCy 2.x does not build on Python 3.11. Any real use raises."""

from . import cli, language, tokens  # noqa: F401 (the stub package exposes its submodules)


def load(*a, **k):
    raise RuntimeError("spaCy stub: not available in the conformance harness")
