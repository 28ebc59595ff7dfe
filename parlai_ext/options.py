"""The `--q2-*` flags and the engine configuration they describe, the one-sentence errors of a
Q² ParlAI run, and what the run's opt says (training or not, example limit, system, explain file)."""

from __future__ import annotations

import os
import re

from q2_metric import ModelNotAvailable
from q2_metric.config import Q2Config, choices
from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.options import VARIANT_NAMES, build_config, flag_name, flag_type


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


def add_q2_args(parser) -> None:
    """The `--q2-*` flags. Values are checked as they are parsed, by the engine's option checks
    (`q2_metric.options`), so that a bad one stops ParlAI's parser with one line."""
    from q2_metric.config import DEFAULT_NLI_MODEL, DEFAULT_QA_MODEL, DEFAULT_QG_MODEL

    d = Q2Config(qg_model=DEFAULT_QG_MODEL, qa_model=DEFAULT_QA_MODEL, nli_model=DEFAULT_NLI_MODEL)
    g = parser.add_argument_group("Q² metric (with --metrics q2)")
    g.add_argument(
        "--q2-qg-model",
        type=str,
        default=None,
        help=f"question generation model (default $Q2_QG_MODEL, else {d.qg_model})",
    )
    g.add_argument(
        "--q2-qa-model",
        type=str,
        default=None,
        help=f"SQuAD 2.0 QA model (default $Q2_QA_MODEL, else {d.qa_model})",
    )
    g.add_argument(
        "--q2-nli-model",
        type=str,
        default=None,
        help=f"NLI model (default $Q2_NLI_MODEL, else {d.nli_model})",
    )
    g.add_argument(
        "--q2-tiny",
        type="bool",
        default=None,
        help="tiny random models instead of the paper's (no download; the scores mean "
        "nothing; default: the Q2_TINY environment variable)",
    )
    g.add_argument("--q2-spacy-model", type=str, default=None, help="spaCy pipeline")
    g.add_argument(
        "--q2-device",
        type=flag_type("device", SPELL, str),
        default="auto",
        help="auto (default), cpu, cuda or cuda:N",
    )
    g.add_argument(
        "--q2-batch-size",
        type=flag_type("batch_size", SPELL),
        default=64,
        help="responses buffered per engine call (and the engine's batch size)",
    )
    g.add_argument("--q2-decoding", type=str, default=d.decoding, choices=list(choices()["decoding"]))
    g.add_argument(
        "--q2-max-question-length",
        type=flag_type("max_question_length", SPELL),
        default=None,
        help=f"longest question in tokens (default {d.max_question_length}; 16 with --q2-tiny)",
    )
    g.add_argument(
        "--q2-question-mode", type=str, default=d.question_mode, choices=list(choices()["question_mode"])
    )
    g.add_argument("--q2-variant", type=str, default="paper", choices=list(VARIANT_NAMES))
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
    g.add_argument(
        "--q2-coref",
        type="bool",
        default=False,
        help="resolve coreferences with the teacher's episode so far before scoring (the first "
        "arXiv version's App. A; needs fastcoref; docs/coref.md)",
    )
    g.add_argument("--q2-coref-model", type=str, default=d.coref_model, help="F-Coref model of --q2-coref")


def config_from_opt(opt: dict) -> Q2Config:
    """The engine configuration the `--q2-*` flags describe, checked by the engine's option checks
    (an opt that did not come through the parser, e.g. a saved one, is checked here)."""
    options = {
        name: opt.get(f"q2_{name}")
        for name in (
            "qg_model",
            "qa_model",
            "nli_model",
            "spacy_model",
            "device",
            "decoding",
            "question_mode",
            "max_question_length",
            "coref",
            "coref_model",
        )
    }
    batch_size = opt.get("q2_batch_size")
    try:
        return build_config(
            opt.get("q2_variant") or "paper",
            options,
            64 if batch_size is None else batch_size,
            spell=SPELL,
            tiny=opt.get("q2_tiny") or None,
        )
    except ValueError as err:
        raise Q2OptionValueError(str(err), getattr(err, "reason", "")) from None


_ENGINE_OPTION = re.compile(r"\b(qg|qa|nli|spacy|coref)_model\b(?: \(--[a-z-]+\))?")


def parlai_flags(message: str) -> str:
    """Name the ParlAI flags (`--q2-qg-model`) where an engine message names its own options
    (`qg_model (--qg-model)`), which ParlAI would reject."""
    return _ENGINE_OPTION.sub(lambda m: f"--q2-{m.group(1)}-model", message)


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
    from q2_metric.io.paths import check_run

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
        )
    }
    inputs = {flag: p for flag, p in inputs.items() if isinstance(p, str) and os.path.exists(p)}
    outputs = {"--report-filename": opt.get("report_filename"), "--world-logs": opt.get("world_logs")}
    outputs = {flag: p for flag, p in outputs.items() if isinstance(p, str) and p}
    try:
        check_run(inputs, {**outputs, "--q2-explain-file": path})
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
