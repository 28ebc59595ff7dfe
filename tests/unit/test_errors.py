"""One error root: every public exception class of the package is a `Q2Error`, so a front-end that
catches `Q2Error` catches every error a user can see (the command line prints it in one line)."""

from __future__ import annotations

import importlib
import inspect

import pytest
from support.data import ROOT

from q2_metric.errors import Q2Error

# Not errors a user sees: a signal as an exception, and the readers' private markers.
# Interrupted: Ctrl-C on its way out; TinyModelsWarning: a warning (the tiny models' line), no error
NOT_USER_ERRORS = {"q2_metric.io.interrupts.Interrupted", "q2_metric.errors.TinyModelsWarning"}


def modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "q2_metric").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def public_exceptions(module_names: list[str]) -> dict[str, type]:
    found = {}
    for name in module_names:
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == name
                and not attr.startswith("_")
            ):
                found[f"{name}.{attr}"] = obj
    return found


def test_every_public_exception_is_a_q2_error():
    classes = public_exceptions(modules())
    assert len(classes) >= 15  # the walk found them (errors.py alone holds 9)
    assert (
        sorted(n for n, c in classes.items() if not issubclass(c, Q2Error) and n not in NOT_USER_ERRORS) == []
    )


def test_parlai_errors_are_q2_errors_too():
    pytest.importorskip("parlai")
    classes = public_exceptions(["parlai_ext.options"])
    assert classes and all(issubclass(c, Q2Error) for c in classes.values())


def test_the_command_line_prints_any_q2_error_in_one_line(monkeypatch, capsys):
    from q2_metric import cli
    from q2_metric.cli import demo
    from q2_metric.hub.publish import PublishError

    def fail(args):
        raise PublishError("The card cannot be written.")

    monkeypatch.setattr(demo, "cmd_demo", fail)
    assert cli.main(["demo"]) == 2
    assert capsys.readouterr().err == "q2: The card cannot be written.\n"
