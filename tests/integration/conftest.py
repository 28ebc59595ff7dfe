"""Integration tests (subprocesses, the command line, ParlAI, the Space): marked `slow`."""


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: runs a subprocess, the command line, ParlAI or the Space")
