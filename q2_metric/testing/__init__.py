"""Test aids: `scripted` (deterministic stand-ins for the models) and `reference_loop` (a plain
per-example Q², the yardstick of the batched engine)."""
