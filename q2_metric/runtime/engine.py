"""The engine of one process and configuration (`Engine`): the scorer (one model load) with its
counters, scoring items the contract has already checked.

Every item is checked once, by the contract's one item check (`frontend.check_items`), wherever it
comes in: `Engine.score_items` checks the items it is given, then scores them; a caller that has
checked them already (the micro-batcher, `q2 serve`) hands the checked ones to `score_checked`,
which never checks them again. A bad item is reported with its own key, the others are scored; an
empty reply or knowledge is counted and unscored; each result carries its status and the full
signature (`frontend.score_checked`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from q2_metric import display, frontend
from q2_metric.frontend import CheckedItem, Item, ItemResult, Outcome
from q2_metric.runtime.policy import DEFAULT_MAX_BATCH, check_max_batch

Checked = CheckedItem | ItemResult  # an item after the one item check: good, or its `bad` result
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Scored:
    """One item's result (`frontend.ItemResult`), the signature of the engine call that made it and
    that call's seconds."""

    result: ItemResult
    signature: Any  # q2_metric.Signature
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return self.result.status

    @property
    def value(self) -> float:
        """Q² (NaN unless scored)."""
        return self.result.q2

    @property
    def response(self) -> Any:
        """The `ResponseScore` (None for a bad item)."""
        return self.result.score

    def reason(self) -> str:
        """Why the score is what it is, in one sentence (the `reason` column of `q2 score`), or the
        bad item's error."""
        return self.result.reason


def merge(outcomes: Sequence[Outcome]) -> Outcome:
    """The outcomes of several engine calls of one run as one (system figures over all items)."""
    if len(outcomes) == 1:
        return outcomes[0]
    items = [i for o in outcomes for i in o.items]
    return Outcome(
        items, frontend.system_figures([i.score for i in items if i.score is not None]), outcomes[0].signature
    )


class Engine:
    """A scorer with counters: `engine_calls` (calls of the Q² engine) and `replies` (items
    reported). One per process and configuration (`cache.engine`); engine calls one at a time."""

    def __init__(self, config: Any, max_batch: int = DEFAULT_MAX_BATCH, scorer: Any = None) -> None:
        from q2_metric.scorer import Q2Scorer

        self.config = config
        self.max_batch = check_max_batch(max_batch)
        self.scorer = scorer if scorer is not None else Q2Scorer(config)  # tests pass a scripted one
        self.engine_calls = 0
        self.replies = 0
        self._lock = threading.Lock()  # one engine call at a time (the models are not re-entrant)
        self._last: tuple[tuple, Outcome] | None = None
        self._checked = False

    def check(self, spell: Callable[[str], str] = frontend.python_name, tiny_hint: str | None = None) -> None:
        """The models checked before any work (`frontend.check_models`); the messages name the
        options as `spell` does. Once per engine: the files do not change within a run."""
        if self._checked:
            return
        with frontend.model_words(spell, tiny_hint):
            frontend.check_models(self.scorer, spell=spell)
        self._checked = True
        note = display.tiny_note_once(self.config)  # on the tiny random models: the scores mean nothing
        if note:
            logging.getLogger("q2_metric").warning(note)

    def score_checked(
        self,
        checked: Sequence[Checked],
        max_batch: int | None = None,
        progress: Progress | None = None,
        *,
        emit: bool = True,
    ) -> Outcome:
        """Items already checked (`frontend.check_items`), scored or reported in input order, in
        engine calls of at most `max_batch` items (default: the engine's); never checked again.
        Each response's OpenTelemetry event is emitted by the contract (`frontend.score_checked`;
        `emit=False`: none, e.g. for a warm-up item no caller asked for)."""
        step = max_batch or self.max_batch
        checked = list(checked)
        outcomes = []
        for start in range(0, max(len(checked), 1), step):
            with self._lock:
                outcome = frontend.score_checked(
                    self.scorer, checked[start : start + step], progress=progress, emit=emit
                )
                self.engine_calls += 1
                self.replies += len(outcome.items)
            outcomes.append(outcome)
        return merge(outcomes)

    def score_items(
        self,
        items: Sequence[Item],
        max_batch: int | None = None,
        progress: Progress | None = None,
        *,
        emit: bool = True,
    ) -> Outcome:
        """Every item checked once (`frontend.check_items`), then scored or reported
        (`score_checked`; `emit=False`: no OpenTelemetry event)."""
        return self.score_checked(frontend.check_items(items, self.config), max_batch, progress, emit=emit)

    def collect(
        self, items: Sequence[Item], max_batch: int | None = None, progress: Progress | None = None
    ) -> Outcome:
        """A run's items scored once (engine calls of at most `max_batch`): the same items asked
        again give the remembered outcome."""
        key = tuple((i.key, repr(i.response), repr(i.knowledge)) for i in items)
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
        outcome = self.score_items(items, max_batch, progress)
        with self._lock:
            self._last = (key, outcome)
        return outcome
