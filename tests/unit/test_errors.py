"""One error root: every public exception class of the package is a `Q2Error`, so a front-end that
catches `Q2Error` catches every error a user can see (the command line prints it in one line)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect

import pytest
from support.data import ROOT

from q2_metric.errors import Q2Error

# Not errors a user sees: a signal as an exception, and the readers' private markers.
# Interrupted: Ctrl-C on its way out; TinyModelsWarning: a warning (the tiny models' line), no error
NOT_USER_ERRORS = {
    "q2_metric.io.interrupts.Interrupted",
    "q2_metric.errors.TinyModelsWarning",
    "q2_metric.errors.NotEnglishWarning",  # a warning: its items are unverified, not scored
}


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


# Raises that are no error a user can cause, each with its reason. (path, class name) -> why.
NOT_USER_RAISES = {
    # Python's own protocols
    ("q2_metric/__init__.py", "AttributeError"): "a module's __getattr__ must raise AttributeError",
    (
        "q2_metric/harness/lighteval_task.py",
        "AttributeError",
    ): "a module's __getattr__ must raise AttributeError",
    ("parlai_ext/options.py", "SystemExit"): "argparse's exit after ParlAI printed its usage line",
    ("q2_metric/cli/common.py", "argparse.ArgumentTypeError"): "argparse prints it as the flag's usage error",
    ("q2_metric/cli/score.py", "argparse.ArgumentTypeError"): "argparse prints it as the flag's usage error",
    ("q2_metric/cli/agree.py", "argparse.ArgumentTypeError"): "argparse prints it as the flag's usage error",
    (
        "q2_metric/cli/calibrate.py",
        "argparse.ArgumentTypeError",
    ): "argparse prints it as the flag's usage error",
    (
        "q2_metric/serve/protocol.py",
        "ValueError",
    ): "pydantic's validators raise ValueError; the service turns it into the item's or request's sentence",
    (
        "q2_metric/guardrails/client.py",
        "TimeoutError",
    ): "the request's deadline inside the socket reads; Q2Service.ask turns it into its one sentence",
    (
        "q2_metric/guardrails/client.py",
        "TypeError",
    ): "the deadline connection is built by the client's own opener, after Q2Service checked the timeout",
    ("q2_metric/io/interrupts.py", "Interrupted"): "SIGTERM as a KeyboardInterrupt, on its way out",
    (
        "q2_metric/models/speed/t5_beam_cache.py",
        "NotImplementedError",
    ): "a transformers Cache method unused here",
    ("parlai_ext/hook.py", "NotImplementedError"): "an abstract method",
    # The file system's own errors: the command line prints an OSError in one line (cli.main)
    ("q2_metric/io/commit.py", "OSError"): "a write's OSError, its errno kept, naming the target",
    # Invariants of the code (a bug if ever seen), not reachable from any input or option
    ("q2_metric/components.py", "ValueError"): "Answer(has_answer=False) built with text: a bug",
    ("q2_metric/steps/spans.py", "RuntimeError"): "coreference's trace disagreeing with its own output",
    (
        "q2_metric/steps/response_scores.py",
        "ValueError",
    ): "the scorer always gives an NLI when fallback is on",
    ("q2_metric/options/help.py", "KeyError"): "an option's help text naming no option: a docs bug",
    ("q2_metric/options/help.py", "ValueError"): "the docs page lost its generated-table markers",
    ("q2_metric/models/speed/cpu_matmul.py", "ValueError"): "Q2Config refuses the value first",
    ("q2_metric/models/speed/flops.py", "TypeError"): "the benchmarks' FLOP counter, never a user's run",
    ("q2_metric/registry.py", "KeyError"): "a front-end looked up by a name the code itself gives",
    ("q2_metric/telemetry/events.py", "ValueError"): "the emitter's callers pass one id per response",
}
PACKAGES = ("q2_metric", "parlai_ext", "hub_card")


def _module_name(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(tree) -> dict[str, tuple[str, str]]:
    """Every `from X import Y [as Z]` anywhere in a module (function-local imports included)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def _resolve(expr, module, imported, functions):
    """The class an expression names (`X`, `mod.X`), or a factory's annotated return class; None for
    a variable (a caught error raised again)."""
    import builtins

    if isinstance(expr, ast.Attribute):
        base = _resolve_object(expr.value, module, imported)
        return getattr(base, expr.attr, None)
    if not isinstance(expr, ast.Name):
        return None
    name = expr.id
    if name in imported:
        source, attr = imported[name]
        obj = getattr(importlib.import_module(source), attr, None)
    else:
        obj = getattr(module, name, None) or getattr(builtins, name, None)
    if obj is None and name in functions:  # a local factory: its return annotation
        obj = functions[name]
    if inspect.isfunction(obj) or isinstance(obj, ast.FunctionDef):
        returns = obj.returns if isinstance(obj, ast.FunctionDef) else None
        annotation = ast.unparse(returns) if returns is not None else obj.__annotations__.get("return")
        assert annotation, f"{module.__name__}.{name} raises what it returns: annotate its return class"
        return _resolve(ast.parse(str(annotation), mode="eval").body, module, imported, functions)
    return obj


def _resolve_object(expr, module, imported):
    if isinstance(expr, ast.Name):
        if expr.id in imported:
            source, attr = imported[expr.id]
            return getattr(importlib.import_module(source), attr, None)
        return getattr(module, expr.id, None) or importlib.import_module(expr.id)
    if isinstance(expr, ast.Attribute):
        return getattr(_resolve_object(expr.value, module, imported), expr.attr, None)
    return None


def _caught_where_raised(node, parents, raised, module, imported, functions) -> bool:
    """Whether a `try` around the raise catches it (a private marker, turned into a Q2Error or
    counted on the spot)."""
    child, at = node, parents.get(node)
    while at is not None:
        if isinstance(at, ast.Try) and child in at.body:
            for handler in at.handlers:
                types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                for t in types:
                    caught = _resolve(t, module, imported, functions) if t is not None else BaseException
                    if inspect.isclass(caught) and issubclass(raised, caught):
                        return True
        if isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        child, at = at, parents.get(at)
    return False


def raised_classes() -> list[tuple[str, str, type]]:
    """(path:line, the class as written, the class) of every `raise` of the packages' code."""
    if importlib.util.find_spec("parlai") is None:
        pytest.skip("parlai_ext's modules import ParlAI")
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            module = importlib.import_module(_module_name(path))
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imported = _imported_names(tree)
            functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            handled = {
                ast.unparse(t)
                for h in ast.walk(tree)
                if isinstance(h, ast.ExceptHandler) and h.type is not None
                for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
            }
            parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Raise) or node.exc is None:
                    continue
                expr = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                cls = _resolve(expr, module, imported, functions)
                if not inspect.isclass(cls):
                    assert isinstance(node.exc, ast.Name), f"{path}:{node.lineno}: cannot resolve the raise"
                    continue  # `raise err`: a caught error raised again
                if _caught_where_raised(node, parents, cls, module, imported, functions):
                    continue
                if cls.__name__.startswith("_") and cls.__name__ in handled:
                    continue  # a module's private marker, caught by that module's reader
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.append((where, ast.unparse(expr), cls))
    return found


def test_every_raise_of_the_package_is_a_q2_error_or_a_listed_exception():
    """Walks every `raise` in the code (not only the public classes): each raises a `Q2Error`, is
    caught where it is raised, or is listed above with its reason (so `Q2Config(device="gpu")`,
    the threshold rule and `with_config` are `Q2Error`s: the root has no holes)."""
    raises = raised_classes()
    assert len(raises) > 200  # the walk found them
    outside = sorted(
        f"{where}: {written}"
        for where, written, cls in raises
        if not issubclass(cls, Q2Error) and (where.split(":")[0], written) not in NOT_USER_RAISES
    )
    assert outside == []
    # every listed exception is still raised somewhere (the list does not rot)
    seen = {(where.split(":")[0], written) for where, written, _ in raises}
    assert sorted(set(NOT_USER_RAISES) - seen) == []


def test_the_config_the_threshold_and_with_config_raise_q2_errors():
    from q2_metric import Q2Config
    from q2_metric.display import check_threshold
    from q2_metric.errors import Q2OptionError

    for bad in ({"device": "gpu"}, {"num_beams": 0}, {"num_beams": 2, "num_return_sequences": 5}):
        with pytest.raises(Q2OptionError) as err:
            Q2Config(**bad)
        assert isinstance(err.value, ValueError)  # callers catching ValueError still do
    with pytest.raises(Q2OptionError, match=r"^Invalid Q² option Q2Config.device='gpu': use 'auto'"):
        Q2Config(device="gpu")
    for bad in (True, 1.5, "high", float("nan")):
        with pytest.raises(Q2OptionError):
            check_threshold(bad)
    from q2_metric import Q2Scorer

    scorer = Q2Scorer(Q2Config(tiny=False))  # nothing loads until a call
    with pytest.raises(Q2OptionError, match="with_config keeps the scorer's models"):
        scorer.with_config(Q2Config(tiny=False, qg_model="/elsewhere"))


def test_each_range_rule_is_written_once_and_front_ends_spell_it():
    """`config.value_problem` is the one home of an option's rule: `Q2Config` and the front-ends'
    option check give the same reason, each naming the option its own way."""
    from q2_metric import Q2Config
    from q2_metric.errors import Q2OptionError
    from q2_metric.options import check_option, flag_name

    for name, value, reason in (
        ("num_beams", 0, "use an integer >= 1"),
        ("no_repeat_ngram_size", -1, "use an integer >= 0"),
        ("qa_max_length", 16, "use an integer >= 32 or None"),
        ("fallback_scores", (1, 2, 0), "use 3 numbers in [0, 1]"),
        ("decoding", "sampling", "allowed values are 'beam' or 'greedy'"),
    ):
        with pytest.raises(Q2OptionError) as direct:
            Q2Config(**{name: value})
        with pytest.raises(Q2OptionError) as spelled:
            check_option(name, value, flag_name())
        assert direct.value.reason == spelled.value.reason == reason
        assert str(spelled.value).startswith(f"Invalid Q² option --{name.replace('_', '-')}=")
