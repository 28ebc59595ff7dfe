"""transformers and spaCy backends of the component interfaces in `q2_metric.components`."""

from q2_metric.errors import ModelNotAvailable
from q2_metric.models.loading import resolve_device, resolve_dtype

__all__ = ["ModelNotAvailable", "resolve_device", "resolve_dtype"]
