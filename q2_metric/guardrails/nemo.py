"""NeMo Guardrails: an output rail that asks the Q² service (`q2 serve`) whether the bot's answer
is consistent with the knowledge it was given (`$relevant_chunks`), and blocks it otherwise.

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

from q2_metric.errors import Q2InputError, Q2OptionError
from q2_metric.frontend import Decision, Record, decision, unchecked
from q2_metric.guardrails.client import DEFAULT_TIMEOUT, DEFAULT_URL, Q2Service, Q2ServiceError

ACTION = "q2_check_consistency"
FLOW = "check consistency with q2"
log = logging.getLogger(__name__)


def config_folder() -> Path:
    """The shipped NeMo Guardrails config folder (the flow, the action, the rail switched on)."""
    return Path(__file__).resolve().parent / "nemo_config"


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


__all__ = ["ACTION", "FLOW", "config_folder", "decision_of", "q2_check_consistency", "settings"]
