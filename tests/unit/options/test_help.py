"""Every option's help, type, default and choices are declared once (`Q2Config`'s fields and
`q2_metric.config.OPTION_DOCS`); the `q2` flags, ParlAI's `--q2-*` flags, the `evaluate` module's
inputs description and docs/python.md's option table all show that one declaration.

The expected choices and defaults are read here from `Q2Config` itself (its `Literal` hints and field
defaults, with `typing` and `dataclasses`), not from the helpers under test."""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Literal

import pytest
from support.data import ROOT

from q2_metric.cli import build_parser
from q2_metric.cli.common import FLAGS, q2_flags
from q2_metric.config import OPTION_DOCS, Q2Config
from q2_metric.options.help import (
    TABLE_END,
    TABLE_START,
    all_docs,
    markdown_table,
    off_help,
    option_help,
    replace_table,
)

DOCS = ROOT / "docs" / "python.md"
HINTS = typing.get_type_hints(Q2Config)
FIELDS = {f.name: f for f in dataclasses.fields(Q2Config)}
CONFIG_VERBS = ("demo", "score", "rescore", "agree", "serve")  # the verbs that take the engine flags


def literal_choices(name: str) -> tuple | None:
    hint = HINTS.get(name)
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else None


def field_default(name: str):
    return FIELDS[name].default


def _flag_spelling(name: str) -> str:
    return FLAGS.get(name) or "--" + name.replace("_", "-")


def test_every_field_is_declared_once_in_field_order_with_help():
    assert list(OPTION_DOCS) == [f.name for f in dataclasses.fields(Q2Config)]
    for name, doc in all_docs().items():
        assert doc.help.strip(), name
        option_help(name)  # every {option} the help names is an option
        if doc.off_help:
            assert HINTS[name] is bool and field_default(name) is True, name


def test_a_help_naming_no_option_is_refused(monkeypatch):
    from q2_metric.config import OptionDoc

    monkeypatch.setitem(OPTION_DOCS, "coref", OptionDoc("needs {corefs}"))
    with pytest.raises(KeyError, match="corefs"):
        option_help("coref")


def _actions(parser) -> dict[str, object]:
    return {flag: a for a in parser._actions for flag in a.option_strings}


def _verb_parsers() -> dict[str, object]:
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return {verb: sub.choices[verb] for verb in CONFIG_VERBS}


@pytest.mark.parametrize("verb", CONFIG_VERBS)
def test_q2_flags_show_the_declaration(verb):
    actions = _actions(_verb_parsers()[verb])
    for name, flag in FLAGS.items():
        action = actions[flag]
        is_switch_off = flag != "--" + name.replace("_", "-")
        expected = off_help(name, _flag_spelling) if is_switch_off else option_help(name, _flag_spelling)
        assert action.help == expected, flag
        if literal_choices(name) is not None:
            assert tuple(action.choices) == literal_choices(name), flag
            assert action.default == field_default(name), flag
    assert tuple(actions["--variant"].choices) == ("paper", "dnli")


def test_the_q2_switches_keep_the_variants_values():
    """A switch not given leaves the option to the variant (dnli's personal filter stays off)."""
    from q2_metric.cli.common import options_from_args

    parser = build_parser()
    opts = options_from_args(parser.parse_args(["score", "in.csv", "-o", "out.csv", "--variant", "dnli"]))
    assert opts["personal_filter"] is None and opts["use_nli"] is None and opts["coref"] is None
    args = parser.parse_args(
        ["score", "in.csv", "-o", "o.csv", "--no-nli", "--no-personal-filter", "--fallback-cased", "--coref"]
    )
    opts = options_from_args(args)
    assert (opts["use_nli"], opts["personal_filter"], opts["fallback_lowercase"], opts["coref"]) == (
        False,
        False,
        False,
        True,
    )


def _parlai_group():
    pytest.importorskip("parlai")
    from parlai.core.params import ParlaiParser

    from parlai_ext.options import add_q2_args

    parser = ParlaiParser(False, False)
    add_q2_args(parser)
    return _actions(parser)


def test_parlai_flags_show_the_declaration():
    from parlai_ext.options import OPTIONS, SPELL, parlai_flags_by_option

    actions = _parlai_group()
    assert set(parlai_flags_by_option()) == set(OPTIONS)
    for name in OPTIONS:
        flag = "--q2-" + name.replace("_", "-")
        action = actions[flag]
        assert action.help == option_help(name, SPELL), flag
        if literal_choices(name) is not None:
            assert tuple(action.choices) == literal_choices(name), flag
            assert action.default == field_default(name), flag
    assert "--q2-coref" in actions["--q2-coref-model"].help  # another option, in ParlAI's spelling


def _entries(description: str) -> dict[str, str]:
    """The evaluate description's `name (type): text` entries, whitespace joined."""
    entries: dict[str, str] = {}
    current = None
    for line in description.splitlines():
        m = re.match(r"^    ([a-z_]+) \(", line)
        if m:
            current = m.group(1)
            entries[current] = line.strip()
        elif current and line.startswith("        "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


def test_the_evaluate_description_shows_every_option():
    q2_module = pytest.importorskip("q2_metric.q2_metric")
    entries = _entries(q2_module._KWARGS_DESCRIPTION)
    for name, doc in all_docs().items():
        assert name in entries, name
        text = entries[name]
        assert option_help(name, lambda n: f"`{n}`").split(" (default: ")[0] in text, name
        if name in FIELDS and not doc.default_text:
            value = field_default(name)
            shown = repr(list(value) if isinstance(value, tuple) else value)
            assert text.endswith(f"(default: {shown}).")
        choices = literal_choices(name)
        if choices:
            assert text.startswith(f"{name} ({' or '.join(repr(c) for c in choices)}):"), name


def _docs_rows(page: str) -> dict[str, list[str]]:
    block = page.partition(TABLE_START)[2].partition(TABLE_END)[0]
    rows = {}
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells
    return rows


def test_the_docs_table_is_the_declaration():
    """docs/python.md's table is what `python mkdocs_hooks.py options-table` writes; each row names
    the flags the parsers really have, the field's default and its choices."""
    from parlai_ext.options import parlai_flags_by_option

    page = DOCS.read_text(encoding="utf-8")
    expected = markdown_table(q2_flags(), parlai_flags_by_option())
    assert replace_table(page, expected) == page, "run: python mkdocs_hooks.py options-table"
    rows = _docs_rows(page)
    assert list(rows) == list(all_docs())
    q2_actions = _actions(_verb_parsers()["score"])
    for name, (_, kind, default, q2_flag, parlai_flag, help_text) in rows.items():
        if q2_flag != "-":
            assert q2_flag.strip("`") in q2_actions, name
        if parlai_flag != "-":
            assert parlai_flag.strip("`") == "--q2-" + name.replace("_", "-")
        if literal_choices(name):
            assert kind == " / ".join(repr(c) for c in literal_choices(name))
        if name in FIELDS and not OPTION_DOCS[name].default_text:
            value = field_default(name)
            assert default == repr(list(value) if isinstance(value, tuple) else value), name
        assert help_text.startswith(OPTION_DOCS[name].help.split("{")[0] if name in FIELDS else ""), name


def test_an_edited_docs_row_is_seen():
    page = DOCS.read_text(encoding="utf-8")
    edited = page.replace("| `num_beams` | int | 5 |", "| `num_beams` | int | 4 |")
    assert edited != page
    assert replace_table(edited, markdown_table(q2_flags(), {})) != edited


def test_meta_eval_takes_the_engine_flags_with_their_declared_help():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    actions = _actions(sub.choices["meta-eval"])
    for name in ("qg_model", "qa_model", "spacy_model", "batch_size", "max_question_length", "tiny"):
        assert actions[FLAGS[name]].help == option_help(name, _flag_spelling), name
    assert actions["--coref-model"].help == option_help("coref_model", lambda n: "the +coreference row")
    assert tuple(actions["--span-shape"].choices) == ("auto", "ragtruth", "lettucedetect")
