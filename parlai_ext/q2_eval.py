"""The part shared by every Q² teacher: flags, early checks, a response buffer scored in batches,
metrics (report and per turn) and the explain file."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from q2_metric import ModelNotAvailable
from q2_metric.config import Q2Config
from q2_metric.frontends.options import Q2OptionError, build_config, flag_name, flag_type
from q2_metric.scorer import Q2Scorer, cached_scorer
from q2_metric.validation import is_blank

NO_PASSAGES = "no_passages_used"
# An intermediate report raises the missing-knowledge error only after this many turns without
# knowledge (a pass that ends sooner raises at its last report), so that a few leading
# no_passages_used turns never stop a healthy run.
EARLY_DATA_ERROR_TURNS = 100
# Message fields stamped by `number_turns` (the teacher's own episode and turn numbering).
EPISODE_FIELD, TURN_FIELD, EXAMPLE_ID_FIELD = "q2_episode_idx", "q2_turn_idx", "q2_example_id"

# Tests may replace this to script the engine; it receives the Q2Config built from the flags.
SCORER_FACTORY: Callable[[Q2Config], Q2Scorer] = cached_scorer

# Evaluation passes of this process (train_model runs several teachers, each several passes).
_PASS_NUMBERS = itertools.count()
# Explain files this process has already started (truncated or opened for appending): a second
# teacher of the same run (train_model's valid and test teachers) appends instead of truncating.
_STARTED_EXPLAIN_FILES: set[str] = set()


class _Sentence(SystemExit):
    """Ends a ParlAI command with its one-sentence message and exit status 1, no traceback (Python
    prints a SystemExit's message as it is), while staying catchable as its other base class."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = message


class Q2DataError(_Sentence, ValueError):
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
    (`q2_metric.frontends.options`), so that a bad one stops ParlAI's parser with one line."""
    from q2_metric.config import DEFAULT_NLI_MODEL, DEFAULT_QA_MODEL, DEFAULT_QG_MODEL

    d = Q2Config(qg_model=DEFAULT_QG_MODEL, qa_model=DEFAULT_QA_MODEL, nli_model=DEFAULT_NLI_MODEL)
    g = parser.add_argument_group("Q² metric (with --metrics q2)")
    g.add_argument("--q2-qg-model", type=str, default=None,
                   help=f"question generation model (default $Q2_QG_MODEL, else {d.qg_model})")
    g.add_argument("--q2-qa-model", type=str, default=None,
                   help=f"SQuAD 2.0 QA model (default $Q2_QA_MODEL, else {d.qa_model})")
    g.add_argument("--q2-nli-model", type=str, default=None,
                   help=f"NLI model (default $Q2_NLI_MODEL, else {d.nli_model})")
    g.add_argument("--q2-tiny", type="bool", default=None,
                   help="tiny random models instead of the paper's (no download; the scores mean "
                        "nothing; default: the Q2_TINY environment variable)")
    g.add_argument("--q2-spacy-model", type=str, default=None, help="spaCy pipeline")
    g.add_argument("--q2-device", type=flag_type("device", SPELL, str), default="auto",
                   help="auto (default), cpu, cuda or cuda:N")
    g.add_argument("--q2-batch-size", type=flag_type("batch_size", SPELL), default=64,
                   help="responses buffered per engine call (and the engine's batch size)")
    g.add_argument("--q2-decoding", type=str, default=d.decoding, choices=["beam", "greedy"])
    g.add_argument("--q2-max-question-length", type=flag_type("max_question_length", SPELL), default=None,
                   help=f"longest question in tokens (default {d.max_question_length}; 16 with --q2-tiny)")
    g.add_argument("--q2-question-mode", type=str, default=d.question_mode, choices=["single", "multi"])
    g.add_argument("--q2-variant", type=str, default="paper", choices=["paper", "dnli"])
    g.add_argument("--q2-explain-file", type=str, default=None,
                   help="one JSON line per evaluated turn (scored, empty or skipped); overwritten "
                        "at the start of a run")
    g.add_argument("--q2-explain-append", type="bool", default=False,
                   help="append to --q2-explain-file instead of overwriting it")
    g.add_argument("--q2-coref", type="bool", default=False,
                   help="resolve coreferences with the teacher's episode so far before scoring (the first "
                        "arXiv version's App. A; needs fastcoref; docs/coref.md)")
    g.add_argument("--q2-coref-model", type=str, default=d.coref_model, help="F-Coref model of --q2-coref")


def config_from_opt(opt: dict) -> Q2Config:
    """The engine configuration the `--q2-*` flags describe, checked by the engine's option checks
    (an opt that did not come through the parser, e.g. a saved one, is checked here)."""
    options = {name: opt.get(f"q2_{name}") for name in ("qg_model", "qa_model", "nli_model", "spacy_model",
                                                         "device", "decoding", "question_mode",
                                                         "max_question_length", "coref", "coref_model")}
    batch_size = opt.get("q2_batch_size")
    try:
        return build_config(opt.get("q2_variant") or "paper", options, 64 if batch_size is None else batch_size,
                            spell=SPELL, tiny=opt.get("q2_tiny") or None)
    except ValueError as err:
        raise Q2OptionValueError(str(err), getattr(err, "reason", "")) from None


_ENGINE_OPTION = re.compile(r"\b(qg|qa|nli|spacy|coref)_model\b(?: \(--[a-z-]+\))?")


def parlai_flags(message: str) -> str:
    """Name the ParlAI flags (`--q2-qg-model`) where an engine message names its own options
    (`qg_model (--qg-model)`), which ParlAI would reject."""
    return _ENGINE_OPTION.sub(lambda m: f"--q2-{m.group(1)}-model", message)


def check_models(config: Q2Config) -> None:
    """Fail before any generation if a Q² model or the spaCy pipeline cannot be loaded."""
    from q2_metric.tiny import tiny_hint

    scorer = SCORER_FACTORY(config)
    try:
        with tiny_hint("--q2-tiny true"):
            scorer.check_models()
        scorer.parser  # noqa: B018 - loads spaCy now (it is reused for scoring)
    except ModelNotAvailable as err:
        raise Q2ModelError(parlai_flags(str(err))) from None


def number_turns(examples: Iterable[tuple[dict, bool]]) -> Iterator[tuple[dict, bool]]:
    """Stamp each `setup_data` message with its episode and turn index (streamed or not, these
    are the positions in the data file, before any sharding across workers)."""
    episode, turn = -1, 0
    for message, new_episode in examples:
        if new_episode or episode < 0:
            episode, turn = episode + 1, 0
        _set(message, EPISODE_FIELD, episode)
        _set(message, TURN_FIELD, turn)
        turn += 1
        yield message, new_episode


def _set(message: dict, key: str, value: Any) -> None:
    if hasattr(message, "force_set"):  # a ParlAI Message refuses `[key] =` for a key it has
        message.force_set(key, value)
    else:
        message[key] = value


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


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
    """The output-path rule (`q2_metric.frontends.paths`) for --q2-explain-file, before any model
    work: it must not be, contain or lie inside an input (the annotations, the data file, the
    model file, a Q² model folder) nor be another output; its folder is created. A collision is one
    line on stderr and exit code 2 (ParlAI would print a traceback for an exception)."""
    import sys

    from q2_metric.frontends.paths import OutputPathError, check_outputs

    inputs = {f"--{name.replace('_', '-')}": opt.get(name) for name in
              ("q2_annotations", "datafile", "model_file", "init_model", "q2_qg_model", "q2_qa_model",
               "q2_nli_model", "q2_spacy_model")}
    inputs = {flag: p for flag, p in inputs.items() if isinstance(p, str) and os.path.exists(p)}
    outputs = {"--report-filename": opt.get("report_filename"), "--world-logs": opt.get("world_logs")}
    outputs = {flag: p for flag, p in outputs.items() if isinstance(p, str) and p}
    try:
        check_outputs(inputs, {**outputs, "--q2-explain-file": path})
    except OutputPathError as err:
        print(f"q2: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        print(f"q2: the folder '{folder}' of --q2-explain-file cannot be created ({err.strerror}).",
              file=sys.stderr)
        raise SystemExit(2) from None


@dataclass
class _Turn:
    """One evaluated turn waiting for its batch."""

    info: dict[str, Any]
    response: str
    knowledge: str | None  # None: skipped (no knowledge), never sent to the engine
    observation: Any  # the model's reply: per-turn metrics go there (ParlAI's world logs read it)
    history: list = field(default_factory=list)  # --q2-coref: the episode's turns before the response


@dataclass
class _Pass:
    """Counts over the current evaluation pass (reset with the teacher)."""

    number: int | None = None  # taken from _PASS_NUMBERS when the pass evaluates its first turn
    engine_calls: int = 0
    turns: int = 0
    with_knowledge: int = 0
    without_knowledge: int = 0
    with_text: int = 0
    limit_used: bool = False  # flushed on reaching the example limit (then only epochs count)
    active: list = field(default_factory=list)  # teachers that evaluated a turn in this pass


class Q2Buffer:
    """Responses waiting to be scored, shared by a teacher and its batch copies.

    The buffer goes to the engine when it holds `--q2-batch-size` responses to score, or when the
    pass is over (every acting copy's epoch is done, or --num-examples / --validation-max-exs is
    reached), never at an intermediate report.
    """

    def __init__(self, opt: dict) -> None:
        from parlai.core.metrics import Metrics

        # progress lines while scoring: per stage, and at ParlAI's log interval (none if it is <= 0)
        interval = float(opt.get("log_every_n_secs") or 10)
        self.log_interval = interval if interval > 0 else float("inf")
        self.config = config_from_opt(opt)
        self.size = self.config.qg_batch_size  # --q2-batch-size, checked
        self.explain_file = _explain_path(opt)
        if self.explain_file:
            check_explain_file(opt, self.explain_file)
        check_models(self.config)
        from q2_metric.tiny import meaningless_note, uses_tiny

        if uses_tiny(self.config):
            from parlai.utils import logging as parlai_logging

            parlai_logging.warning(f"Q² on tiny random models (--q2-tiny / Q2_TINY): {meaningless_note()}")
        self.training = _is_training(opt)
        self.limit = _example_limit(opt)
        self.always_q2 = opt.get("validation_metric") == "q2" and not self.training
        self.base_info = {"teacher": opt.get("task"), "datatype": opt.get("datatype"), "system": _system(opt)}
        if self.explain_file and self.explain_file not in _STARTED_EXPLAIN_FILES:
            _STARTED_EXPLAIN_FILES.add(self.explain_file)
            if not opt.get("q2_explain_append"):
                open(self.explain_file, "w", encoding="utf-8").close()
        self.metrics = Metrics()
        self.items: list[_Turn] = []
        self.to_score = 0
        self.current = _Pass()
        self.teachers: list = []
        self._annotations: list[tuple[Any, dict]] = []

    # -- the pass ---------------------------------------------------------------------------------
    def register(self, teacher) -> None:
        self.teachers.append(teacher)

    def pass_done(self, current=None) -> bool:
        """Whether the running pass is over once `current` (the teacher evaluating now) is done:
        no other teacher awaits its turn's evaluation in this parley, and every teacher that
        acted is out of data or the example limit is reached."""
        if any(t is not current and getattr(t, "lastY", None) is not None for t in self.teachers):
            return False
        if self.limit is not None and not self.current.limit_used and self.current.turns >= self.limit:
            return True
        active = self.current.active
        return bool(active) and all(t.epoch_done() for t in active)

    def new_pass(self) -> None:
        """Score what is left (so that the explain file is complete), then start counting anew."""
        self.flush()
        self.annotate()
        self.current = _Pass()

    # -- turns ------------------------------------------------------------------------------------
    def add(self, teacher, turn: _Turn | None) -> None:
        """Count an evaluated turn; buffer it if the model answered (`turn` is None otherwise)."""
        p = self.current
        if p.number is None:
            p.number = next(_PASS_NUMBERS)
        p.turns += 1
        if not any(t is teacher for t in p.active):
            p.active.append(teacher)
        if turn is not None:
            p.with_text += 1
            if turn.knowledge is None:
                p.without_knowledge += 1
            else:
                p.with_knowledge += 1
                self.to_score += 1
            self.items.append(turn)
        done = self.pass_done(teacher)
        if self.to_score >= self.size or done:
            self.flush()
        if done and self.limit is not None and p.turns >= self.limit:
            p.limit_used = True

    def pass_ended(self) -> bool:
        """`pass_done()`, or the example limit was reached earlier in this pass."""
        return self.current.limit_used or self.pass_done()

    def flush(self) -> None:
        """Score the buffered responses in one engine call; record metrics and explanations."""
        from parlai.core.metrics import AverageMetric, SumMetric

        if not self.items:
            return
        items, self.items, self.to_score = self.items, [], 0
        scorable = [t for t in items if t.knowledge is not None]
        result, batch = None, None
        if scorable:
            result = SCORER_FACTORY(self.config).score([t.response for t in scorable],
                                                       [t.knowledge for t in scorable],
                                                       **({"histories": [t.history for t in scorable]}
                                                          if self.config.coref else {}),
                                                       progress=self.progress(len(scorable)))
            batch = self.current.engine_calls
            self.current.engine_calls += 1
        scores = iter(result.responses if result is not None else [])
        lines = []
        for turn in items:
            res = next(scores) if turn.knowledge is not None else None
            if res is None:
                status, per_turn = "skipped", {"q2_skipped": SumMetric(1)}
            elif res.scored:
                status = "scored"
                per_turn = {"q2": AverageMetric(res.q2), "q2_no_nli": AverageMetric(res.q2_no_nli),
                            "q2_scored": SumMetric(1)}
            else:
                status, per_turn = "empty", {"q2_empty": SumMetric(1)}
            for key, value in per_turn.items():
                self.metrics.add(key, value)
            self._annotations.append((turn.observation, per_turn))
            if self.explain_file:
                lines.append(self._explain_line(turn, status, res, result, batch if res is not None else None))
        if lines:
            with open(self.explain_file, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")

    def progress(self, count: int):
        """A log line per engine stage, and at ParlAI's log interval within one (--log-every-n-secs),
        through ParlAI's own logging: scoring a batch takes minutes on a CPU."""
        from parlai.utils import logging as parlai_logging

        from q2_metric.progress import log_progress

        parlai_logging.info(f"Q²: scoring {count} responses")
        return log_progress(parlai_logging.info, interval=self.log_interval)

    def _explain_line(self, turn: _Turn, status: str, res, result, batch: int | None) -> str:
        details = res.to_dict() if res is not None else {
            "fallback": None, "fallback_label": None, "candidates": [], "questions": []}
        details.pop("index", None)  # the position inside an engine call: meaningless here
        line = {**turn.info, "pass": self.current.number, "batch": batch, "status": status,
                "reason": details.pop("reason", None) if res is not None else (
                    f"no knowledge: the checked sentence is {turn.info.get('raw_knowledge')!r}"),
                "response": turn.response, "knowledge": turn.knowledge,
                "q2": details.pop("q2", None), "q2_no_nli": details.pop("q2_no_nli", None), **details,
                "signature": str(result.signature) if res is not None else None}
        line.pop("raw_knowledge", None)
        return json.dumps(_json_safe(line), ensure_ascii=False)

    def annotate(self) -> None:
        """Put each scored turn's own figures into the model's reply (`metrics`), where ParlAI's
        world logs read them."""
        for observation, per_turn in self._annotations:
            metrics = observation.get("metrics")
            if isinstance(metrics, dict):
                metrics.update(per_turn)
            else:
                _set(observation, "metrics", dict(per_turn))
        self._annotations = []

    # -- the report -------------------------------------------------------------------------------
    def check_data(self, final: bool, source: str | None) -> None:
        """Raise `Q2DataError` when no evaluated turn had knowledge (or no response had text)."""
        p = self.current
        if p.with_knowledge == 0 and p.without_knowledge and (final or p.without_knowledge >= EARLY_DATA_ERROR_TURNS):
            raise Q2DataError(
                f"{source}: no Wizard turn has a checked_sentence (none of the {p.without_knowledge} "
                "evaluated turns had one other than no_passages_used), and Q² needs the knowledge "
                "sentence each response was grounded on")
        if final and not self.training and p.turns and p.with_text == 0:
            raise Q2DataError(
                f"the model gave no text for any of the {p.turns} evaluated turns, so Q² has nothing "
                "to score: let it generate (e.g. --skip-generation false)")

    def report(self) -> dict:
        from parlai.core.metrics import AverageMetric, SumMetric

        out = self.metrics.report()
        if not self.training:
            for key in ("q2_scored", "q2_empty", "q2_skipped"):
                out.setdefault(key, SumMetric(0))
        if self.always_q2:  # --validation-metric q2 needs a value; ParlAI's 0/0 reads 0.0
            out.setdefault("q2", AverageMetric(0, 0))
            out.setdefault("q2_no_nli", AverageMetric(0, 0))
        return out


class Q2EvalMixin:
    """Mix into a ParlAI teacher before its base class. The subclass says where the knowledge is
    (`q2_knowledge(teacher_action)`) and calls `_q2_setup` first thing in `__init__`."""

    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        add_q2_args(parser)
        return parser

    def _q2_setup(self, opt: dict, shared: dict | None) -> None:
        self.q2_on = q2_requested(opt)
        buffer = (shared or {}).get("q2_buffer")
        if buffer is None and self.q2_on:
            buffer = Q2Buffer(opt)
        self.q2_buffer: Q2Buffer | None = buffer
        if buffer is not None:
            buffer.register(self)

    def share(self):
        shared = super().share()
        shared["q2_buffer"] = self.q2_buffer
        return shared

    def q2_knowledge(self, teacher_action) -> str | None:
        raise NotImplementedError

    def custom_evaluation(self, teacher_action, labels, model_response) -> None:
        super().custom_evaluation(teacher_action, labels, model_response)
        if self.q2_buffer is None or model_response is None:
            return
        knowledge = self.q2_knowledge(teacher_action)
        has_knowledge = isinstance(knowledge, str) and not is_blank(knowledge) and knowledge != NO_PASSAGES
        turn = None
        # --q2-coref: the episode so far, as the model's history holds it (teacher texts and gold replies)
        episode = getattr(self, "_q2_episode", [])
        if teacher_action.get("text"):
            episode.append(str(teacher_action["text"]))
        if "text" in model_response:
            info = {**self.q2_buffer.base_info, "episode_idx": teacher_action.get(EPISODE_FIELD),
                    "turn_idx": teacher_action.get(TURN_FIELD), "example_id": teacher_action.get(EXAMPLE_ID_FIELD),
                    "raw_knowledge": knowledge}
            turn = _Turn(info, model_response["text"] or "", knowledge if has_knowledge else None, model_response,
                         history=list(episode) if self.q2_buffer.config.coref else [])
        labels = list(labels or [])
        if labels or model_response.get("text"):
            episode.append(str(labels[0] if labels else model_response["text"]))
        self._q2_episode = [] if teacher_action.get("episode_done") else episode
        self.q2_buffer.add(self, turn)

    def observe(self, observation):
        observation = super().observe(observation)
        if self.q2_buffer is not None:
            # after ParlAI has replaced the reply's metrics with this turn's teacher metrics
            self.q2_buffer.annotate()
        return observation

    def report(self):
        report = super().report()
        buffer = self.q2_buffer
        if buffer is None:
            return report
        if buffer.pass_done():
            buffer.flush()
            buffer.annotate()
        buffer.check_data(buffer.pass_ended(), getattr(self, "opt", {}).get("datafile"))
        report.update(buffer.report())
        return report

    def reset(self):
        if getattr(self, "q2_buffer", None) is not None:
            self.q2_buffer.new_pass()
        super().reset()

    def reset_metrics(self):
        super().reset_metrics()
        if getattr(self, "q2_buffer", None) is not None:
            self.q2_buffer.metrics.clear()
