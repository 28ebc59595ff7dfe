"""The Hugging Face Hub: `publish` (results into a model card), `space` (the gradio Space's folder)
and `eval_results`; the texts the metric card shares with the `evaluate` module are
`q2_metric.version`'s."""
