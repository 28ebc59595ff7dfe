"""The Space's metric script: the `evaluate` module shipped in the q2-metric package."""

from q2_metric.q2_metric import *  # noqa: F401,F403
