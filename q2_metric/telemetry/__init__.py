"""Observable verdicts: OpenTelemetry's GenAI `gen_ai.evaluation.result` event, one per scored
response (`events.emit_evaluations`), through the Logs API. Without OpenTelemetry installed, or
with no logger provider configured, nothing is emitted and nothing is imported."""
