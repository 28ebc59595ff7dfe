"""Hugging Face Space for the Q² metric: evaluate's gradio widget."""

from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(str(Path(__file__).resolve().parent / "q2.py"))
launch_gradio_widget(module)
