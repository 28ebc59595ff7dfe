"""The one number formatter of everything printed: `figure`, and `UNDEFINED`, the one spelling of an
undefined figure. A leaf (it imports nothing of the package), so that the results can print
themselves and `display` can name the results in its annotations without an import circle.
Front-ends take both from `q2_metric.display`, which shows them with the other rules."""

from __future__ import annotations

import math

UNDEFINED = "n/a"  # the one spelling of an undefined figure in everything printed (JSON: null)


def figure(value: float | None, digits: int = 4, spec: str | None = None) -> str:
    """A number as a person reads it, the one formatter of every front-end's printed figures:
    `UNDEFINED` (`n/a`) for None or NaN (never `nan` or `-`), a count (an int) as it is, else
    `digits` decimals, or the format `spec` when given (`+.4f`, `.1%`).

    >>> figure(0.5), figure(float("nan")), figure(None, 3), figure(12), figure(0.25, spec=".1%")
    ('0.5000', 'n/a', 'n/a', '12', '25.0%')
    """
    if value is None or (not isinstance(value, int) and math.isnan(value)):
        return UNDEFINED
    if spec is not None:
        return format(value, spec)
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"
