"""The response buffer scored in batches, its metrics (report and per turn) and the explain file."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from parlai_ext.options import (
    BUFFER_SIZE,
    SPELL,
    Q2DataError,
    Q2ModelError,
    _example_limit,
    _explain_path,
    _is_training,
    _system,
    check_explain_file,
    config_from_opt,
    decision_from_opt,
)
from q2_metric import ModelNotAvailable, display
from q2_metric.config import Q2Config
from q2_metric.frontend import Item, ItemResult, Outcome, Status, score_items
from q2_metric.progress import ProgressCallback, plural
from q2_metric.results import ResponseScore
from q2_metric.scorer import Q2Scorer, cached_scorer

# An intermediate report raises the missing-knowledge error only after this many turns without
# knowledge (a pass that ends sooner raises at its last report), so that a few leading
# no_passages_used turns never stop a healthy run.
EARLY_DATA_ERROR_TURNS = 100

# Tests may replace this to script the engine; it receives the Q2Config built from the flags.
SCORER_FACTORY: Callable[[Q2Config], Q2Scorer] = cached_scorer

# Evaluation passes of this process (train_model runs several teachers, each several passes).
_PASS_NUMBERS = itertools.count()
# Explain files this process has already started (truncated or opened for appending): a second
# teacher of the same run (train_model's valid and test teachers) appends instead of truncating.
_STARTED_EXPLAIN_FILES: set[str] = set()
# Whether this process has said that its models are tiny: once, not once per teacher (train_model
# builds four: the dictionary pass, train, valid and test).
_TINY_WARNED: list[bool] = []


def check_models(config: Q2Config) -> None:
    """Fail before any generation if a Q² model or the spaCy pipeline cannot be loaded."""
    from q2_metric.frontend import check_models as check
    from q2_metric.frontend import model_words

    scorer = SCORER_FACTORY(config)
    try:
        with model_words(SPELL):  # every message names the --q2-* flags
            with model_words(SPELL, tiny_hint="--q2-tiny true"):
                check(scorer, spell=SPELL)
            scorer.parser  # noqa: B018 - loads spaCy now (it is reused for scoring)
    except ModelNotAvailable as err:
        raise Q2ModelError(str(err)) from None


def _turn_key(turn: _Turn) -> str:
    """A turn as the explain file names it: its episode and turn index."""
    return f"episode {turn.info.get('episode_idx')} turn {turn.info.get('turn_idx')}"


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


def _turn_status(item: ItemResult | None) -> tuple[Status, dict[str, Any]]:
    """A turn's status, the contract's (`frontend.ItemResult.status`: scored, empty or bad; a turn
    without knowledge, never sent, is empty), and its per-turn metrics: `q2` and `q2_no_nli` for a
    score, else the count it falls in (`q2_skipped`: no knowledge; `q2_empty`: scored to no number,
    an empty response or no valid question with the fallback off; `q2_bad`: its knowledge is no text)."""
    from parlai.core.metrics import AverageMetric, SumMetric

    if item is None:
        return "empty", {"q2_skipped": SumMetric(1)}
    if item.status == "bad":
        return "bad", {"q2_bad": SumMetric(1)}
    res = item.score
    if item.status == "scored" and res is not None and res.scored:
        return "scored", {
            "q2": AverageMetric(res.q2),
            "q2_no_nli": AverageMetric(res.q2_no_nli),
            "q2_scored": SumMetric(1),
        }
    return item.status, {"q2_empty": SumMetric(1)}


@dataclass
class _Turn:
    """One evaluated turn waiting for its batch."""

    info: dict[str, Any]
    response: str
    # None: no knowledge (never sent to the engine); else the knowledge as the contract takes it:
    # a text (passages already joined), or a value that is no text, which the contract reports as bad
    knowledge: object
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
        self.decision = decision_from_opt(opt)  # --q2-operating-point, read before any model work
        # --q2-batch-size (checked) set the engine's batch sizes, so this is never None
        self.size = self.config.qg_batch_size or BUFFER_SIZE
        self.explain_file = _explain_path(opt)
        if self.explain_file:
            check_explain_file(opt, self.explain_file)
        check_models(self.config)
        from q2_metric.display import tiny_note

        note = tiny_note(self.config)
        if note and not _TINY_WARNED:
            from parlai.utils import logging as parlai_logging

            _TINY_WARNED.append(True)
            parlai_logging.warning(f"Q² on tiny random models (--q2-tiny / Q2_TINY): {note}")
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
    def register(self, teacher: Any) -> None:  # a ParlAI teacher with Q2EvalMixin
        self.teachers.append(teacher)

    def pass_done(self, current: Any = None) -> bool:
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
    def add(self, teacher: Any, turn: _Turn | None) -> None:
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
        if not self.items:
            return
        items, self.items, self.to_score = self.items, [], 0
        scorable = [t for t in items if t.knowledge is not None]
        outcome, batch = None, None
        if scorable:
            outcome = score_items(
                SCORER_FACTORY(self.config),
                [
                    Item(
                        _turn_key(t),
                        t.response,
                        t.knowledge,
                        history=t.history if self.config.coref else None,
                        # an operating point's threshold labels the turn's OpenTelemetry event
                        threshold=self.decision.threshold if self.decision.operating_point else None,
                    )
                    for t in scorable
                ],
                progress=self.progress(len(scorable)),
            )
            batch = self.current.engine_calls
            self.current.engine_calls += 1
        results = iter(outcome.items if outcome is not None else [])
        lines = []
        for turn in items:
            item = next(results) if turn.knowledge is not None else None
            status, per_turn = _turn_status(item)
            if item is not None and item.status == "bad":
                from parlai.utils import logging as parlai_logging

                parlai_logging.warning(f"Q²: {item.error}")  # the turn and the field; the rest scored
            for key, value in per_turn.items():
                self.metrics.add(key, value)
            self._annotations.append((turn.observation, per_turn))
            if self.explain_file:
                lines.append(
                    self._explain_line(turn, status, item, outcome, batch if item and item.score else None)
                )
        if lines and self.explain_file:
            with open(self.explain_file, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")

    def progress(self, count: int) -> ProgressCallback:
        """A log line per engine stage, and at ParlAI's log interval within one (--log-every-n-secs),
        through ParlAI's own logging: scoring a batch takes minutes on a CPU."""
        from parlai.utils import logging as parlai_logging

        from q2_metric.progress import log_progress

        parlai_logging.info(f"Q²: scoring {plural(count, 'response')}")
        return log_progress(parlai_logging.info, interval=self.log_interval)

    def _explain_line(
        self, turn: _Turn, status: Status, item: ItemResult | None, outcome: Outcome | None, batch: int | None
    ) -> str:
        res: ResponseScore | None = item.score if item is not None else None
        error = item.error if item is not None else None
        details = (
            res.to_dict()
            if res is not None
            else {
                "fallback": None,
                "fallback_label": None,
                "candidates": [],
                "questions": [],
                "spans": [],
                "unsupported_spans": [],
            }
        )
        details.pop("index", None)  # the position inside an engine call: meaningless here
        line = {
            **turn.info,
            "pass": self.current.number,
            "batch": batch,
            "status": status,
            "reason": details.pop("reason", None)
            if res is not None
            else (error or f"no knowledge: the checked sentence is {turn.info.get('raw_knowledge')!r}"),
            "response": turn.response,
            "knowledge": turn.knowledge,
            "q2": details.pop("q2", None),
            "q2_no_nli": details.pop("q2_no_nli", None),
            **details,
            "signature": str(self.decision.sign(outcome.signature))
            if res is not None and outcome is not None
            else None,
        }
        if self.decision.operating_point is not None:  # the turn's decision at its threshold
            line["decision"] = display.decide(res.q2, self.decision.threshold) if res is not None else None
        line.pop("raw_knowledge", None)
        return json.dumps(_json_safe(line), ensure_ascii=False, default=repr)  # (knowledge that is no text)

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
    def check_data(
        self, final: bool, source: str | None, missing: str = "no Wizard turn has a checked_sentence"
    ) -> None:
        """Raise `Q2DataError` when no evaluated turn had knowledge (or no response had text)."""
        p = self.current
        if (
            p.with_knowledge == 0
            and p.without_knowledge
            and (final or p.without_knowledge >= EARLY_DATA_ERROR_TURNS)
        ):
            raise Q2DataError(
                f"{source or 'the task'}: {missing} (none of the {p.without_knowledge} "
                "evaluated turns had one other than no_passages_used), and Q² needs the knowledge "
                "sentence each response was grounded on"
            )
        if final and not self.training and p.turns and p.with_text == 0:
            raise Q2DataError(
                f"the model gave no text for any of the {p.turns} evaluated turns, so Q² has nothing "
                "to score: let it generate (e.g. --skip-generation false)"
            )

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
