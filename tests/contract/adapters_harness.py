"""THE HARNESS ADAPTERS' PLACE (written by the harness change, h-harness): lm-eval's `q2_wow` and
`q2_dialogue`, Inspect AI's `q2` scorer and `q2_wow` task, and the ragas metric.

`HARNESS_FRONT_ENDS` names them as `frontends.registry()` does; `harness_adapters(base)` returns
their adapters (each an `Adapter` of `frontends.py`, usually `slow`). Until an adapter is written,
its name is expected here without one, and the matrix's enumeration test marks it xfail with the
reason "adapter written by the harness change" (and only those names).
"""

from __future__ import annotations

from typing import Any

HARNESS_FRONT_ENDS = ("lm-eval q2_dialogue", "lm-eval q2_wow", "lm-eval q2_wow_evaluate", "inspect q2", "inspect q2_wow", "ragas q2")


def harness_adapters(base: dict[str, Any]) -> list:
    """The harness front-ends' adapters (none yet: the harness change writes them here)."""
    return []
