"""Input checks that run before any model: a clear error naming the index and field."""

from __future__ import annotations

from typing import Any, Sequence


class Q2InputError(ValueError):
    """Bad input to the scorer; the message names the item and the field."""


def validate_inputs(responses: Any, knowledge: Any, response_field: str = "response",
                    knowledge_field: str = "knowledge") -> tuple[list[str], list[str]]:
    """Check two parallel lists of strings; return them as lists."""
    for name, value in ((response_field, responses), (knowledge_field, knowledge)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not hasattr(value, "__iter__"):
            raise Q2InputError(f"{name} must be a list of strings, got {type(value).__name__}")
    responses, knowledge = list(responses), list(knowledge)
    if len(responses) != len(knowledge):
        raise Q2InputError(
            f"{response_field} has {len(responses)} items but {knowledge_field} has {len(knowledge)}; "
            "they must be parallel lists"
        )
    for i, (r, k) in enumerate(zip(responses, knowledge)):
        for name, value in ((response_field, r), (knowledge_field, k)):
            if not isinstance(value, str):
                kind = "None" if value is None else type(value).__name__
                raise Q2InputError(f"item {i}: field '{name}' must be a string, got {kind}")
    return responses, knowledge


def empty_reason(response: str, knowledge: str) -> str | None:
    """Why a pair cannot be scored (its score is NaN, left out of the mean), or None."""
    if not response.strip():
        return "empty response"
    if not knowledge.strip():
        return "empty knowledge"
    return None
