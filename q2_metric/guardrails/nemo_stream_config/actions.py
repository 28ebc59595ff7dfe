# NeMo Guardrails registers the actions it finds in a config folder's actions.py: Q²'s check.
from q2_metric.guardrails.nemo import q2_check_answer

__all__ = ["q2_check_answer"]
