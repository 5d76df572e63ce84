"""The grid arithmetic every additive release shares: snap, calibrate, check, add noise.

The grid argument (``docs/proofs/laplace.md``): a release snaps the true value to a
power-of-two grid Λ and adds noise that :mod:`ppdp.noise` returns on the same grid, so the
released float is an exact sum of two grid points. Snapping moves each coordinate by at most
Λ/2, so two neighbouring inputs with ``d`` coordinates, once snapped, differ by at most
``Δ + d·Λ`` in L1 and ``Δ + √d·Λ`` in L2 (each coordinate's rounding error difference is at
most Λ). A release declared for ``dimension = d`` calibrates its noise for that
*effective sensitivity* (:func:`effective_sensitivity`); for a scalar it is ``Δ + Λ``.

The mechanisms (:mod:`ppdp.mechanisms`) and the correlated-data releases
(:mod:`ppdp.correlated`) both release through :func:`snap_and_add_noise`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp import noise
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.random import RandomSource

__all__ = [
    "MAX_SCALE",
    "MIN_SCALE",
    "NoiseLaw",
    "as_query_value",
    "check_dimension",
    "check_scale",
    "effective_sensitivity",
    "laplace_scale_for",
    "snap_and_add_noise",
]

#: The noise laws :func:`snap_and_add_noise` draws from (:func:`ppdp.noise.laplace`,
#: :func:`ppdp.noise.gaussian`).
NoiseLaw = Literal["laplace", "gaussian"]

#: Noise scales outside [2**-960, 2**960] are refused: below, the grid Λ ≈ 2**-32 × scale
#: would come near subnormal numbers; above, a noise draw could overflow to inf.
MIN_SCALE = 2.0**-960
MAX_SCALE = 2.0**960


def effective_sensitivity(
    sensitivity: float, granularity: float, *, dimension: int = 1, norm: Literal["l1", "l2"] = "l1"
) -> float:
    """The smallest float ``>= Δ + c·Λ`` with ``c = d`` (L1) or ``c >= √d`` (L2), exactly."""
    if norm == "l1":
        factor = Fraction(dimension)
        allowance = float(dimension) * granularity  # exact: Λ is a power of two
    else:
        root = math.sqrt(dimension)
        if Fraction(root) ** 2 < dimension:
            root = math.nextafter(root, math.inf)
        factor = Fraction(root)
        allowance = root * granularity
    total = sensitivity + allowance
    if Fraction(total) < Fraction(sensitivity) + factor * Fraction(granularity):
        total = math.nextafter(total, math.inf)
    return total


def laplace_scale_for(effective: float, epsilon: float) -> float:
    """The smallest float ``b`` with ``effective / b <= epsilon`` in exact arithmetic."""
    scale = effective / epsilon
    while Fraction(effective) > Fraction(epsilon) * Fraction(scale):
        scale = math.nextafter(scale, math.inf)
    return scale


def check_scale(name: str, scale: float, *, what: str) -> float:
    """Refuse a noise scale that underflows or overflows (RELIABILITY.md (c))."""
    if not (math.isfinite(scale) and MIN_SCALE <= scale <= MAX_SCALE):
        raise ParameterError(
            f"{name} ({scale!r}) computed from {what} must lie in [2**-960, 2**960]; "
            "the noise would underflow or overflow: rescale the query"
        )
    return scale


def check_dimension(arr_size: int, dimension: int) -> None:
    """Refuse a value with more coordinates than the mechanism was calibrated for."""
    if arr_size > dimension:
        raise ParameterError(
            f"dimension ({dimension}) is smaller than the {arr_size} coordinates of the value: "
            f"the grid rounding of each coordinate adds to the sensitivity, so construct the "
            f"mechanism with dimension={arr_size}"
        )


def as_query_value(value: ArrayLike, *, name: str = "value") -> tuple[NDArray[np.float64], bool]:
    """Validate a query answer: real numbers, all finite. Returns (float array, is_scalar).

    Messages never contain the value itself: it is the private query answer.
    """
    if isinstance(value, bool | np.bool_):
        raise DataValidationError(f"{name} must be a real number or an array of them, not bool")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nested sequences
        raise DataValidationError(
            f"{name} must be a real number or a regular array of them"
        ) from exc
    if arr.dtype.kind not in "iuf":
        raise DataValidationError(
            f"{name} must hold real numbers (integer or float dtype), not dtype {arr.dtype}"
        )
    out = arr.astype(np.float64, copy=False)
    if out.size == 0:
        raise DataValidationError(f"{name} must hold at least one number")
    if not np.isfinite(out).all():
        raise DataValidationError(
            f"{name} contains NaN or infinite entries; they cannot be released"
        )
    return out, arr.ndim == 0


def snap_and_add_noise(
    flat: NDArray[np.float64],
    *,
    granularity: float,
    scale: float,
    source: RandomSource,
    law: NoiseLaw = "laplace",
) -> NDArray[np.float64]:
    """``snap(v, Λ) + noise(scale)`` per coordinate, both on the grid Λ: the release step.

    Parameters
    ----------
    flat : ndarray of float64, shape (n,)
        The validated true values (see :func:`as_query_value`); never printed.
    granularity : float
        Λ, a power of two (:func:`ppdp.noise.granularity` of the ideal scale).
    scale : float
        The noise scale (Laplace ``b`` or Gaussian ``σ``), already calibrated for the
        effective sensitivity (:func:`effective_sensitivity`).
    source : RandomSource
        The randomness (the OS CSPRNG unless a test seeded it).
    law : {"laplace", "gaussian"}, default "laplace"
        Which noise law to draw from.

    Returns
    -------
    ndarray of float64, shape (n,)
        The released values: exact float sums of two grid points.
    """
    snapped = np.asarray(noise.snap(flat, granularity), dtype=np.float64)
    if law == "laplace":
        drawn = noise.laplace(scale, flat.size, random_state=source, granularity=granularity)
    elif law == "gaussian":
        drawn = noise.gaussian(scale, flat.size, random_state=source, granularity=granularity)
    else:
        raise ParameterError(f"law ({law!r}) must be 'laplace' or 'gaussian'")
    return snapped + np.asarray(drawn, dtype=np.float64)
