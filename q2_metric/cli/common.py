"""What the verbs share: the engine options as flags, and the signature as printed."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from q2_metric.config import Q2Config
from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.options import Spelling, check_option, option_types
from q2_metric.options.help import allowed, default_value, off_help, option_help

# The engine options the `q2` verbs take, in `--help`'s order, each with its flag. A boolean option's
# flag is a switch: it turns the option on, or off when the option is on by default (its help is then
# the option's `off_help`). Help, type, default and choices come from the one declaration
# (`q2_metric.config.OPTION_DOCS`, `q2_metric.options.help`).
FLAGS: dict[str, str] = {
    "qg_model": "--qg-model",
    "qa_model": "--qa-model",
    "nli_model": "--nli-model",
    "spacy_model": "--spacy-model",
    "variant": "--variant",
    "decoding": "--decoding",
    "question_mode": "--question-mode",
    "qa_decoding": "--qa-decoding",
    "personal_filter": "--no-personal-filter",
    "use_nli": "--no-nli",
    "device": "--device",
    "dtype": "--dtype",
    "quantize": "--quantize",
    "fallback_lowercase": "--fallback-cased",
    "long_inputs": "--long-inputs",
    "batch_size": "--batch-size",
    "cpu_matmul": "--cpu-matmul",
    "qg_decoder": "--qg-decoder",
    "coref": "--coref",
    "coref_model": "--coref-model",
    "max_question_length": "--max-question-length",
    "tiny": "--tiny",
    "language": "--language",
    "model_sets": "--model-sets",
}


def q2_flags() -> dict[str, str]:
    """Option -> its `q2` flag (`use_nli` -> `--no-nli`)."""
    return dict(FLAGS)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_option_flags(
    group: argparse._ActionsContainer, names: Sequence[str], spell: Spelling | None = None
) -> None:
    """The flags of engine options `names` (keys of FLAGS) on a parser or group, each with its
    declared help, other options named as `spell` spells them (default: their `q2` flags). A choice
    option's flag and `--device` default to the paper's value (so `--help` shows it); the others to
    None or off, which leaves the option to the variant (`--tiny`: to Q2_TINY)."""
    spell = spell or _spell_flag
    for name in names:
        flag = FLAGS[name]
        if option_types().get(name) is bool:
            switch_off = flag != f"--{name.replace('_', '-')}"
            text = off_help(name, spell) if switch_off else option_help(name, spell)
            default = None if name == "tiny" else False  # --tiny: None lets Q2_TINY decide
            group.add_argument(flag, action="store_true", default=default, help=text)
            continue
        values = allowed(name)
        kwargs: dict[str, Any] = {"help": option_help(name, spell)}
        if values is not None:
            kwargs.update(choices=values, default=default_value(name))
        elif name == "device":
            kwargs["default"] = default_value(name)
        else:
            kwargs["default"] = None
            if option_types().get(name, int) in (int, int | None):
                kwargs["type"] = int
        group.add_argument(flag, **kwargs)


def _spell_flag(name: str) -> str:
    return FLAGS.get(name) or "--" + name.replace("_", "-")


def flag_type(name: str, spell: Spelling, convert: Callable[[str], Any] = int) -> Callable[[str], Any]:
    """An argparse `type=` for the flag of option `name`: its text converted and checked by
    `check_option`, so that a bad value stops the parser with argparse's one line naming the flag."""

    def parse(text: str) -> Any:
        try:
            return check_option(name, convert(text), spell)
        except ValueError as err:  # Q2OptionError, or the conversion's
            reason = err.reason if isinstance(err, Q2OptionError) else "use an integer"
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {reason}") from None

    parse.__name__ = spell(name)
    return parse


def add_config_args(parser: argparse.ArgumentParser, leave_out: Sequence[str] = ()) -> None:
    """The engine options, as flags (defaults: the paper's), but those of `leave_out` (a verb that
    shows one of them elsewhere in its help)."""
    add_option_flags(parser.add_argument_group("Q² options"), [n for n in FLAGS if n not in leave_out])


def options_from_args(args: argparse.Namespace, names: Sequence[str] = tuple(FLAGS)) -> dict[str, Any]:
    """The engine options the flags of `names` give (`variant` and `batch_size` left out); None
    where a flag is not given (a switch not given: None, keeping the variant's value)."""
    opts: dict[str, Any] = {}
    for name in names:
        if name in ("variant", "batch_size", "tiny"):
            continue
        value = getattr(args, _dest(FLAGS[name]), None)
        if option_types()[name] is bool:
            switch_off = FLAGS[name] != f"--{name.replace('_', '-')}"
            value = (not switch_off) if value else None
        opts[name] = value
    return opts


def config_from_args(
    args: argparse.Namespace,
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> Q2Config:
    """The checked configuration with its models provided (`options.build_config`, errors naming
    the flags; `say` hears that tiny models are being built, never inside what the run reads:
    `reads`, default the verb's `input` argument, e.g. `q2 score`'s)."""
    from q2_metric.frontend import configure

    try:
        if reads is None and getattr(args, "input", None):
            reads = {"input": args.input}
        return configure(
            options_from_args(args),
            variant=args.variant,
            batch_size=args.batch_size,
            spell=_spell_flag,
            tiny=args.tiny,
            say=say,
            reads=reads,
        )
    except ValueError as err:
        raise Q2InputError(str(err)) from None


def _signature_text(signature: str, short: bool) -> str:
    from q2_metric.signature import Signature

    return Signature.parse(signature).short() if short else signature
