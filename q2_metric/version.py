"""The package version (read by setup.cfg and `q2 --version`)."""

__version__ = "0.5.0"
