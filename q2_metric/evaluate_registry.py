"""`evaluate.load("q2")` offline: `q2-metric register` puts a module in evaluate's module cache that
imports this package's `evaluate` module, and `import q2_metric` quiets evaluate's notice that the
module was found in its cache rather than on the Hub (standard library only: evaluate is not
imported)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

# What `q2-metric register` puts in evaluate's module cache: an import of the installed package's
# module rather than a copy of it, so that an upgrade of q2-metric is what `evaluate.load("q2")`
# serves next, without registering again.
REGISTERED_MODULE = '''"""Q² for `evaluate.load("q2")`, registered by `q2-metric register`. It imports the installed
q2-metric's evaluate module, so an upgrade of q2-metric takes effect without registering again."""

from q2_metric.q2_metric import Q2  # noqa: F401 (re-exported: evaluate loads the module class from here)
'''
EVALUATE_NAME = "evaluate-metric--q2"


def evaluate_modules_dir() -> Path:
    """evaluate's dynamic-module folder, found as evaluate finds it (HF_MODULES_CACHE, else
    $HF_HOME/modules, else $XDG_CACHE_HOME/huggingface/modules) without importing evaluate."""
    import os

    home = os.path.expanduser(
        os.getenv("HF_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
    )
    return Path(os.getenv("HF_MODULES_CACHE", os.path.join(home, "modules"))) / "evaluate_modules"


def register_evaluate_module(dynamic_modules_path: str | None = None) -> Path:
    """Put the module where `evaluate.load("q2")` finds it offline (evaluate's module cache, as if
    it had been loaded from the Hub's `evaluate-metric/q2`), replacing earlier registrations.
    Imports neither evaluate nor torch. Returns the written file."""
    import shutil

    root = Path(dynamic_modules_path) if dynamic_modules_path else evaluate_modules_dir()
    folder = root / "metrics" / EVALUATE_NAME
    target = folder / hashlib.sha256(REGISTERED_MODULE.encode()).hexdigest()
    if folder.is_dir():  # earlier registrations (copies of older versions): evaluate serves the newest
        for old in folder.iterdir():
            if old.is_dir() and len(old.name) == 64 and old != target:
                shutil.rmtree(old)
    target.mkdir(parents=True, exist_ok=True)
    for pkg in (root.parent, root, root / "metrics", folder, target):
        (pkg / "__init__.py").touch()
    (target / "q2.py").write_text(REGISTERED_MODULE, encoding="utf-8")
    return target / "q2.py"


class _CachedModuleNotice:
    """Drops evaluate's "Using the latest cached version of the module ... couldn't be found
    locally at evaluate-metric--q2, or remotely" warning: for the registered Q² module that is the
    normal way it is found, not a failure."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (f"found locally at {EVALUATE_NAME}," in message and "cached version" in message)


def quiet_evaluate_cache_notice() -> None:
    """Install the filter on evaluate's loader logger (idempotent; evaluate is not imported)."""
    import logging

    logger = logging.getLogger("evaluate.loading")
    if not any(isinstance(f, _CachedModuleNotice) for f in logger.filters):
        logger.addFilter(_CachedModuleNotice())
