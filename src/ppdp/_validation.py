"""Parameter validation shared by every module.

Messages follow one pattern: the parameter name, its value in parentheses, then what is
allowed, e.g. ``epsilon (-1.0) must be a finite number > 0``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ppdp.exceptions import ParameterError, ParameterTypeError

#: Largest epsilon accepted without ``allow_large_epsilon=True`` (RELIABILITY.md, catalogue c).
MAX_DEFAULT_EPSILON = 10.0


def bounded(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for errors that quote user input.

    A long string says how long it was; a container of more than eight items is named by
    its type and size (its ``repr`` is never built); anything else is cut with its type.
    """
    if isinstance(value, str | bytes) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, list | tuple | dict | set) and len(value) > 8:
        return f"<a {type(value).__name__} of {len(value)} items>"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({type(value).__name__})"


def check_real(name: str, value: Any) -> float:
    """Return ``value`` as a float, rejecting bools, strings and non-real types."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(
            f"{name} ({value!r}) must be a real number, not {type(value).__name__}"
        )
    return float(value)


def check_finite(name: str, value: Any) -> float:
    """A finite real number."""
    v = check_real(name, value)
    if not math.isfinite(v):
        raise ParameterError(f"{name} ({v!r}) must be a finite number")
    return v


def check_positive(name: str, value: Any) -> float:
    """A finite real number > 0."""
    v = check_real(name, value)
    if not (math.isfinite(v) and v > 0):
        raise ParameterError(f"{name} ({v!r}) must be a finite number > 0")
    return v


def check_nonnegative(name: str, value: Any) -> float:
    """A finite real number >= 0."""
    v = check_real(name, value)
    if not (math.isfinite(v) and v >= 0):
        raise ParameterError(f"{name} ({v!r}) must be a finite number >= 0")
    return v


def check_bool(name: str, value: Any) -> bool:
    """A flag: exactly True or False (not 1, not "yes")."""
    if not isinstance(value, bool):
        raise ParameterTypeError(f"{name} ({value!r}) must be True or False")
    return value


def check_epsilon(name: str, value: Any, *, allow_large: bool = False) -> float:
    """A privacy parameter epsilon of a mechanism: finite, > 0, and <= 10 unless allowed."""
    v = check_positive(name, value)
    if v > MAX_DEFAULT_EPSILON and not allow_large:
        raise ParameterError(
            f"{name} ({v!r}) must be in (0, {MAX_DEFAULT_EPSILON:g}]; "
            "pass allow_large_epsilon=True to accept a larger value"
        )
    return v


def check_delta(name: str, value: Any, *, allow_zero: bool = True) -> float:
    """A privacy parameter delta in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    v = check_real(name, value)
    if not math.isfinite(v) or v < 0 or v >= 1 or (v == 0 and not allow_zero):
        lo = "[0" if allow_zero else "(0"
        raise ParameterError(f"{name} ({v!r}) must be in {lo}, 1)")
    return v


def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """An integer (not a bool), optionally >= ``minimum``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(
            f"{name} ({value!r}) must be an integer, not {type(value).__name__}"
        )
    v = int(value)
    if minimum is not None and v < minimum:
        raise ParameterError(f"{name} ({v!r}) must be an integer >= {minimum}")
    return v


def check_option(name: str, value: Any, options: tuple[str, ...]) -> str:
    """One of a fixed set of string options."""
    if not isinstance(value, str) or value not in options:
        allowed = ", ".join(repr(o) for o in options)
        raise ParameterError(f"{name} ({value!r}) must be one of {allowed}")
    return value
