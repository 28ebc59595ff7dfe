"""Hugging Face Space for Q²: response + knowledge -> score with a one-line reason, the response's
spans highlighted by span score, one row per question, signature.

`q2-metric space OUT_DIR` puts this file next to the card, the evaluate module (`q2.py`), a wheel
of q2-metric and `requirements.txt`. Models: `Q2_QG_MODEL`, `Q2_QA_MODEL`, `Q2_NLI_MODEL` (default:
the paper's), or `Q2_TINY=1` for tiny random models (meaningless scores, no download); more options
as JSON in `Q2_SPACE_OPTIONS`. Address and port: gradio's
`GRADIO_SERVER_NAME` and `GRADIO_SERVER_PORT`. A response is at most 1,000 characters and its
knowledge 4,000; at most 16 requests wait in the queue.
"""

from q2_metric.hub.space import launch

if __name__ == "__main__":
    launch()
