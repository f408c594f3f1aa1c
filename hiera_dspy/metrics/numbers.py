"""How a number is printed in the summaries and reports: a kappa, a rate, a count, a value with its confidence interval.

One place, so every table and one-line summary writes a missing value and an interval the same way.

Example:
    >>> number(0.51234), number(None), number(12.7, ".0f")
    ('0.512', '-', '13')
    >>> with_ci(0.51234, (0.4, 0.62))
    '0.512 [0.400, 0.620]'
"""

from __future__ import annotations

MISSING = "-"


def number(x: float | None, spec: str = ".3f", missing: str = MISSING) -> str:
    """`x` formatted by the format spec `spec`, or `missing` when there is no value."""
    return missing if x is None else format(x, spec)


def with_ci(x: float | None, ci, spec: str = ".3f", missing: str = MISSING, label: str = "") -> str:
    """`x` followed by its confidence interval `ci` = (low, high) in brackets, `label` first ("95% CI "); `missing`
    alone when there is no value, and no brackets when the interval is unknown."""
    if x is None:
        return missing
    low, high = ci or (None, None)
    if low is None or high is None:
        return number(x, spec)
    return f"{number(x, spec)} [{label}{number(low, spec)}, {number(high, spec)}]"
