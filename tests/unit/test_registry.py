"""The front-end registry (`q2_metric.registry`) against the package and the docs: every `q2` verb,
console script, entry point, lm-eval task file and front-end module is registered; every registered
module, extra and page exists; `docs/frontends.md` links every registered page."""

from __future__ import annotations

import argparse
import configparser
import importlib.util
import re

import pytest
from support.data import ROOT

from q2_metric import registry

FRONTS = registry.FRONT_ENDS


def _setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return parser


def test_names_and_entries_are_unique():
    names = [f.name for f in FRONTS]
    assert len(names) == len(set(names))
    entries = [e for f in FRONTS for e in f.entries]
    assert len(entries) == len(set(entries))
    assert all(f.kind in registry.KINDS for f in FRONTS)


def test_every_q2_verb_is_registered():
    from q2_metric.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    verbs = {f"q2 {verb}" for verb in sub.choices}
    assert verbs <= set(registry.entries()), sorted(verbs - set(registry.entries()))
    commands = {e for e in registry.entries() if e.startswith("q2 ") and " --" not in e}
    assert commands <= verbs, sorted(commands - verbs)


def test_every_lm_eval_task_file_is_registered():
    tasks = {f"lm-eval {p.stem}" for p in (ROOT / "q2_metric" / "harness" / "lm_eval_tasks").glob("*.yaml")}
    registered = {e for e in registry.entries() if e.startswith("lm-eval ")}
    assert tasks == registered


def test_console_scripts_and_entry_points_lead_to_registered_modules():
    points = _setup_cfg()["options.entry_points"]
    modules = {f.module for f in FRONTS}
    for group, text in points.items():
        targets = [line.split("=", 1)[1].strip() for line in text.splitlines() if "=" in line]
        assert targets, group
        for target in targets:
            module = target.split(":")[0]
            if group == "console_scripts":
                assert module == "q2_metric.cli", target  # the `q2` command: its verbs are registered
            else:
                assert module in modules, (group, target)


@pytest.mark.parametrize("front", FRONTS, ids=[f.name for f in FRONTS])
def test_module_extra_and_page_exist(front):
    assert importlib.util.find_spec(front.module) is not None, front.module
    extras = _setup_cfg()["options.extras_require"]
    assert front.extra is None or front.extra in extras, front.extra
    assert (ROOT / "docs" / front.page).is_file(), front.page


def test_every_front_end_module_of_the_package_is_registered():
    """A module added under harness/ or guardrails/ is a front-end until the registry says where it
    belongs (the shared pieces are listed here with what they are)."""
    shared = {
        "q2_metric.guardrails.client": "the Q² service's HTTP client, shared by both guardrail plug-ins",
        "q2_metric.guardrails.nemo_rail": "the rail manifest of nemo.py's streaming rail (part of the NeMo plug-in)",
        "q2_metric.harness.tiny_lm": "the tiny language model the harness examples evaluate",
        "q2_metric.harness.__main__": "`python -m q2_metric.harness`: the harness examples' runner",
        "q2_metric.harness.lighteval_offline": "LightEval's own command without its tinyBenchmarks download",
    }
    modules = {f.module for f in FRONTS}
    for folder in ("harness", "guardrails"):
        for path in sorted((ROOT / "q2_metric" / folder).glob("*.py")):
            if path.stem == "__init__":
                continue
            name = f"q2_metric.{folder}.{path.stem}"
            assert name in modules or name in shared, f"{name} is neither registered nor listed as shared"


def test_the_docs_index_links_every_scoring_front_end_page():
    text = (ROOT / "docs" / "frontends.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]+)?\)", text))
    pages = {f.page for f in FRONTS if not f.not_scoring}
    assert pages <= linked, sorted(pages - linked)
