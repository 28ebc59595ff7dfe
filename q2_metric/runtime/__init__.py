"""The runtime every serving front-end shares (the harness adapters, `q2 serve`, the guardrails):
what runs between the contract (`q2_metric.frontend`) and the engine (`q2_metric.scorer`).

- `policy`: the one batching policy (`BatchPolicy`: max_batch, max_wait, adaptive), frozen and
  checked once, with one default per knob.
- `engine`: `Engine`, the engine of one process and configuration (one model load), which scores
  items already checked by the contract, in engine calls of at most `max_batch` items.
- `micro`: `MicroBatcher`, gathering concurrent `await score(item)` calls into engine calls under a
  policy; each item is checked once, when it comes in; an `observe` hook hears each engine call.
- `threads`: the process's one engine thread and the C heap's trim after an engine call.
- `sync`: the way in for callers in plain threads (`score_from_thread`), over one background loop.
- `cache`: the ONE cache of engines and micro-batchers per process and configuration.

Front-ends import the runtime; the runtime imports the contract and the engine, never a front-end
(`tests/unit/test_layers.py`).
"""
