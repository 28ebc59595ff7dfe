"""Q² inside the guardrail frameworks: a Guardrails AI validator (`guardrails_ai.Q2Consistency`,
in process or against the `q2 serve` service) and a NeMo Guardrails output rail (`nemo`: an action
and a Colang flow that ask the service and block the answer unless it says `consistent`). Both
speak to the service through `client.Q2Service` (its HTTP contract: `POST /v1/score`). See
docs/guardrails.md.
"""
