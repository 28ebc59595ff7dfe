"""The `--q2-*` flags and the engine configuration they describe, the one-sentence errors of a
Q² ParlAI run, and what the run's opt says (training or not, example limit, system, explain file)."""

from __future__ import annotations

import os
from typing import Any

from q2_metric import ModelNotAvailable
from q2_metric.cli.common import flag_type
from q2_metric.config import Q2Config
from q2_metric.errors import Q2Error, Q2InputError, Q2OptionError
from q2_metric.frontend import Decision, configure, decision
from q2_metric.options import flag_name, option_types
from q2_metric.options.help import all_docs, allowed, default_value, option_help


class _Sentence(SystemExit):
    """Ends a ParlAI command with its one-sentence message and exit status 1, no traceback (Python
    prints a SystemExit's message as it is), while staying catchable as its other base class."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = message


class Q2DataError(_Sentence, Q2InputError):
    """The data cannot be scored with Q² (e.g. it has no checked sentence, or is not there)."""


class Q2ModelError(_Sentence, ModelNotAvailable):
    """A Q² model or the spaCy pipeline cannot be used; the message names the --q2-* flag."""


class Q2OptionValueError(_Sentence, Q2OptionError):
    """A `--q2-*` value the engine refuses (one that argparse could not check alone)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


def q2_requested(opt: dict) -> bool:
    """`--metrics q2` (or `all`), or `--validation-metric q2`."""
    names = {m.strip() for m in str(opt.get("metrics") or "default").split(",")}
    return bool(names & {"q2", "all"}) or opt.get("validation_metric") == "q2"


# ParlAI's spelling of an engine option: `batch_size` -> `--q2-batch-size`.
SPELL = flag_name("--q2-")


# The engine options ParlAI takes as `--q2-<option>` flags, in `--help`'s order (help, type, default
# and choices from the one declaration: `q2_metric.config.OPTION_DOCS`, `q2_metric.options.help`).
# `--q2-batch-size` is ParlAI's own (responses buffered per engine call), as are the explain flags.
OPTIONS = (
    "qg_model",
    "qa_model",
    "nli_model",
    "tiny",
    "spacy_model",
    "device",
    "decoding",
    "qg_decoder",
    "max_question_length",
    "question_mode",
    "variant",
    "coref",
    "coref_model",
)


def parlai_flags_by_option() -> dict[str, str]:
    """Option -> its ParlAI flag (`qg_model` -> `--q2-qg-model`)."""
    return {name: SPELL(name) for name in OPTIONS}


def _add_option(g: Any, name: str) -> None:
    values = allowed(name)
    kwargs: dict[str, Any] = {"help": option_help(name, SPELL)}
    if option_types().get(name) is bool:
        # --q2-tiny: None lets the Q2_TINY environment variable decide
        kwargs.update(type="bool", default=None if all_docs()[name].default_text else default_value(name))
    elif values is not None:
        kwargs.update(type=str, choices=list(values), default=default_value(name))
    elif name == "device":
        kwargs.update(type=flag_type("device", SPELL, str), default=default_value(name))
    elif option_types()[name] in (int, int | None):
        kwargs.update(type=flag_type(name, SPELL), default=None)
    else:  # a model: None keeps the engine's default (its environment variable, then the paper's)
        kwargs.update(type=str, default=None)
    g.add_argument(SPELL(name), **kwargs)


# `--q2-batch-size` unless given: responses per engine call, and the engine's batch sizes
BUFFER_SIZE = 64


def add_q2_args(parser: Any) -> None:
    """The `--q2-*` flags. Values are checked as they are parsed, by the engine's option checks
    (`q2_metric.options`), so that a bad one stops ParlAI's parser with one line."""
    g = parser.add_argument_group("Q² metric (with --metrics q2)")
    for name in OPTIONS[: OPTIONS.index("device") + 1]:
        _add_option(g, name)
    g.add_argument(
        "--q2-batch-size",
        type=flag_type("batch_size", SPELL),
        default=BUFFER_SIZE,
        help="responses buffered per engine call (and the engine's batch size)",
    )
    for name in OPTIONS[OPTIONS.index("device") + 1 : OPTIONS.index("variant") + 1]:
        _add_option(g, name)
    g.add_argument(
        "--q2-explain-file",
        type=str,
        default=None,
        help="one JSON line per evaluated turn (scored, empty or skipped); overwritten at the start of a run",
    )
    g.add_argument(
        "--q2-explain-append",
        type="bool",
        default=False,
        help="append to --q2-explain-file instead of overwriting it",
    )
    for name in OPTIONS[OPTIONS.index("variant") + 1 :]:
        _add_option(g, name)
    g.add_argument(
        "--q2-operating-point",
        type=str,
        default=None,
        help="an operating-point file (q2 calibrate): each turn of --q2-explain-file gets its decision "
        "at its threshold, and the signature names it",
    )


def decision_from_opt(opt: dict) -> Decision:
    """The decision of `--q2-operating-point` (read before any model work; a bad file is one
    sentence naming it), else the default threshold with no operating point."""
    try:
        return decision(opt.get("q2_operating_point"), spell=SPELL)
    except Q2Error as err:
        raise Q2OptionValueError(str(err)) from None


def config_from_opt(opt: dict) -> Q2Config:
    """The engine configuration the `--q2-*` flags describe, checked by the engine's option checks
    (an opt that did not come through the parser, e.g. a saved one, is checked here)."""
    options = {name: opt.get(f"q2_{name}") for name in OPTIONS if name not in ("variant", "tiny")}
    batch_size = opt.get("q2_batch_size")
    try:
        return configure(
            options,
            variant=opt.get("q2_variant") or "paper",
            batch_size=BUFFER_SIZE if batch_size is None else batch_size,
            spell=SPELL,
            tiny=opt.get("q2_tiny") or None,
        )
    except ValueError as err:
        raise Q2OptionValueError(str(err), getattr(err, "reason", "")) from None


def _is_training(opt: dict) -> bool:
    from parlai.utils.data import DatatypeHelper

    return DatatypeHelper.is_training(opt.get("datatype") or "train")


def _example_limit(opt: dict) -> int | None:
    """The number of examples after which the running script stops the pass early:
    eval_model's --num-examples, train_model's --validation-max-exs."""
    if "num_examples" in opt:
        value = opt["num_examples"]
    elif not _is_training(opt):
        value = opt.get("validation_max_exs")
    else:
        value = None
    try:
        value = int(value)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _system(opt: dict) -> str | None:
    if "ReplayAgent" in str(opt.get("model") or ""):
        return f"replay:{opt.get('replay_system') or 'dodeca'}"
    return opt.get("model_file") or opt.get("model")


def _explain_path(opt: dict) -> str | None:
    path = opt.get("q2_explain_file")
    if not path:
        return None
    from parlai.utils.distributed import get_rank, is_distributed

    if is_distributed():  # one file per worker, as ParlAI does for world logs
        base, ext = os.path.splitext(path)
        path = f"{base}_{get_rank()}{ext}"
    return path


def check_explain_file(opt: dict, path: str) -> None:
    """The output-path rule (`q2_metric.io.paths`) for --q2-explain-file, before any model
    work: it must not be, contain or lie inside an input (the annotations, the data file, the
    model file, a Q² model folder) nor be another output; its folder is created. A collision is one
    line on stderr and exit code 2 (ParlAI would print a traceback for an exception)."""
    import sys

    from q2_metric.errors import OutputPathError
    from q2_metric.frontend import guard

    inputs = {
        f"--{name.replace('_', '-')}": opt.get(name)
        for name in (
            "q2_annotations",
            "datafile",
            "model_file",
            "init_model",
            "q2_qg_model",
            "q2_qa_model",
            "q2_nli_model",
            "q2_spacy_model",
            "q2_operating_point",
        )
    }
    inputs = {flag: p for flag, p in inputs.items() if isinstance(p, str) and os.path.exists(p)}
    outputs = {"--report-filename": opt.get("report_filename"), "--world-logs": opt.get("world_logs")}
    outputs = {flag: p for flag, p in outputs.items() if isinstance(p, str) and p}
    try:
        guard(inputs, {**outputs, "--q2-explain-file": path})
    except OutputPathError as err:
        print(f"q2: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        print(
            f"q2: the folder '{folder}' of --q2-explain-file cannot be created ({err.strerror}).",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
