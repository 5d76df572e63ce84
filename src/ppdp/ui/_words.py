"""Numbers and notes as the screens show them: ε and δ without scientific notation,
drafted bounds without the file's float residue, the columns a draft left out.

Display only: what the library keeps and compares is unchanged, except that a drafted bound
shown rounded is the field's value, so an unedited bound is saved rounded *outward* (the
declared range still covers what was drafted).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

# the screens' ε and δ words are the library's (the dry run's lines on screen 4 use them too)
from ppdp.budget import plain_budget as budget_words
from ppdp.budget import plain_number

__all__ = ["budget_words", "outward_bounds", "plain_number"]

#: A drafted bound longer than this many significant digits is float residue of the file
#: (``1.79999995``, R writing single precision): it is shown rounded outward.
_DIGITS = 6


def _significant(value: float) -> int:
    digits = Decimal(repr(value)).normalize().as_tuple().digits
    return len(digits)


def _round(value: float, step: Decimal, rounding: str) -> int | float:
    out = Decimal(repr(value)).quantize(step, rounding=rounding)
    return int(out) if out == out.to_integral_value() else float(out)


def outward_bounds(lower: Any, upper: Any) -> tuple[Any, Any]:
    """The drafted ``lower`` and ``upper`` as the form shows them: a float bound with more
    than 6 significant digits is rounded outward (``lower`` down, ``upper`` up) at 3
    significant digits of the range's width, so the shown range covers the drafted one;
    anything else (integers, short decimals, dates, a missing bound) is returned as it is.

    Examples
    --------
    >>> outward_bounds(1.79999995, 10.6000003)
    (1.79, 10.61)
    >>> outward_bounds(0, 1.5)
    (0, 1.5)
    """
    floats = [v for v in (lower, upper) if isinstance(v, float) and math.isfinite(v)]
    if not floats or all(_significant(v) <= _DIGITS for v in floats):
        return lower, upper
    both = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (lower, upper))
    width = upper - lower if both and upper > lower else max(abs(v) for v in floats)
    if width == 0:
        return lower, upper
    step = Decimal(1).scaleb(math.floor(math.log10(width)) - 2)
    if isinstance(lower, float) and math.isfinite(lower) and _significant(lower) > _DIGITS:
        lower = _round(lower, step, ROUND_FLOOR)
    if isinstance(upper, float) and math.isfinite(upper) and _significant(upper) > _DIGITS:
        upper = _round(upper, step, ROUND_CEILING)
    return lower, upper
