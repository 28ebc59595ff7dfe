"""Option handling shared by every front-end (command line, `evaluate` module, ParlAI, Space):
strict checks, variants, JSON.

Every option value from a user is checked here, once, before any model loads: a bad one fails with
one sentence naming the option as the front-end spells it (`spell`: `batch_size` for Python,
`--batch-size` for `q2`, `--q2-batch-size` for ParlAI) and its allowed values. The allowed values
are read from `Q2Config`'s type hints, so they follow the engine.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from q2_metric.config import (
    DEFAULT_NLI_MODEL,
    DEFAULT_QA_MODEL,
    DEFAULT_QG_MODEL,
    Q2Config,
    choices,
    choices_text,
    field_types,
    option_names,
    value_problem,
)
from q2_metric.errors import Q2OptionError, Q2UnknownOption

# evaluate's `config_name` and the `variant` option: the variant the other options start from.
VARIANTS = {"default": Q2Config.paper, "paper": Q2Config.paper, "dnli": Q2Config.dnli}
VARIANT_NAMES = ("paper", "dnli")  # the command lines' --variant choices
BATCH_OPTIONS = ("qg_batch_size", "qa_batch_size", "nli_batch_size")
MODEL_DEFAULTS = {
    "qg_model": ("Q2_QG_MODEL", DEFAULT_QG_MODEL),
    "qa_model": ("Q2_QA_MODEL", DEFAULT_QA_MODEL),
    "nli_model": ("Q2_NLI_MODEL", DEFAULT_NLI_MODEL),
}


Spelling = Callable[[str], str]  # an option's name -> the front-end's name for it


def python_name(name: str) -> str:
    return name


def flag_name(prefix: str = "--") -> Spelling:
    """The spelling of a command line: `qg_batch_size` -> `--qg-batch-size` (ParlAI: `--q2-...`)."""
    return lambda name: prefix + name.replace("_", "-")


# The Q² option keywords an adapter takes by name (ragas, Inspect, LightEval, MLflow, DeepEval, Ray
# Serve, Guardrails AI): the model folders and the device, the keywords that choose the
# configuration (`variant`, `tiny`, `batch_size`), the language's model set (`language`,
# `model_sets`) or the engine's batch (`max_batch`), and the operating point its verdicts are
# decided at and signed with (`operating_point`: a file `q2 calibrate` wrote; `frontend.decision_of`
# reads it). Any other `Q2Config` option goes in the adapter's `options` mapping.
RUNTIME_KEYWORDS = ("variant", "tiny", "batch_size", "max_batch", "operating_point")  # not `Q2Config` fields
ADAPTER_KEYWORDS = (
    *RUNTIME_KEYWORDS,
    "qg_model",
    "qa_model",
    "nli_model",
    "device",
    "language",
    "model_sets",
)


def merge_options(
    keywords: Mapping[str, Any], options: Any = None, spell: Spelling = python_name
) -> dict[str, Any]:
    """`options` (a mapping of Q² options, or None) with the `keywords` that are set (not None)
    added: the one merge of every adapter. A name given both ways with different values, or
    `options` that is no mapping, is one `Q2OptionError` sentence naming them as `spell` does."""
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise Q2OptionError(
            f"Invalid Q² option {spell('options')}={options!r}: use a mapping of Q² options, "
            f"e.g. {spell('options')}={{'tiny': True}}."
        )
    merged = dict(options)
    for name, value in keywords.items():
        if value is None:
            continue
        if name in merged and merged[name] != value:
            raise Q2OptionError(
                f"The Q² option {name} is given twice with different values ({spell(name)}={value!r} "
                f"and {spell('options')}[{name!r}]={merged[name]!r}); give it once."
            )
        merged[name] = value
    return merged


def option_types() -> dict[str, Any]:
    """`Q2Config` field name -> its type hint."""
    return field_types()


def allowed_values(name: str) -> tuple | None:
    """The allowed values of a choice option (`decoding`: ('beam', 'greedy')), else None."""
    return choices().get(name)


def option_default(name: str) -> Any:
    """The paper variant's value of an option (model ids: the built-in default, not the env)."""
    if name in MODEL_DEFAULTS:
        return MODEL_DEFAULTS[name][1]
    field = next(f for f in dataclasses.fields(Q2Config) if f.name == name)
    if field.default is not dataclasses.MISSING:
        return field.default
    return None  # spacy_model: chosen at load time


def _bad(name: str, value: Any, allowed: str) -> Q2OptionError:
    return Q2OptionError(f"Invalid Q² option {name}={value!r}: {allowed}.", allowed)


def normalize_device(value: Any, spelled: str = "device") -> str:
    """`auto`, `cpu`, `cuda`, `cuda:N` or a `torch.device` -> a device string torch understands,
    one this machine has (`devices.device_problem`)."""
    from q2_metric.models.devices import device_problem, device_text

    value = device_text(value)
    problem = device_problem(value)
    if problem is not None:
        raise _bad(spelled, value, problem)
    return value


def check_option(name: str, value: Any, spell: Spelling = python_name) -> Any:
    """Check one option value; return it in the form `Q2Config` takes (lists -> tuples). `name` is
    a `Q2Config` field or `batch_size` (QG, QA and NLI at once); errors name it as `spell` does."""
    if name == "device":
        return normalize_device(value, spell(name))
    if name == "batch_size":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _bad(spell(name), value, "use an integer >= 1")
        return value
    return _check_field(name, value, spell(name))


def _check_field(name: str, value: Any, spelled: str) -> Any:
    """One field's value checked by its rule (`config.value_problem`, the rules' one home), in the
    form `Q2Config` keeps (lists -> tuples, numbers -> floats)."""
    problem = value_problem(name, value)
    if problem is not None:
        raise _bad(spelled, value, problem)
    hint = option_types()[name]
    if typing.get_origin(hint) is tuple and value is not None:
        if typing.get_args(hint)[-1] is Ellipsis:
            return tuple(value)
        return tuple(float(v) for v in value)
    return value


def check_variant(variant: Any, spell: Spelling = python_name) -> str:
    """`default`/`paper` or `dnli` (also evaluate's `config_name`)."""
    if variant not in VARIANTS or not isinstance(variant, str):
        raise _bad(spell("variant"), variant, f"allowed values are {choices_text(VARIANTS)}")
    return variant


def check_option_names(
    names: Iterable[str], extra: Iterable[str] = (), spell: Spelling = python_name
) -> None:
    """Raise `Q2UnknownOption` (a `Q2OptionError` and a `TypeError`; one sentence) for a keyword
    that is no Q² option, named as `spell` spells it."""
    known = set(option_names()) | set(extra)
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = (
                f" (did you mean '{spell(close[0])}'?)" if close else "; see the module's inputs description"
            )
            raise Q2UnknownOption(f"'{spell(name)}' is not a Q² option{hint}.", hint.strip(" ;()"))


def build_config(
    variant: str = "paper",
    options: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    spell: Spelling = python_name,
    tiny: bool | None = None,
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> Q2Config:
    """A checked `Q2Config` with its models provided: the variant `variant`, then `options` (None
    values left at the variant's); `batch_size` sets the QG, QA and NLI batch sizes unless one of
    them is given. `tiny` (default: the `Q2_TINY` environment variable) puts the tiny random models
    in place of the models left at their defaults (`q2_metric.models.provision`; `say` hears that
    they are being built; never inside `reads`, what the run reads: name -> path, as the guard
    `io.paths.check_run` takes them). Every front-end builds its configuration here; errors name
    each option as `spell` does.

    Raises:
        Q2OptionError: an unknown option (`TypeError` for a keyword that is no option), a bad
            value, or options that contradict each other; one sentence naming the option.
    """
    given = {k: v for k, v in (options or {}).items() if v is not None}
    if tiny is not None:
        given["tiny"] = tiny
    check_option_names(given, spell=spell)
    checked = {name: check_option(name, value, spell) for name, value in given.items()}
    if batch_size is not None:
        batch_size = check_option("batch_size", batch_size, spell)
        for name in BATCH_OPTIONS:
            checked.setdefault(name, batch_size)
    from q2_metric.models.provision import provide_models

    return provide_models(_make(VARIANTS[check_variant(variant, spell)], checked), say, reads)


def with_options(
    config: Q2Config | None, options: Mapping[str, Any], spell: Spelling = python_name
) -> Q2Config:
    """`config` (default: the paper's) with single options replaced, each checked as `build_config`
    checks it (the Python API's `score(..., **options)`, `Q2Scorer(config, **options)`,
    `cached_scorer(**options)`). None keeps the configuration's value, except for the options
    whose None means something (`qa_max_length`: the model's maximum; `spacy_model`: the default;
    the batch sizes and token budgets: the device's).

    Raises:
        Q2OptionError: a bad value or contradicting options; `Q2UnknownOption` (also a
            `TypeError`) for a keyword that is no option. One sentence naming the option.
    """
    config = config or Q2Config()
    check_option_names(options, spell=spell)
    checked: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            if type(None) in typing.get_args(option_types()[name]):
                checked[name] = None
            continue
        checked[name] = check_option(name, value, spell)
    if not checked:
        return config
    return config.replace(**checked)  # the rules between options: Q2Config's Q2OptionError


def _make(variant: Callable[..., Q2Config], options: dict[str, Any]) -> Q2Config:
    return variant(**options)  # the rules between options: Q2Config's Q2OptionError


def json_safe(value: Any) -> Any:
    """Strict JSON: NaN and infinities -> None (null), recursively; tuples -> lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def option_from_text(name: str, text: str, spell: Spelling = python_name) -> Any:
    """An option's value from its text (`KEY=VALUE` on a command line): integers, `true`/`false`,
    `none` for an optional integer, comma lists, else the text; checked by `check_option`.

    >>> option_from_text("dtype", "bfloat16"), option_from_text("num_beams", "4"), option_from_text("use_nli", "false")
    ('bfloat16', 4, False)
    """
    check_option_names([name], ["batch_size"])
    hint = option_types().get(name, int)
    value: Any = text
    if hint is bool:
        lowered = text.strip().lower()
        value = (
            True
            if lowered in ("1", "true", "yes", "on")
            else False
            if lowered in ("0", "false", "no", "off")
            else text
        )
    elif hint is int or hint == (int | None):
        value = None if text.strip().lower() == "none" and hint is not int else _int_or_text(text)
    elif typing.get_origin(hint) is tuple:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        value = (
            [float(p) if _is_number(p) else p for p in parts]
            if typing.get_args(hint)[-1] is not Ellipsis
            else parts
        )
    if value is None:
        return None
    return check_option(name, value, spell)


def _int_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
