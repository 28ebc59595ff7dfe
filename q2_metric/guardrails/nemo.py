"""NeMo Guardrails: output rails that ask the Q² service (`q2 serve`) whether the bot's answer is
consistent with its knowledge, and block it otherwise.

Two rails, each with its config folder:

- `check consistency with q2` (`config_folder()`, the action `q2_check_consistency`): the whole
  answer against `$relevant_chunks`, for `LLMRails.generate` (below).
- `check answer with q2` (`stream_config_folder()`, the action `q2_check_answer`): the knowledge
  given explicitly (the context variable `$q2_knowledge`, from a `context` message, or the rail's
  `$knowledge=` parameter on IORails), checked through the service's streaming check: each
  sentence once, then the whole text. It is a streaming output rail (`rails.output.streaming`):
  NeMo hands it each chunk of the answer (`chunk_size` tokens, the last `context_size` of the
  chunk before carried over) and, with `stream_first: false`, lets the chunk out only when the
  rail allows it; it runs on `generate` too. Its outcome is NeMo's `RailOutcome` (allow, or block
  with the reason and `q2_verdict`, `q2_score`, `q2_reason` as metadata). Its rail manifest is
  `nemo_rail.RAIL` (see there for IORails).

The config folder this package ships (`config_folder()`: `config.yml`, `q2.co`, `actions.py`)
holds the flow `check consistency with q2` (Colang 1.0) as an output rail and the action
`q2_check_consistency`; add your main model and the service's address (`custom_data: q2: url:`).

Fail closed: the answer goes out only when the service says `consistent`. A service that cannot be
reached, times out, refuses the request (an API key, a full queue) or answers off its contract, an
answer or knowledge that is missing, and a verdict of `inconsistent` or `unverified`, all block it.
The action's result is a bool (may the answer go out); it also sets `$q2_verdict`, `$q2_score` and
`$q2_reason` for the flows that follow: those fields of the item's record (`frontend.Record`, read
from the service's reply; when there is none, an unverified record whose reason says why).

`custom_data: q2:` keys: `url` (default http://127.0.0.1:8000), `threshold` (default: the
service's), `operating_point` (a file `q2 calibrate` wrote: its threshold is sent, and the record's
signature names it; a threshold given beside it must be its own), `timeout` (seconds, default 30), `api_key_env` (the environment variable that holds
the service's key, if it asks for one).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

from nemoguardrails.actions import action
from nemoguardrails.actions.actions import ActionResult
from nemoguardrails.actions.rail_outcome import RailOutcome

from q2_metric.errors import Q2Error, Q2InputError, Q2OptionError
from q2_metric.frontend import Decision, Record, decision, unchecked
from q2_metric.guardrails.client import DEFAULT_TIMEOUT, DEFAULT_URL, Q2Service, Q2ServiceError

ACTION = "q2_check_consistency"
FLOW = "check consistency with q2"
STREAM_ACTION = "q2_check_answer"
STREAM_FLOW = "check answer with q2"
KNOWLEDGE = "q2_knowledge"  # the context variable that holds the knowledge for `check answer with q2`
log = logging.getLogger(__name__)


def config_folder() -> Path:
    """The shipped NeMo Guardrails config folder (the flow, the action, the rail switched on)."""
    return Path(__file__).resolve().parent / "nemo_config"


def stream_config_folder() -> Path:
    """The shipped config folder of the streaming rail `check answer with q2` (streaming on)."""
    return Path(__file__).resolve().parent / "nemo_stream_config"


def settings(config: Any) -> tuple[Q2Service, float | None]:
    """The service and threshold from the rails config's `custom_data: q2:` (an `operating_point`'s
    threshold when one is given: `decision_of`)."""
    custom = getattr(config, "custom_data", None) or {}
    q2 = custom.get("q2") or {}
    key_env = q2.get("api_key_env")
    api_key = os.environ.get(key_env) if key_env else None
    timeout = q2.get("timeout")  # checked by Q2Service: 0 or a negative number is refused, not replaced
    service = Q2Service(
        str(q2.get("url") or DEFAULT_URL), api_key, DEFAULT_TIMEOUT if timeout is None else timeout
    )
    threshold = q2.get("threshold")
    if q2.get("operating_point") is not None:
        return service, decision_of(config).threshold
    return service, None if threshold is None else float(threshold)


def decision_of(config: Any) -> Decision:
    """The decision of the rails config's `custom_data: q2:`: its `operating_point` (a file `q2
    calibrate` wrote; its threshold is sent, and the record's signature names it) and `threshold`."""
    custom = getattr(config, "custom_data", None) or {}
    q2 = custom.get("q2") or {}
    return decision(q2.get("operating_point"), q2.get("threshold"))


KEY = "the answer"  # the item's name in Q²'s sentences
CONTEXT = ("verdict", "score", "reason")  # the record's fields set as $q2_verdict, $q2_score, $q2_reason


def _answer(record: Record) -> ActionResult:
    """May the answer go out (only when the record says consistent), with the record's verdict,
    score and reason in the context."""
    facts = record.to_dict("q2_", spans=False)
    updates = {f"q2_{name}": facts[f"q2_{name}"] for name in CONTEXT}
    if not record.consistent:
        log.warning("Q² blocked the answer: %s", record.reason)
    return ActionResult(return_value=record.consistent, context_updates=updates)


@action(name=ACTION)
async def q2_check_consistency(context: dict[str, Any] | None = None, config: Any = None) -> ActionResult:
    """True when the Q² service says the bot's answer (`$bot_message`) is consistent with
    `$relevant_chunks` (a string or a list of passages); False (block) otherwise, the service's
    silence included."""
    context = context or {}
    response, knowledge = context.get("bot_message"), context.get("relevant_chunks")
    if not response:
        return _answer(unchecked(KEY, "there is no answer to check"))
    if not knowledge:
        return _answer(unchecked(KEY, "there is no knowledge ($relevant_chunks) to check the answer against"))
    item: dict[str, Any] = {"response": response, "knowledge": knowledge}
    user = context.get("user_message")
    if isinstance(user, str) and user:
        item["history"] = [user]
    try:
        service, threshold = settings(config)
        result = (await asyncio.to_thread(service.ask, [item], threshold=threshold, spans=False))[0]
        record = Record.from_dict(result, KEY)
        if record.signature:  # an operating point of the config's named in the signature
            record = dataclasses.replace(record, signature=str(decision_of(config).sign(record.signature)))
    # no answer, an answer off the contract, or unreadable settings: blocked, saying why
    except (Q2ServiceError, Q2InputError, Q2OptionError, ValueError, TypeError) as err:
        return _answer(unchecked(KEY, str(err)))
    return _answer(record)


def _outcome(record: Record, sentence: str | None = None) -> RailOutcome:
    """Allow only a consistent record; else block, saying why (the failing sentence first)."""
    facts = record.to_dict("q2_", spans=False)
    metadata = {f"q2_{name}": facts[f"q2_{name}"] for name in CONTEXT}
    if record.consistent:
        return RailOutcome.allow(metadata=metadata)
    reason = record.reason if sentence is None else f"{record.reason} (the sentence {sentence!r})"
    log.warning("Q² blocked the answer: %s", reason)
    return RailOutcome.block(reason=reason, metadata=metadata)


@action(name=STREAM_ACTION)
async def q2_check_answer(
    bot_message: str | None = None,
    knowledge: Any = None,
    context: dict[str, Any] | None = None,
    config: Any = None,
    **kwargs: Any,
) -> RailOutcome:
    """Allow the answer (or the chunk of it a streaming rail is given: `bot_message`) only when the
    Q² service's streaming check finds every sentence of it, and the whole of it, consistent with
    the knowledge: `knowledge` (the rail's parameter) or the context variable `$q2_knowledge` (a
    string or a list of passages; never `$relevant_chunks`). Block otherwise, the service's
    silence included."""
    context = context or {}
    response = bot_message if bot_message is not None else context.get("bot_message")
    if knowledge is None:
        knowledge = context.get(KNOWLEDGE)
    if not isinstance(response, str) or not response.strip():
        return _outcome(unchecked(KEY, "there is no answer to check"))
    if knowledge is None or knowledge == "" or knowledge == []:
        return _outcome(unchecked(KEY, f"there is no knowledge (${KNOWLEDGE}) to check the answer against"))
    try:
        service, threshold = settings(config)
        stream = await asyncio.to_thread(service.open_stream, knowledge, threshold=threshold, spans=False)
        sentences, final = await asyncio.to_thread(stream.end, response)
        records = [(Record.from_dict(s, KEY), s.get("text")) for s in sentences]
        whole = Record.from_dict(final, KEY)
    # no answer, an answer off the contract, or unreadable settings: blocked, saying why
    except (Q2Error, ValueError, TypeError) as err:
        return _outcome(unchecked(KEY, str(err)))
    for record, text in records:
        if not record.consistent:
            return _outcome(record, text if isinstance(text, str) else None)
    return _outcome(whole)


__all__ = [
    "ACTION",
    "FLOW",
    "KNOWLEDGE",
    "STREAM_ACTION",
    "STREAM_FLOW",
    "config_folder",
    "decision_of",
    "q2_check_answer",
    "q2_check_consistency",
    "settings",
    "stream_config_folder",
]
