from . import download  # noqa: F401 (the stub package exposes its submodules)
