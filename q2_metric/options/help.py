"""Every option's help, as each front-end shows it, made from the one declaration
(`q2_metric.config.OPTION_DOCS` for the `Q2Config` fields, `FRONT_END_DOCS` here for `variant` and
`batch_size`): the `q2` flags (`q2_metric.cli.common`), ParlAI's `--q2-*` flags
(`parlai_ext.options`), the `evaluate` module's inputs description (`docstring_entries`) and the
docs' option table (`markdown_table`, in docs/python.md; `python mkdocs_hooks.py options-table`
rewrites it). The types, defaults and choices are `Q2Config`'s (`q2_metric.options`)."""

from __future__ import annotations

import textwrap
import typing
from typing import Any

from q2_metric.config import OPTION_DOCS, OptionDoc, choices
from q2_metric.options import VARIANT_NAMES, Spelling, option_default, option_types, python_name

# The options every front-end takes that are no `Q2Config` field.
FRONT_END_DOCS: dict[str, OptionDoc] = {
    "variant": OptionDoc(
        "the rules the other options start from: paper (the final EMNLP 2021 version) or dnli (the "
        "paper's DNLI variant)"
    ),
    "batch_size": OptionDoc("one batch size for QG, QA and NLI", "each model's own"),
}
# How the `q2` flags, ParlAI's flags and the docs spell an option's value choices and defaults.
FRONT_END_CHOICES: dict[str, tuple[str, ...]] = {"variant": VARIANT_NAMES}
FRONT_END_DEFAULTS: dict[str, Any] = {"variant": "paper", "batch_size": None}
# The docs' option table sits between these two lines of docs/python.md.
TABLE_START = (
    "<!-- options-table: made by `python mkdocs_hooks.py options-table` from q2_metric/config.py -->"
)
TABLE_END = "<!-- options-table end -->"


def all_docs() -> dict[str, OptionDoc]:
    """Every documented option: the `Q2Config` fields in their order, then `variant`, `batch_size`."""
    return {**OPTION_DOCS, **FRONT_END_DOCS}


class _Spelled(dict[str, str]):
    def __init__(self, spell: Spelling) -> None:
        super().__init__()
        self.spell = spell

    def __missing__(self, key: str) -> str:
        if key == "tiny_question_length":
            from q2_metric.models.tiny import TINY_QUESTION_LENGTH

            return str(TINY_QUESTION_LENGTH)
        if key not in all_docs():
            raise KeyError(f"option help names {{{key}}}, which is no option")
        return self.spell(key)


def _fill(text: str, spell: Spelling) -> str:
    return text.format_map(_Spelled(spell))


def option_help(name: str, spell: Spelling = python_name) -> str:
    """The help of option `name`, other options named as `spell` spells them, with its declared
    default text (an environment variable, a choice made at load time) as "(default: ...)"; the plain
    defaults are the front-end's to show (argparse's formatter, the docs' default column)."""
    doc = all_docs()[name]
    text = _fill(doc.help, spell)
    return f"{text} (default: {_fill(doc.default_text, spell)})" if doc.default_text else text


def off_help(name: str, spell: Spelling = python_name) -> str:
    """The help of a switch that turns boolean option `name` off (`q2 score --no-nli`)."""
    text = all_docs()[name].off_help
    if text is None:
        raise KeyError(f"option {name} declares no off_help")
    return _fill(text, spell)


def allowed(name: str) -> tuple[str, ...] | None:
    """An option's value choices (the `Literal` of its field, or `variant`'s presets), else None."""
    return choices().get(name) or FRONT_END_CHOICES.get(name)


def default_value(name: str) -> Any:
    """The paper's value of an option (`option_default`; `variant` and `batch_size` too)."""
    return FRONT_END_DEFAULTS[name] if name in FRONT_END_DEFAULTS else option_default(name)


def type_text(name: str) -> str:
    """How the docs and the `evaluate` module name an option's type: `str`, `bool`, `int or None`,
    `list of str`, `3 floats`, `'beam' or 'greedy'`."""
    values = allowed(name)
    if values:
        return " or ".join(repr(v) for v in values)
    if name == "batch_size":
        return "int"
    if name == "device":
        return "str or torch.device"
    hint = option_types()[name]
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        return f"list of {args[0].__name__}" if args[-1] is Ellipsis else f"{len(args)} {args[0].__name__}s"
    parts = [a.__name__ if a is not type(None) else "None" for a in typing.get_args(hint)] or [hint.__name__]
    return " or ".join(parts)


def default_text(name: str, spell: Spelling = python_name) -> str:
    """The default as the docs and the `evaluate` module say it."""
    doc = all_docs()[name]
    if doc.default_text:
        return _fill(doc.default_text, spell)
    value = default_value(name)
    return repr(list(value) if isinstance(value, tuple) else value)


def docstring_entries(indent: str = "    ", width: int = 100) -> str:
    """The `evaluate` module's lines for every option: `name (type): help (default: ...).`"""
    lines = []
    for name, doc in all_docs().items():
        text = f"{name} ({type_text(name)}): {_fill(doc.help, _backticked)}"
        if doc.off_help:
            text += f"; False: {off_help(name, _backticked)}"
        text += f" (default: {default_text(name, _backticked)})."
        lines.extend(
            textwrap.wrap(
                text,
                width,
                initial_indent=indent,
                subsequent_indent=indent + "    ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )
    return "\n".join(lines)


def _code(text: str) -> str:
    return f"`{text}`"


def _backticked(name: str) -> str:  # how the docs and the docstring name another option
    return f"`{name}`"


def table_row(name: str, q2_flag: str, parlai_flag: str) -> str:
    """One row of the docs' table (`|` in a help would break it: none has one)."""
    help_text = _fill(all_docs()[name].help, _backticked)
    if all_docs()[name].off_help:
        help_text += f"; off: {off_help(name, _backticked)}"
    return (
        f"| `{name}` | {type_text(name).replace(' or ', ' / ')} | {default_text(name, _backticked)} | "
        f"{q2_flag} | {parlai_flag} | {help_text} |"
    )


def markdown_table(q2_flags: dict[str, str], parlai_flags: dict[str, str]) -> str:
    """The docs' option table: every option, its type or choices, default, `q2` flag, ParlAI flag
    (each given as the front-end spells it, `-` when it has none) and help."""
    rows = [
        "| option | type / values | default | `q2` flag | ParlAI flag | what it does |",
        "|---|---|---|---|---|---|",
    ]
    for name in all_docs():
        q2_flag = _code(q2_flags[name]) if name in q2_flags else "-"
        parlai_flag = _code(parlai_flags[name]) if name in parlai_flags else "-"
        rows.append(table_row(name, q2_flag, parlai_flag))
    return "\n".join(rows)


def replace_table(page: str, table: str) -> str:
    """`page` with the text between TABLE_START and TABLE_END replaced by `table`."""
    head, start, rest = page.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not (start and end):
        raise ValueError(f"the page has no {TABLE_START} ... {TABLE_END} block")
    return f"{head}{TABLE_START}\n{table}\n{TABLE_END}{tail}"
