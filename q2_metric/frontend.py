"""The front-end contract: the few steps every front-end takes, each delegated to its one home.

user values -> a checked `Q2Config` (`configure`: `options.build_config`); declared reads and
writes -> the one path guard (`guard`: `io.paths.check_run`); the models checked before any work,
their messages in the front-end's own words (`check_models`: `Q2Scorer.check_models`); items
validated one by one (`validate_items`: `validation`), the good ones scored in ONE engine call and
every item reported in input order with its own identity (`score_items` -> `Outcome`: per-item
status, the counts scored/empty/bad, the system figures and the full signature).

A front-end is an adapter over these steps: it turns its inputs into `Item`s (whose `key` is the
item's identity in its words: "row 3", "sample 'abc'", "doc 7") and an `Outcome` into its output.

What a front-end shows of one item is its `Record` (`record_of`, `Outcome.records`): the status,
Q², the verdict (one of `VERDICTS`, from `verdict_of`: fail closed), the one reason sentence,
the spans (`SpanRecord`, each with its one reason phrase), the error and the full signature.
Every front-end builds its framework's output from it (`Record.to_dict(prefix="q2_")` for a
framework's free-form metadata, or field by field), so the same pair gets the same verdict words
and the same reason sentences everywhere, in process and through the service.

>>> from q2_metric.testing.scripted import scripted_scorer
>>> out = score_items(scripted_scorer(), [Item("row 1", "Bob Ross hosted the show.", "Bob Ross hosted the show."),
...                                       Item("row 2", "", "Bob Ross"), Item("row 3", 7, "Bob Ross")])
>>> out.counts
{'scored': 1, 'empty': 1, 'bad': 1}
>>> out.items[2].error
"row 3: field 'response' must be a string, got int."
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from q2_metric import display
from q2_metric.config import Q2Config
from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.languages.identify import language_problem
from q2_metric.options import Spelling, build_config, check_option, check_option_names, python_name
from q2_metric.options.operating_point import OperatingPoint, read_operating_point
from q2_metric.progress import ProgressCallback, StageProfile
from q2_metric.results import Q2Result, ResponseScore
from q2_metric.scorer import Q2Scorer
from q2_metric.signature import Signature
from q2_metric.steps.system_score import SystemScore
from q2_metric.telemetry.events import caller_context, emit_each
from q2_metric.validation import clean_text, empty_reason, item_error, knowledge_text

Status = Literal["scored", "empty", "bad"]
STATUSES: tuple[Status, ...] = ("scored", "empty", "bad")
# The verdict words of every front-end: consistent iff Q² > threshold (`display.decide`),
# inconsistent otherwise; unverified when Q² could not check the response (fail closed).
VERDICTS: tuple[str, str, str] = (display.CONSISTENT, display.INCONSISTENT, display.UNVERIFIED)


@dataclass(frozen=True)
class Item:
    """One thing a front-end asks to score; `key` is its identity in the front-end's words, used in
    every message about it."""

    key: str
    response: object
    knowledge: object
    history: object = None  # the dialogue turns before the response (read with coref=True only)
    # the threshold its front-end decides at (`Decision.item`): the label of its OpenTelemetry event
    threshold: float | None = None
    # the caller's OpenTelemetry context, taken when the item is made (its event's parent)
    parent: Any = field(default_factory=caller_context, compare=False, repr=False)


@dataclass
class CheckedItem:
    """An `Item` that passed the checks: the texts the models read (`validation.clean_text`)."""

    key: str
    response: str
    knowledge: str
    history: list[str] | None = None
    threshold: float | None = None  # `Item.threshold`
    parent: Any = field(default=None, compare=False, repr=False)  # `Item.parent`
    # [start, end) of `response` whose candidates alone are scored (None: all; `results.Pair.focus`)
    focus: tuple[int, int] | None = None


@dataclass
class ItemResult:
    """What became of one `Item`: `scored`, `empty` (no visible text in the response or the
    knowledge: unscored, its `score` NaN with the reason) or `bad` (its `error` names the key and the
    field; no score)."""

    key: str
    status: Status
    score: ResponseScore | None
    error: str | None = None

    @property
    def reason(self) -> str:
        """The one explanation sentence of the score (`display.reason_line`), or the error."""
        if self.score is None:
            return self.error or ""
        from q2_metric.display import reason_line

        return reason_line(self.score)

    @property
    def q2(self) -> float:
        """The item's Q² (NaN unless scored)."""
        return self.score.q2 if self.score is not None else float("nan")


@dataclass
class Outcome:
    """What every front-end's result carries: one `ItemResult` per item in input order, the system
    figures over the scored items and the FULL signature (`str(signature)`; `.short()` for tables)."""

    items: list[ItemResult]
    system: SystemScore
    signature: Signature
    # wall time, model tokens and FLOPs per stage of the engine call (`q2_metric.progress`)
    profile: list[StageProfile] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """{"scored": n, "empty": n, "bad": n}."""
        out: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for item in self.items:
            out[item.status] += 1
        return out

    @property
    def scores(self) -> list[float]:
        return [item.q2 for item in self.items]

    def first_error(self) -> str | None:
        """The sentence of the first bad item, or None."""
        return next((item.error for item in self.items if item.status == "bad"), None)

    def as_result(self) -> Q2Result:
        """The engine's result of these items (for a front-end whose output is a `Q2Result`'s:
        `to_dict`, the agreement's comparison). A bad item has no score: `Q2InputError` with its
        sentence (a front-end that refuses a whole call on one bad item checks them first)."""
        error = self.first_error()
        if error is not None:
            raise Q2InputError(error)
        responses = [item.score for item in self.items if item.score is not None]
        return Q2Result(self.system, responses, self.signature, self.profile)

    def records(self, threshold: float = 0.5) -> list[Record]:
        """One `Record` per item, in input order, its verdict at `threshold`."""
        return [record_of(item, self.signature, threshold) for item in self.items]


# -- the one result record ---------------------------------------------------------------------------


def verdict_of(status: str, score: float | None, threshold: float) -> str:
    """The verdict of one item: `display.decide` of its score for a scored item, else `unverified`
    (fail closed: an item Q² could not check is never consistent).

    >>> verdict_of("scored", 0.75, 0.5), verdict_of("scored", 0.5, 0.5), verdict_of("empty", None, 0.5)
    ('consistent', 'inconsistent', 'unverified')
    """
    decided = display.decide(score, threshold) if status == "scored" else None
    return decided or display.UNVERIFIED


def _number(value: float | None) -> float | None:
    """A JSON-able figure: None for NaN or no value."""
    return None if value is None or math.isnan(value) else float(value)


@dataclass(frozen=True)
class SpanRecord:
    """One span of a response as every front-end shows it (`results.Span`: the engine's, already
    trimmed of the whitespace around it and in the response's order, `steps.spans`).

    `start`/`end`: character offsets in the response as given, `response[start:end] == text` (None
    only from a parser without offsets); `candidate`: the text that was scored (differs from `text`
    with coreference); `supported`: None when it had no valid question; `score`: its span score
    (None when unchecked); `reason`: its one phrase (`display.span_reason`); `question` and
    `answers` (from the response, from the knowledge; "" from the knowledge: no answer)."""

    start: int | None
    end: int | None
    text: str
    candidate: str
    supported: bool | None
    score: float | None
    reason: str
    question: str | None = None
    answers: tuple[str | None, str | None] = (None, None)

    @classmethod
    def of(cls, span: Any) -> SpanRecord:
        """The record of an engine span (`results.Span`)."""
        return cls(
            span.start,
            span.end,
            span.text,
            span.candidate,
            span.supported,
            _number(span.score),
            display.span_reason(span),
            span.question,
            (span.response_answer, span.knowledge_answer),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able: start, end, text, candidate, supported, score, reason, question, answers
        (a list of two)."""
        return {
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "candidate": self.candidate,
            "supported": self.supported,
            "score": self.score,
            "reason": self.reason,
            "question": self.question,
            "answers": list(self.answers),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpanRecord:
        """The record `to_dict` wrote (a service's reply); a missing field is None (`reason` "")."""
        answers = data.get("answers") or (None, None)
        return cls(
            data.get("start"),
            data.get("end"),
            str(data.get("text") or ""),
            str(data.get("candidate") or data.get("text") or ""),
            data.get("supported"),
            data.get("score"),
            str(data.get("reason") or ""),
            data.get("question"),
            (answers[0], answers[1]),
        )


RECORD_FIELDS = ("status", "score", "q2_no_nli", "verdict", "reason", "spans", "error", "signature")


@dataclass(frozen=True)
class Record:
    """What every front-end shows of one item: `key` (its identity in the front-end's words),
    `status` (scored, empty or bad), `score` (Q²; None unless scored), `q2_no_nli`, `verdict` (one of
    `VERDICTS`: `verdict_of`), `reason` (one sentence: `display.reason_line`, or the error
    sentence), `spans` (`SpanRecord`s, in the response's order), `error` (a bad item's sentence)
    and `signature` (the FULL signature of the scores)."""

    key: str
    status: str
    score: float | None
    q2_no_nli: float | None
    verdict: str
    reason: str
    spans: tuple[SpanRecord, ...] = ()
    error: str | None = None
    signature: str = ""

    @property
    def consistent(self) -> bool:
        """Whether the verdict is exactly `consistent` (anything else does not pass a guard)."""
        return self.verdict == display.CONSISTENT and self.status == "scored"

    def to_dict(self, prefix: str = "", spans: bool = True) -> dict[str, Any]:
        """Plain JSON-able, keys `RECORD_FIELDS` each with `prefix` before it (`prefix="q2_"` in a
        framework's free-form metadata: `q2_status`, `q2_score`, `q2_verdict`, `q2_reason`,
        `q2_spans`, ...; `q2_q2_no_nli` is written `q2_no_nli`); `spans=False`: an empty list."""
        values = {
            "status": self.status,
            "score": self.score,
            "q2_no_nli": self.q2_no_nli,
            "verdict": self.verdict,
            "reason": self.reason,
            "spans": [s.to_dict() for s in self.spans] if spans else [],
            "error": self.error,
            "signature": self.signature,
        }
        return {_prefixed(prefix, k): v for k, v in values.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], key: str = "", prefix: str = "") -> Record:
        """The record `to_dict(prefix)` wrote (a service's reply: `signature` may be absent). A
        verdict that is none of `VERDICTS`, or a reply off this shape, is a `Q2InputError`."""
        got = {k: data.get(_prefixed(prefix, k)) for k in RECORD_FIELDS}
        if got["verdict"] not in VERDICTS or got["status"] not in STATUSES:
            raise Q2InputError(f"{key or 'the item'}: no status and verdict among {', '.join(VERDICTS)}.")
        try:
            spans = tuple(SpanRecord.from_dict(s) for s in got["spans"] or ())
        except (TypeError, AttributeError, IndexError, KeyError):
            raise Q2InputError(f"{key or 'the item'}: its spans are not a list of span objects.") from None
        return cls(
            key,
            str(got["status"]),
            got["score"],
            got["q2_no_nli"],
            str(got["verdict"]),
            str(got["reason"] or got["error"] or ""),
            spans,
            got["error"],
            str(got["signature"] or ""),
        )


def _prefixed(prefix: str, name: str) -> str:
    return name if prefix and name.startswith(prefix) else prefix + name


def unchecked(key: str, sentence: str, signature: Any = "") -> Record:
    """The record of an item Q² could not check (a bad request, no answer from the service): bad,
    `unverified`, its one sentence as reason and error."""
    return record_of(ItemResult(key, "bad", None, sentence), signature)


# -- the decision: a threshold, or an operating point's ------------------------------------------------

DEFAULT_THRESHOLD = 0.5  # every front-end's threshold without one given


@dataclass(frozen=True)
class Decision:
    """What a front-end decides at: `threshold` (consistent iff Q² > it) and the operating point
    it came from (`options.operating_point`; None: a bare threshold). Its one home: every
    front-end that takes an operating point (`operating_point=` / `--operating-point`) reads it
    with `decision`, makes its records with `record` and signs with `sign`."""

    threshold: float = DEFAULT_THRESHOLD
    operating_point: OperatingPoint | None = None

    def sign(self, signature: Any) -> Signature:
        """The signature of these decisions: with an operating point, its `thr` and `op` fields
        (`Signature.with_operating_point`); a bare threshold leaves it as it is."""
        sig = signature if isinstance(signature, Signature) else Signature.parse(str(signature))
        return sig.with_operating_point(self.operating_point)

    def item(self, key: str, response: object, knowledge: object, history: object = None) -> Item:
        """The `Item` of one thing to score, decided at this threshold (its event's label)."""
        return Item(key, response, knowledge, history, self.threshold)

    def record(self, result: ItemResult, signature: Any) -> Record:
        """The `Record` of one item's result: its verdict at this threshold, the signature signed."""
        return record_of(result, self.sign(signature) if signature else "", self.threshold)

    def summary(self) -> dict[str, Any] | None:
        """What a result says of the operating point (`OperatingPoint.summary`), or None."""
        return None if self.operating_point is None else self.operating_point.summary()


def decision(
    operating_point: Any = None, threshold: Any = None, *, spell: Spelling = python_name
) -> Decision:
    """The `Decision` of a front-end's values, checked before any model work: `operating_point`
    (a file `q2 calibrate` wrote, or one read) and `threshold` (a number in [0, 1]; default 0.5).
    Both given must agree.

    Raises:
        OperatingPointError: the file cannot be used (one sentence naming it and the field).
        Q2OptionError: a bad threshold, or one that is not the operating point's.
    """
    op = operating_point
    if op is not None and not isinstance(op, OperatingPoint):
        if not isinstance(op, (str, os.PathLike)):
            raise Q2OptionError(
                f"Invalid Q² option {spell('operating_point')}={op!r}: use the path of an "
                "operating-point file (q2 calibrate writes one)."
            )
        op = read_operating_point(op)
    if threshold is not None:
        try:
            threshold = display.check_threshold(threshold)
        except Q2OptionError as err:
            raise Q2OptionError(f"Invalid Q² option {spell('threshold')}={threshold!r}: {err}.") from None
        if op is not None and threshold != op.threshold:
            raise Q2OptionError(
                f"The Q² options {spell('threshold')}={threshold:g} and {spell('operating_point')} "
                f"(threshold {op.threshold:g}) disagree: give one of them."
            )
    if op is not None:
        return Decision(op.threshold, op)
    return Decision(DEFAULT_THRESHOLD if threshold is None else float(threshold))


def decision_of(options: Mapping[str, Any] | None, spell: Spelling = python_name) -> Decision:
    """The `Decision` of an adapter's merged options (`options.merge_options`): their
    `operating_point` and `threshold`, where given (`decision`)."""
    options = options or {}
    return decision(options.get("operating_point"), options.get("threshold"), spell=spell)


def record_of(result: ItemResult, signature: Any, threshold: float = 0.5) -> Record:
    """The `Record` of one item's result, its verdict at `threshold` (`verdict_of`)."""
    res = result.score
    score = _number(res.q2) if res is not None and result.status == "scored" else None
    return Record(
        key=result.key,
        status=result.status,
        score=score,
        q2_no_nli=_number(res.q2_no_nli) if res is not None and score is not None else None,
        verdict=verdict_of(result.status, score, threshold),
        reason=result.reason,
        spans=tuple(SpanRecord.of(s) for s in res.spans) if res is not None else (),
        error=result.error,
        signature=str(signature),
    )


def configure(
    options: Mapping[str, Any] | None = None,
    *,
    variant: str = "paper",
    tiny: bool | None = None,
    batch_size: int | None = None,
    spell: Spelling = python_name,
    say: Callable[[str], None] = lambda msg: None,
    reads: Mapping[str, Any] | None = None,
) -> Q2Config:
    """A checked `Q2Config` with its models provided (`options.build_config`): every value checked,
    one `Q2OptionError` sentence naming the option as `spell` spells it; an unknown name is a
    `Q2UnknownOption` (a `Q2OptionError` that is also a `TypeError`). `reads`: what the run reads
    (the tiny models are never built inside it). The one door of a front-end to the options
    (`tests/contract/test_reach.py`)."""
    return build_config(variant, options, batch_size=batch_size, spell=spell, tiny=tiny, say=say, reads=reads)


def check_options(options: Mapping[str, Any], spell: Spelling = python_name) -> dict[str, Any]:
    """Each option checked as `configure` checks it (names, then values; None values dropped);
    returns them in the form `Q2Config` takes. For a configuration given whole plus single options
    (`Q2Scorer(config, **options)`)."""
    given = {k: v for k, v in options.items() if v is not None}
    check_option_names(given, spell=spell)
    return {name: check_option(name, value, spell) for name, value in given.items()}


def guard(
    reads: Mapping[str, str | os.PathLike | None],
    writes: Mapping[str, str | os.PathLike | None],
    config: Q2Config | None = None,
    **check_run_kwargs: Any,
) -> None:
    """The one path guard (`io.paths.check_run`, which adds the model folders, the tiny folder and
    the Hugging Face cache to `reads`): an output that is, holds or lies inside something read is
    refused in one sentence. The one door of a front-end to the guard (`tests/contract/test_reach.py`)."""
    from q2_metric.io.paths import check_run

    check_run(reads, writes, config=config, **check_run_kwargs)


def check_models(scorer: Q2Scorer, *, spell: Spelling = python_name) -> dict[str, str]:
    """`Q2Scorer.check_models` before any work; a missing or broken model is one sentence whose
    "how to provide it" names the model options as `spell` spells them."""
    from q2_metric.models.checks import spelling

    with spelling(spell):
        return scorer.check_models()


@contextlib.contextmanager
def model_words(
    spell: Spelling = python_name, tiny_hint: str | None = None, *, tiny_offer: str | None = None
) -> Iterator[None]:
    """Within the block, model messages name the options as `spell` does; with `tiny_hint` (the
    front-end's switch, e.g. "`--tiny`"), a missing model's message also points to the tiny models;
    `tiny_offer` instead gives that pointer whole, in the front-end's words (the Space's variable)."""
    from q2_metric.models.checks import spelling
    from q2_metric.models.tiny import tiny_hint as hint

    offers = tiny_hint or tiny_offer
    with spelling(spell), hint(tiny_hint, spell, offer=tiny_offer) if offers else contextlib.nullcontext():
        yield


def _checked(item: Item, language: str = "en") -> CheckedItem | ItemResult:
    """The item's texts as the models read them, or its `bad` result, or (a field in a language the
    `language` model set does not cover: `languages.identify`) its unscored result, unverified, with
    the one sentence naming the item, the field and the language (the one item check,
    `validation.item_error`, then the language gate, before any model work)."""
    knowledge = knowledge_text(item.knowledge)  # passages joined
    error = item_error(item.key, {"response": item.response, "knowledge": knowledge}, item.history)
    if error is not None:
        return ItemResult(item.key, "bad", None, error)
    turns = cast("list[str] | None", item.history)  # checked: a list of strings, or None
    checked = CheckedItem(
        item.key,
        clean_text(str.__str__(cast(str, item.response))),
        clean_text(str.__str__(cast(str, knowledge))),
        None if turns is None else [clean_text(str.__str__(t)) for t in turns],
        item.threshold,
        item.parent,
    )
    return language_checked(checked, language)


def with_response(
    checked: CheckedItem, key: str, response: str, focus: tuple[int, int] | None = None
) -> CheckedItem:
    """An item of the same knowledge, already checked once (`check_items`), with another response
    (a string: its caller checked the type) as the models read it (`validation.clean_text`) and
    a `focus`: the streaming check's sentences, the knowledge checked once per stream."""
    return dataclasses.replace(
        checked, key=key, response=clean_text(str.__str__(response)), history=None, focus=focus
    )


def language_checked(item: CheckedItem, language: str = "en") -> CheckedItem | ItemResult:
    """The language gate of the one item check (`languages.identify`): the item as it is, or, when
    a field is in a language the `language` model set does not cover, its unverified result (an
    empty item is left as it is: it is unscored for that). For a front-end that checked the types
    itself (the `evaluate` module), the same gate."""
    if empty_reason(item.response, item.knowledge) is not None:
        return item
    problem = language_problem(item.key, {"response": item.response, "knowledge": item.knowledge}, language)
    return item if problem is None else unverified_result(item.key, problem)


def unverified_result(key: str, sentence: str, index: int = 0) -> ItemResult:
    """The result of an item Q² cannot check in its model set's language: unscored (counted with the
    empty ones: NaN, left out of the mean), its reason the one sentence, its verdict `unverified`."""
    reason = sentence.removesuffix(".")
    score = ResponseScore(
        index=index, q2=math.nan, q2_no_nli=math.nan, reason=f"{display.NOT_SCORED}{reason}."
    )
    return ItemResult(key, "empty", score)


def _language(config: Q2Config | None) -> str:
    return str(getattr(config, "language", "en") or "en")


def validate_items(
    items: Iterable[Item], config: Q2Config | None = None
) -> tuple[list[CheckedItem], list[ItemResult]]:
    """Item by item: (good, bad or unverified). A good item's texts are those the models read
    (`validation.clean_text`); a bad item's error is one sentence naming its key and the field; an
    item in a language `config`'s model set does not cover is unverified with its sentence. Never
    raises for one item."""
    checked = check_items(items, config)
    return (
        [c for c in checked if isinstance(c, CheckedItem)],
        [c for c in checked if isinstance(c, ItemResult)],
    )


def check_items(items: Iterable[Item], config: Q2Config | None = None) -> list[CheckedItem | ItemResult]:
    """Item by item, in input order: the checked item (`CheckedItem`), or its `bad` result, or its
    unverified one (a language `config`'s model set does not cover; default: English). The one
    item check, done once per item on every path: what it returns goes to `score_checked`."""
    language = _language(config)
    return [_checked(item, language) for item in items]


def score_items(
    scorer: Q2Scorer, items: Sequence[Item], *, progress: ProgressCallback | None = None, emit: bool = True
) -> Outcome:
    """Validate the items, score the good ones in ONE engine call (`Q2Scorer.score`), and report
    every item in input order: `scored`, `empty` (counted, unscored) or `bad` (its own sentence).
    An item's history goes to the engine with `coref=True` only (the one option that reads it)."""
    return score_checked(scorer, check_items(items, scorer.config), progress=progress, emit=emit)


def score_checked(
    scorer: Q2Scorer,
    checked: Sequence[CheckedItem | ItemResult],
    *,
    progress: ProgressCallback | None = None,
    emit: bool = True,
) -> Outcome:
    """`score_items` of items already checked (`validate_items`' good ones, or a front-end's that
    checked its inputs with `validation` before anything was written: the `evaluate` module),
    bad ones given as their results: the good ones are scored in ONE engine call and never checked
    again (one check per item on every path).

    With OpenTelemetry configured, each response scored (or unscored: `unverified`) emits one
    `gen_ai.evaluation.result` event, labelled at its item's threshold and parented to the span of
    the caller that made the item (`telemetry.events.emit_each`): the one emission of every
    front-end that scores through the contract. `emit=False`: a caller that emits the events itself
    (`q2 score`, whose cached rows are never scored again)."""
    good = [c for c in checked if isinstance(c, CheckedItem)]
    histories: list[list[str]] | None = None
    if scorer.config.coref and any(item.history is not None for item in good):
        histories = [item.history or [] for item in good]
    focus = [item.focus for item in good] if any(item.focus is not None for item in good) else None
    extra = {} if focus is None else {"focus": focus}  # the default path: the engine's call unchanged
    result = scorer.score_checked(
        [item.response for item in good],
        [item.knowledge for item in good],
        histories,
        progress=progress,
        **extra,
    )
    # one OpenTelemetry event per response scored or unscored, labelled at its item's threshold and
    # parented to its caller's span (`telemetry.events`; nothing without OpenTelemetry)
    # (a streamed sentence, scored with a focus, is provisional: only its answer's final emits)
    if emit:
        whole = [(r, c) for r, c in zip(result.responses, good) if c.focus is None]
        emit_each([r for r, _ in whole], [c.threshold for _, c in whole], [c.parent for _, c in whole])
    scores = iter(result.responses)  # one per good item, in order
    out: list[ItemResult] = []
    for i, c in enumerate(checked):
        if isinstance(c, ItemResult):
            if c.score is not None:  # unverified: its place in the call
                c.score.index = i
            out.append(c)
            continue
        status: Status = "empty" if empty_reason(c.response, c.knowledge) is not None else "scored"
        out.append(ItemResult(c.key, status, next(scores)))
    system = result.system
    if any(isinstance(c, ItemResult) and c.score is not None for c in checked):  # unverified items
        from q2_metric.steps.system_score import system_of  # count among the unscored

        system = system_of([item.score for item in out if item.score is not None])
    return Outcome(out, system, result.signature, result.profile)


# -- results and the parser, so that no front-end reaches past the engine (what front-ends
# show is `q2_metric.display`) ------------------------------------------------------------------


def system_figures(responses: Sequence[ResponseScore]) -> SystemScore:
    """The system figures of scored responses (from one engine call or several)."""
    from q2_metric.steps.system_score import system_of

    return system_of(responses)


def device_kind(config: Q2Config) -> str:
    """The kind of device the engine runs `config` on: "cpu" or "cuda" ("auto" resolved by the
    one device rule, `models.devices`)."""
    from q2_metric.models.devices import cuda_count

    device = str(config.device)
    return ("cuda" if cuda_count() else "cpu") if device == "auto" else device.partition(":")[0]


def load_spacy_pipeline(name: str | None = None) -> Any:
    """The spaCy pipeline the engine's parser loads (default: the engine's), for a front-end's own
    baselines; one sentence when it is missing."""
    from q2_metric.models.spacy_parser import load_spacy

    return load_spacy(name)
