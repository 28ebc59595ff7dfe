from . import download  # noqa: F401
