"""The streaming check: an answer scored sentence by sentence while it arrives, then whole.

- `SentenceSplitter`: the incremental sentence rule (below), the same whatever the chunking.
- `StreamCore`: one stream's state over the runtime, with no I/O of its own: the knowledge checked
  once when it opens (the contract's one item check), the text so far, and for each sentence that
  completes the item the engine scores; `q2 serve`'s stream sessions and `Q2Stream` both use it.
- `Q2Stream`: the Python object for callers that do not want HTTP, over the process's engine and
  micro-batcher (`runtime.cache`): `feed(text)` -> the results of the sentences that text
  completed, `end()` -> the final record, which is the batch result of the whole answer.

The sentence rule (deterministic: it reads only the text, never the chunk boundaries): a sentence
ends after a run of terminators (`.`, `!`, `?`) and any closing quotes or brackets right after it
(`CLOSERS`), when whitespace (`str.isspace`) follows and then a further non-space character has
arrived; that character starts the next sentence. What is left at the end is the last sentence.
No abbreviation list: "Dr. Smith" is two sentences, "3.14" and "e.g.," none. A sentence's text
is the answer's own characters from its first non-space character to its last terminator or
closer (or, for the last one, its last non-space character); its offsets are in the whole answer.

Each sentence is checked ONCE, when it completes, with the sentence before it carried as context:
the engine scores the text from the previous sentence's start to this one's end, keeping only the
candidates inside this sentence (`CheckedItem.focus`); when none of them has a valid question, the
fallback end-to-end NLI reads this sentence alone, as the engine's fallback reads a response. Its
spans' offsets are moved to the whole answer. That verdict is provisional: the final record, the
whole answer scored as a batch item is scored, decides (docs/streaming.md).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from q2_metric import frontend
from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.frontend import CheckedItem, Item, ItemResult, Record
from q2_metric.runtime.engine import Checked, Scored

TERMINATORS = ".!?"
CLOSERS = "\"')]}\u00bb\u201d\u2019"  # " ' ) ] } » ” ’
DEFAULT_MAX_CHARS = 100_000  # characters of one streamed answer (the memory a stream may hold)

_TEXT, _END, _SPACE = (
    0,
    1,
    2,
)  # the splitter's states: in a sentence, after its end run, after that run's space


class SentenceSplitter:
    """The incremental sentence rule (see the module): `feed(text)` returns the [start, end) ranges
    of the sentences the text completed, `end()` the last one (if any visible character is left).
    Each character is read once.

    >>> s = SentenceSplitter()
    >>> s.feed("Hi there. How"), s.feed(" are you?"), s.feed("  Fine"), s.end()
    ([(0, 9)], [], [(10, 22)], [(24, 28)])
    >>> s.text[10:22]
    'How are you?'
    """

    def __init__(self) -> None:
        self.text = ""
        self.start: int | None = None  # the open sentence's first non-space character
        self._stop = 0  # the open sentence's end if it completes (after its terminators and closers)
        self._state = _TEXT
        self._ended = False

    def feed(self, chunk: str) -> list[tuple[int, int]]:
        """The ranges of the sentences completed once `chunk` is added."""
        if self._ended:
            raise Q2InputError("The stream has ended.")
        done: list[tuple[int, int]] = []
        base = len(self.text)
        self.text += chunk
        state, start, stop = self._state, self.start, self._stop
        for n, ch in enumerate(chunk, base):
            space = ch.isspace()
            if start is None:  # before the first sentence: whitespace skipped
                if space:
                    continue
                start, state = n, _TEXT
            if state == _SPACE and not space:  # a further character: the sentence is complete
                done.append((start, stop))
                start, state = n, _TEXT
            if ch in TERMINATORS or (state == _END and ch in CLOSERS):
                state, stop = _END, n + 1
            elif space:
                if state == _END:
                    state = _SPACE
            elif state != _SPACE:
                state = _TEXT
        self._state, self.start, self._stop = state, start, stop
        return done

    def end(self) -> list[tuple[int, int]]:
        """The last sentence's range (from its first to its last non-space character), if any."""
        self._ended = True
        if self.start is None:
            return []
        stop = len(self.text.rstrip())
        return [(self.start, stop)] if stop > self.start else []


@dataclass(frozen=True)
class Sentence:
    """A completed sentence: its index, its [start, end) in the answer and the text it has there."""

    index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class SentenceResult:
    """A sentence's provisional result: the sentence and its record (`frontend.Record`: verdict,
    reason, spans with offsets in the whole answer)."""

    sentence: Sentence
    record: Record

    @property
    def consistent(self) -> bool:
        """Whether the provisional verdict is exactly `consistent`."""
        return self.record.consistent

    def to_dict(self, spans: bool = True) -> dict[str, Any]:
        """Plain JSON-able: index, start, end, text, then the record's fields but the signature."""
        out = self.record.to_dict(spans=spans)
        del out["signature"]
        s = self.sentence
        return {"index": s.index, "start": s.start, "end": s.end, "text": s.text, **out}


def _moved(record: Record, offset: int) -> Record:
    """The record with its spans' offsets moved by `offset` characters."""
    spans = tuple(
        dataclasses.replace(
            s,
            start=None if s.start is None else s.start + offset,
            end=None if s.end is None else s.end + offset,
        )
        for s in record.spans
    )
    return dataclasses.replace(record, spans=spans)


def open_knowledge(knowledge: Any, key: str = "the stream") -> CheckedItem:
    """The knowledge checked once, by the contract's one item check (`frontend.check_items`: a
    text, or a list of passages joined); a bad one is a `Q2InputError` naming the field."""
    checked = frontend.check_items([Item(key, "", knowledge)])[0]
    if isinstance(checked, ItemResult):
        raise Q2InputError(checked.error or f"{key}: field 'knowledge' is not valid.")
    return checked


class StreamCore:
    """One stream's state: the checked knowledge, the splitter, the previous sentence. No models and
    no I/O: `take(text)` returns the items to score for the sentences the text completed,
    `finish(text)` those of the last ones and the whole answer's item; `result(...)` builds a
    sentence's result from its engine result. At most `max_chars` characters (`Q2InputError`)."""

    def __init__(
        self,
        knowledge: Any,
        *,
        threshold: float = 0.5,
        max_chars: int = DEFAULT_MAX_CHARS,
        key: str = "",
        language: str = "en",
    ) -> None:
        self.key = key or "the stream"
        self.language = language  # the model set's: each sentence and the whole answer pass its gate
        # the threshold rides on the items: the final's OpenTelemetry event is labelled at it
        self.knowledge = dataclasses.replace(open_knowledge(knowledge, self.key), threshold=threshold)
        self.threshold = threshold
        self.max_chars = max_chars
        self.splitter = SentenceSplitter()
        self.sentences = 0  # sentences completed so far
        self._previous: int | None = None  # the previous sentence's start
        self.ended = False

    @property
    def chars(self) -> int:
        return len(self.splitter.text)

    def snapshot(self) -> tuple[Any, ...]:
        """The state before a chunk (no copy: the text is immutable), for `restore`."""
        sp = self.splitter
        return (sp.text, sp.start, sp._stop, sp._state, sp._ended, self.sentences, self._previous, self.ended)

    def restore(self, state: tuple[Any, ...]) -> None:
        """Back to a `snapshot`: a chunk whose scoring was refused or failed leaves no trace."""
        sp = self.splitter
        sp.text, sp.start, sp._stop, sp._state, sp._ended, self.sentences, self._previous, self.ended = state

    def _check(self, text: Any, field: str = "text") -> str:
        if not isinstance(text, str):
            raise Q2InputError(f"Field '{field}' must be a string, got {type(text).__name__}.")
        if self.ended:
            raise Q2InputError("The stream has ended.")
        if self.chars + len(text) > self.max_chars:
            raise Q2InputError(
                f"The stream would hold {self.chars + len(text)} characters: at most {self.max_chars} are taken."
            )
        return text

    def _items(self, ranges: list[tuple[int, int]]) -> list[tuple[Sentence, Checked]]:
        """Each completed sentence and its item: the text from the previous sentence's start to its
        end, focused on the sentence; or, the sentence in a language the model set does not cover,
        its unverified result (the contract's language gate, `frontend.language_checked`)."""
        out = []
        text = self.splitter.text
        for start, end in ranges:
            begin = start if self._previous is None else self._previous
            sentence = Sentence(self.sentences, start, end, text[start:end])
            key = f"{self.key}, sentence {self.sentences}"
            out.append(
                (
                    sentence,
                    self._gated(key, text[start:end])
                    or frontend.with_response(
                        self.knowledge, key, text[begin:end], (start - begin, end - begin)
                    ),
                )
            )
            self.sentences += 1
            self._previous = start
        return out

    def _gated(self, key: str, sentence: str) -> ItemResult | None:
        """The sentence's unverified result when it (judged alone, not with the sentence before
        it) or the knowledge is in a language the model set does not cover; else None."""
        gated = frontend.language_checked(
            frontend.with_response(self.knowledge, key, sentence), self.language
        )
        return gated if isinstance(gated, ItemResult) else None

    def take(self, text: Any) -> list[tuple[Sentence, Checked]]:
        """The sentences `text` completed, each with the item to score (nothing scored here)."""
        return self._items(self.splitter.feed(self._check(text)))

    def finish(self, text: Any = "") -> tuple[list[tuple[Sentence, Checked]], Checked]:
        """The sentences completed by `text` and the end, and the whole answer's item (the batch
        item of the answer: the same texts, no focus)."""
        items = self.take(text)
        items += self._items(self.splitter.end())
        self.ended = True
        whole = frontend.with_response(self.knowledge, self.key, self.splitter.text)
        return items, frontend.language_checked(whole, self.language)

    def result(self, sentence: Sentence, item: Checked, scored: Scored) -> SentenceResult:
        """The sentence's result from its engine result: its record, spans moved into the answer."""
        record = frontend.record_of(scored.result, scored.signature, self.threshold)
        focus = item.focus if isinstance(item, CheckedItem) else None
        offset = sentence.start - (focus[0] if focus is not None else 0)
        return SentenceResult(sentence, _moved(record, offset))

    def final(self, scored: Scored) -> Record:
        """The final record: the whole answer's, as the batch path gives it."""
        return frontend.record_of(scored.result, scored.signature, self.threshold)


def in_order(todo: Sequence[Checked], scored: Sequence[Scored]) -> list[Scored]:
    """One `Scored` per item of `todo`: the engine's results of its checked items (`scored`, in
    order) with the gated ones' own results between them (the signature of the engine call)."""
    found = iter(scored)
    signature = scored[0].signature if scored else ""
    return [next(found) if isinstance(t, CheckedItem) else Scored(t, signature) for t in todo]


async def score_all(
    core: StreamCore,
    items: Sequence[tuple[Sentence, Checked]],
    whole: Checked | None,
    score: Callable[[list[CheckedItem]], Awaitable[list[Scored]]],
) -> tuple[list[SentenceResult], Scored | None]:
    """The sentences' results and the whole answer's engine result (`whole` given), every item
    sent at once to `score` (the micro-batcher's: they may share an engine call, whose stages then
    compute the model inputs the last sentence and the whole answer have in common once)."""
    todo = [item for _, item in items] + ([whole] if whole is not None else [])
    checked = [t for t in todo if isinstance(t, CheckedItem)]
    scored = in_order(todo, await score(checked) if checked else [])
    results = [core.result(s, i, r) for (s, i), r in zip(items, scored)]
    return results, scored[-1] if whole is not None else None


class Q2Stream:
    """The streaming check in process, over the process's engine and micro-batcher
    (`runtime.cache.micro_batcher`): concurrent streams' sentences share engine calls.

    `Q2Stream(knowledge, threshold=0.5, max_chars=100_000, **options)`; `options` are the Q²
    options every front-end takes (`tiny=True`, `device="cpu"`, model folders, ...; `coref` is not
    streamed). `feed(text)` returns the `SentenceResult`s of the sentences the text completed
    (provisional), `end(text="")` the final `frontend.Record` of the whole answer, which equals the
    batch result of the answer; `sentences` holds every sentence's result. A context manager.

    Examples:
        >>> with Q2Stream("Bob Ross hosted the show.", tiny=True) as stream:  # doctest: +SKIP
        ...     stream.feed("Bob Ross hosted the show. It ran")
        ...     final = stream.end(" for years.")
    """

    def __init__(
        self,
        knowledge: Any,
        *,
        threshold: float = 0.5,
        max_chars: int = DEFAULT_MAX_CHARS,
        micro: Any = None,
        **options: Any,
    ) -> None:
        from q2_metric import display

        if options.get("coref"):
            raise Q2OptionError(
                "Invalid Q² option coref=True: the streaming check does not resolve coreference."
            )
        display.check_threshold(threshold)
        if micro is None:
            from q2_metric.runtime.cache import micro_batcher

            _, micro = micro_batcher(options)
        self.micro = micro
        config = getattr(getattr(micro, "engine", None), "config", None)
        language = str(getattr(config, "language", "en") or "en")
        self.core = StreamCore(knowledge, threshold=threshold, max_chars=max_chars, language=language)
        self.sentences: list[SentenceResult] = []
        self.final: Record | None = None
        self._lock = threading.Lock()

    def _run(self, text: str, end: bool) -> Record | None:
        """The chunk's sentences (and with `end` the whole answer) scored in one go; a failure
        leaves the stream as it was."""
        from q2_metric.runtime.sync import gather_from_thread

        with self._lock:
            state = self.core.snapshot()
            try:
                items, whole = self.core.finish(text) if end else (self.core.take(text), None)
                todo = [item for _, item in items] + ([whole] if whole is not None else [])
                checked = [t for t in todo if isinstance(t, CheckedItem)]
                scored = in_order(todo, gather_from_thread(self.micro, checked) if checked else [])
            except BaseException:
                self.core.restore(state)
                raise
            self.sentences += [self.core.result(s, i, r) for (s, i), r in zip(items, scored)]
            if whole is None:
                return None
            self.final = self.core.final(scored[-1])
            return self.final

    def feed(self, text: str) -> list[SentenceResult]:
        """The results of the sentences `text` completed (each scored once, now)."""
        before = len(self.sentences)
        self._run(text, end=False)
        return self.sentences[before:]

    def end(self, text: str = "") -> Record:
        """The last sentences scored, then the final record of the whole answer (the batch result)."""
        final = self._run(text, end=True)
        assert final is not None
        return final

    def __enter__(self) -> Q2Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.final is None and not self.core.ended and exc[0] is None:
            self.end()
