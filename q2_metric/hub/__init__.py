"""The Hugging Face Hub: `publish` (results into a model card), `space` (the gradio Space's folder)
and `card_text` (the texts shared by the metric card and the `evaluate` module)."""
