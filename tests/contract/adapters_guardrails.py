"""The guardrail frameworks' front-ends in the matrix: the Guardrails AI validator `Q2Consistency`
in process, driven by Guardrails AI's own `Guard().use(...).validate(...)`, one response per call
as a guarded application validates them. What the user sees is read back from the guard: each
call's validation result (pass or fail, its error spans) and the facts the validator puts on it
(its record: `q2_status`, `q2_score`, `q2_verdict`, `q2_reason`, `q2_spans`, `q2_signature`) in
the guard's history.

The NeMo Guardrails action relays the Q² service's verdict and scores nothing itself: it is in
`frontends.NOT_SCORING`; so is the validator's service path (the service's own adapter scores).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.guardrails import offline_guard, quiet_guardrails

from contract.frontends import Item, PythonAPI, Report, Row, Words

GUARDRAILS_AI = "guardrails guardrails_ai"


@dataclass
class GuardrailsAI(Words):
    """`Guard().use(Q2Consistency(threshold=0.5, on_fail="noop", **options)).validate(response,
    metadata={"knowledge": knowledge})`, item by item."""

    name: str
    base: dict[str, Any]
    slow: bool = False
    bad_item: str = "n/a"
    bad_item_reason: str = (
        "Guardrails AI checks the value itself (pydantic): a non-text response never reaches the "
        "validator; a knowledge that is no text fails the response with its sentence "
        "(tests/integration/test_guardrails_ai.py)"
    )
    words: dict = field(
        default_factory=lambda: {
            "wrong type": "use_nli='false'",
            "out of range": "fallback_scores=(0, 2, 1)",
            "unknown name": "'use_nlii'",
            "missing model": "qg_model",
        }
    )
    foreign_words: tuple = ("--qg-model", "qg_model (")
    writes: bool = False  # returns the guard's outcome; writes no file

    def _validator(self, options: dict[str, Any]) -> Any:
        quiet_guardrails()  # before Guardrails AI is imported
        from q2_metric.guardrails.guardrails_ai import Q2Consistency
        from q2_metric.runtime import cache

        cache.reset()
        # at 0.5, unless an operating point gives the threshold
        return Q2Consistency(
            threshold=None if "operating_point" in options else 0.5, on_fail="noop", **options
        )

    def score(self, items: list[Item], tmp: Path) -> Report:
        from q2_metric.guardrails.guardrails_ai import KEY

        guard: Any = offline_guard(self._validator(self.base))
        rows, spans, signature, verdicts, reasons = [], [], "", [], []
        for n, item in enumerate(items):
            outcome = guard.validate(item.response, metadata={"knowledge": item.knowledge})
            logs = guard.history.last.iterations.last.validator_logs
            assert len(logs) == 1, logs
            result = logs[0].validation_result
            facts = result.metadata or {}
            status = facts["q2_status"]
            assert outcome.validation_passed is (result.outcome == "pass")
            verdicts.append(facts["q2_verdict"])
            reasons.append(facts["q2_reason"])
            if status == "bad":
                assert result.outcome == "fail"
                rows.append(Row(KEY, "bad", None, result.error_message))  # the validator's name for it
                spans.append(None)
                continue
            q2 = facts["q2_score"]
            rows.append(Row(f"item {n}", status, None if q2 is None or math.isnan(q2) else q2))
            spans.append(facts["q2_spans"])
            signature = facts["q2_signature"]
        counts = {s: sum(r.status == s for r in rows) for s in ("scored", "empty", "bad")}
        return Report(rows, counts, signature, spans, verdicts, reasons)

    def refusal(self, kind: str, tmp: Path) -> str:
        from q2_metric.errors import Q2Error
        from q2_metric.runtime import cache

        try:
            self._validator(PythonAPI("guardrails", self.base).options_for(kind, tmp))
        except Q2Error as err:
            return str(err)
        finally:
            cache.reset()
        raise AssertionError(f"{self.name} accepted {kind}")

    def write_inside_read(self, tmp: Path) -> str | None:
        return None


def guardrails_adapters(base: dict[str, Any]) -> list:
    return [GuardrailsAI(GUARDRAILS_AI, base)]
