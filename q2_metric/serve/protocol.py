"""The HTTP contract of `POST /v1/score` (docs/serve.md): the request and response models (pydantic:
the validator and the OpenAPI schema at once), the reading of a request body, and the response's
JSON from the one result record (`frontend.Record`).

A request is one item or `{"items": [...]}`. The request's own fields (its `threshold`, `spans`,
the list itself) are checked here: a bad one is the whole request's 422. Each item of a list is
checked alone: a bad `threshold` or `spans` of one item, or an item that is no object, is that
item's `bad` entry, never the whole request's 422. An item's texts (`response`, `knowledge`,
`history`) are checked by the contract's one item check (`frontend.check_items`, in `service`),
which gives every front-end's sentence; their types are in the schema.

The body is read with a deadline (`read_timeout`: a body that stalls is a 408) and a size
(`max_body_bytes`: 413), then read as JSON that must be text: not UTF-8, not JSON, nested deeper
than `MAX_DEPTH` or holding a lone surrogate anywhere is a 422 with one sentence, before any scoring.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.json_schema import JsonDict

from q2_metric import display, frontend
from q2_metric.errors import Q2Error
from q2_metric.frontend import CheckedItem, Item, ItemResult

MAX_DEPTH = 32  # levels of nesting a request body may have (an item list of passages needs 4)
_TEXT: JsonDict = {"type": "string"}
_TEXTS: JsonDict = {"type": "array", "items": _TEXT}
_TEXT_OR_TEXTS: JsonDict = {"anyOf": [_TEXT, _TEXTS]}


class RequestError(Q2Error):
    """A request the service refuses: its HTTP status, its one sentence and its headers."""

    def __init__(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.headers = code, message, headers or {}


# -- the request --------------------------------------------------------------------------------------


class _Settings(BaseModel):
    """A request's or an item's `threshold` and `spans` (the project's own sentences when bad)."""

    model_config = ConfigDict(extra="ignore")

    threshold: float | None = Field(None, ge=0, le=1, description="the decision threshold")
    spans: bool | None = Field(None, description="whether the item's spans come back (default true)")

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: Any) -> Any:
        return None if value is None else display.check_threshold(value)

    @field_validator("spans", mode="before")
    @classmethod
    def _spans(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"field 'spans' must be true or false, got {type(value).__name__}")
        return value


class ScoreItem(_Settings):
    """One item. Its texts are checked by the contract's one item check (a bad one is the item's
    `bad` entry with the sentence every front-end gives), so they are typed in the schema only."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"required": ["response", "knowledge"]})

    response: Any = Field(None, json_schema_extra=_TEXT, description="the answer to check")
    knowledge: Any = Field(
        None, json_schema_extra=_TEXT_OR_TEXTS, description="a text, or a list of passages"
    )
    history: Any = Field(None, json_schema_extra=_TEXTS, description="the dialogue turns before it")
    id: Any = Field(None, json_schema_extra=_TEXT, description="the item's id (default: its index)")


class ScoreItems(_Settings):
    """Several items; `threshold` and `spans` are the items' defaults."""

    model_config = ConfigDict(extra="ignore")

    items: list[Any] = Field(json_schema_extra={"items": ScoreItem.model_json_schema()})


def _sentence(err: ValidationError, where: str = "") -> str:
    """A pydantic error as one sentence (the project's own when a validator gave one)."""
    first = err.errors()[0]
    cause = (first.get("ctx") or {}).get("error")
    if cause is not None:
        text = str(cause)
    else:
        field = ".".join(str(p) for p in first["loc"])
        text = f"field '{field}': {first['msg'][:1].lower()}{first['msg'][1:]}"
    text = f"{where}{text[:1].lower() if where else text[:1].upper()}{text[1:]}"
    return text if text.endswith(".") else text + "."


@dataclass
class Asked:
    """One item of a request: its id, its `Item`, its threshold and whether it wants its spans; then
    the contract's check of it (`checked`: the `CheckedItem`, or its `bad` result)."""

    id: str
    item: Item
    threshold: float
    spans: bool
    checked: CheckedItem | ItemResult | None = None


def parse_request(body: Any, max_items: int, threshold: float) -> list[Asked]:
    """The items of a request body (one item, or `{"items": [...]}`), each with its key and
    settings; a bad request is a `RequestError` (422), too many items one (413). A bad item of a
    list is that item's `bad` result (its `checked`)."""
    if not isinstance(body, dict):
        raise RequestError(422, 'The request body must be a JSON object: one item, or {"items": [...]}.')
    try:
        if "items" in body:
            if not isinstance(body["items"], list):
                raise RequestError(422, "Field 'items' must be a list of items.")
            request: _Settings = ScoreItems.model_validate(body)
            raw = body["items"]
        else:
            request = ScoreItem.model_validate(body)
            raw = [body]
    except ValidationError as err:
        raise RequestError(422, _sentence(err)) from None
    if len(raw) > max_items:
        raise RequestError(413, f"{len(raw)} items in one request: at most {max_items} are taken.")
    default = threshold if request.threshold is None else request.threshold
    wants = True if request.spans is None else request.spans
    out = []
    for n, entry in enumerate(raw):
        given = entry.get("id") if isinstance(entry, dict) else None
        ident = str(n) if given is None else str(given)
        key = f"item {n}" if given is None else f"item {n} (id {ident!r})"
        if not isinstance(entry, dict):
            why = f"{key}: must be a JSON object with 'response' and 'knowledge', got {type(entry).__name__}."
            out.append(Asked(ident, Item(key, None, None), default, False, ItemResult(key, "bad", None, why)))
            continue
        item = Item(key, entry.get("response"), entry.get("knowledge"), entry.get("history"))
        asked = Asked(ident, item, default, wants)
        if "items" in body:  # an item's own settings (one item alone: the request's, checked above)
            try:
                own = ScoreItem.model_validate(entry)
            except ValidationError as err:
                asked.checked = ItemResult(key, "bad", None, _sentence(err, f"{key}: "))
            else:
                asked.threshold = default if own.threshold is None else own.threshold
                asked.spans = wants if own.spans is None else own.spans
        out.append(asked)
    return out


# -- the body -----------------------------------------------------------------------------------------


async def read_body(request: Any, limit: int, seconds: float) -> bytes:
    """The request's body: at most `limit` bytes (413), all of it within `seconds` (408: a body that
    stalls; the connection is then closed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"The request body has {int(declared)} bytes: at most {limit} are taken.")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    chunks, size = [], 0
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), max(deadline - loop.time(), 0.0))
        except StopAsyncIteration:
            break
        except asyncio.TimeoutError:
            raise RequestError(
                408, f"The request body did not arrive within {seconds:g} s.", {"Connection": "close"}
            ) from None
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"The request body is over {limit} bytes, the most taken.")
        chunks.append(chunk)
    return b"".join(chunks)


def read_json(raw: bytes) -> Any:
    """The body as JSON that is text: UTF-8, JSON, nested at most `MAX_DEPTH` levels, no lone
    surrogate in any string or key; else a `RequestError` (422) in one sentence."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RequestError(422, f"The request body is not UTF-8 (byte {err.start}).") from None
    try:
        body = json.loads(text)
    except json.JSONDecodeError as err:
        raise RequestError(422, f"The request body is not JSON: {err}.") from None
    except RecursionError:
        raise RequestError(422, f"The request body nests deeper than {MAX_DEPTH} levels.") from None
    _check_text(body)
    return body


def _check_text(body: Any) -> None:
    """Walks the JSON (no recursion): its depth, and every string and key is text."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RequestError(422, f"The request body nests deeper than {MAX_DEPTH} levels.")
        if isinstance(value, dict):
            for key, inner in value.items():
                _text(key)
                stack.append((inner, depth + 1))
        elif isinstance(value, list):
            stack.extend((inner, depth + 1) for inner in value)
        elif isinstance(value, str):
            _text(value)


def _text(value: str) -> None:
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(value[err.start])
        raise RequestError(
            422, f"The request body holds a lone surrogate (\\u{code:04x}), which is not text."
        ) from None


# -- the response: each item's entry is its record ------------------------------------------------------


class SpanOut(BaseModel):
    """One span (`frontend.SpanRecord`): offsets in the response, `response[start:end] == text`."""

    start: int | None
    end: int | None
    text: str
    candidate: str
    supported: bool | None
    score: float | None
    reason: str
    question: str | None
    answers: list[str | None]


class ItemOut(BaseModel):
    """One item's entry (`frontend.Record`, with its `id`; the signature is the response's)."""

    id: str
    status: Literal["scored", "empty", "bad"]
    score: float | None
    q2_no_nli: float | None
    verdict: Literal["consistent", "inconsistent", "unverified"]
    reason: str
    spans: list[SpanOut]
    error: str | None


class ScoreResponse(BaseModel):
    """The answer of `POST /v1/score`: the FULL signature and one entry per item, in order."""

    signature: str
    results: list[ItemOut]


class ErrorOut(BaseModel):
    """A refused request: one sentence."""

    error: str


def item_json(asked: Asked, result: ItemResult | None, error: str | None = None) -> dict[str, Any]:
    """One item's entry of the response: its `id` and its record (`frontend.Record.to_dict`; the
    signature is the response's, not the item's). Fail closed: an item not scored (`result` None:
    `error` says why) is `unverified` (`frontend.verdict_of`)."""
    if result is None or error is not None:
        result = ItemResult(asked.item.key, "bad", None, error or "not checked")
    entry = frontend.record_of(result, "", asked.threshold).to_dict(spans=asked.spans)
    del entry["signature"]
    return {"id": asked.id, **entry}


OPENAPI_SCORE: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"oneOf": [ScoreItem.model_json_schema(), ScoreItems.model_json_schema()]}
            }
        },
    }
}


# -- the streaming check (docs/streaming.md) -----------------------------------------------------------


class StreamOpen(_Settings):
    """`POST /v1/score/stream`: the knowledge, checked once for the whole stream by the contract's
    one item check; `threshold` and `spans` as an item's; `id` the final record's (default "0", as
    one item of `/v1/score`)."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"required": ["knowledge"]})

    knowledge: Any = Field(
        None, json_schema_extra=_TEXT_OR_TEXTS, description="a text, or a list of passages"
    )
    id: Any = Field(None, json_schema_extra=_TEXT, description="the final record's id (default: 0)")


class StreamText(BaseModel):
    """`POST /v1/score/stream/{stream}` (and its `/end`): the answer's next chunk of text."""

    model_config = ConfigDict(extra="ignore")

    text: Any = Field(None, json_schema_extra=_TEXT, description="the answer's next characters")


@dataclass
class Opened:
    """A checked stream request: the knowledge (unchecked: the contract checks it), the final
    record's id and key, the threshold and whether spans come back."""

    knowledge: Any
    id: str
    key: str
    threshold: float
    spans: bool


def parse_open(body: Any, threshold: float) -> Opened:
    """The open request's settings (a bad one: 422 with one sentence naming the field)."""
    if not isinstance(body, dict):
        raise RequestError(422, 'The request body must be a JSON object: {"knowledge": ...}.')
    try:
        request = StreamOpen.model_validate(body)
    except ValidationError as err:
        raise RequestError(422, _sentence(err)) from None
    given = body.get("id")
    ident = "0" if given is None else str(given)
    key = "item 0" if given is None else f"item 0 (id {ident!r})"
    return Opened(
        body.get("knowledge"),
        ident,
        key,
        threshold if request.threshold is None else request.threshold,
        True if request.spans is None else request.spans,
    )


def parse_text(body: Any, required: bool) -> str:
    """A chunk request's text (`required` false: the end's, "" when absent); a bad one: 422."""
    if not isinstance(body, dict):
        raise RequestError(422, 'The request body must be a JSON object: {"text": "..."}.')
    text = body.get("text")
    if text is None and not required:
        return ""
    if not isinstance(text, str):
        raise RequestError(422, f"Field 'text' must be a string, got {type(text).__name__}.")
    return text


class StreamOpenedOut(BaseModel):
    """A stream opened: its id (for the next requests) and its limits."""

    stream: str
    idle_timeout: float
    max_chars: int


class SentenceOut(BaseModel):
    """One sentence's provisional result: where it lies in the answer and its record (spans'
    offsets in the whole answer)."""

    index: int
    start: int
    end: int
    text: str
    status: Literal["scored", "empty", "bad"]
    score: float | None
    q2_no_nli: float | None
    verdict: Literal["consistent", "inconsistent", "unverified"]
    reason: str
    spans: list[SpanOut]
    error: str | None


class StreamChunkOut(BaseModel):
    """The sentences this chunk completed, in order (often none)."""

    sentences: list[SentenceOut]


class StreamEndOut(BaseModel):
    """The end: the last sentences, then the final record of the whole answer (the entry
    `/v1/score` gives for it) and the signature."""

    signature: str
    sentences: list[SentenceOut]
    final: ItemOut


class StreamClosedOut(BaseModel):
    """A stream cancelled."""

    stream: str
    closed: str


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


OPENAPI_STREAM_OPEN = _body(StreamOpen)
OPENAPI_STREAM_TEXT = _body(StreamText)
