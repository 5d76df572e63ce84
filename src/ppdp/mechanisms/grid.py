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
from collections.abc import Callable
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp import noise
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.random import RandomSource

__all__ = [
    "MAX_SCALE",
    "MAX_SCALE_TO_GRID",
    "MIN_SCALE",
    "NoiseLaw",
    "UndrawableNoiseError",
    "as_query_value",
    "check_dimension",
    "check_drawable",
    "check_scale",
    "effective_sensitivity",
    "laplace_scale_for",
    "smallest_epsilon",
    "snap_and_add_noise",
    "too_small_epsilon",
]

#: The noise laws :func:`snap_and_add_noise` draws from (:func:`ppdp.noise.laplace`,
#: :func:`ppdp.noise.gaussian`).
NoiseLaw = Literal["laplace", "gaussian"]

#: Noise scales outside [2**-960, 2**960] are refused: below, the grid Λ ≈ 2**-32 × scale
#: would come near subnormal numbers; above, a noise draw could overflow to inf.
MIN_SCALE = 2.0**-960
MAX_SCALE = 2.0**960
#: The largest noise scale a sampler draws on a grid Λ is ``2**MAX_GRID_BITS · Λ``
#: (:data:`ppdp.noise.MAX_GRID_BITS`): float64 noise cannot resolve a finer grid.
MAX_SCALE_TO_GRID = 2.0**noise.MAX_GRID_BITS


class UndrawableNoiseError(ParameterError):
    """The noise a choice of parameters calls for is more than the samplers draw exactly.

    Raised while a mechanism (or a publisher's plan) is built, from its parameters alone,
    so before anything is spent. ``symbol`` names the scale (``"b"``, ``"σ"``), ``scale``
    is its value and ``limit`` the largest the sampler allows at that grid.
    """

    def __init__(self, message: str, *, symbol: str, scale: float, limit: float) -> None:
        super().__init__(message)
        self.symbol = symbol
        self.scale = scale
        self.limit = limit


def check_drawable(symbol: str, scale: float, granularity: float, *, what: str) -> float:
    """Refuse a noise scale above ``2**MAX_GRID_BITS`` times its grid Λ.

    This happens when ε is so small that the grid's share of the effective sensitivity
    (``d·Λ`` in L1, ``√d·Λ`` in L2, with ``Λ ≈ 2⁻³²·Δ/ε``) dominates Δ: the scale then
    grows like ``d/ε`` grid steps. The samplers would refuse the draw after the spend.
    """
    limit = MAX_SCALE_TO_GRID * granularity
    if not scale <= limit:
        raise UndrawableNoiseError(
            f"{what}: its noise ({symbol} = {scale:.3g}) exceeds what the sampler can draw "
            f"exactly on its grid ({symbol} <= 2**{noise.MAX_GRID_BITS} grid steps = "
            f"{limit:.3g}); use a larger epsilon",
            symbol=symbol,
            scale=scale,
            limit=limit,
        )
    return scale


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
    if not math.isfinite(scale):  # overflow: check_scale refuses it
        return scale
    while Fraction(effective) > Fraction(epsilon) * Fraction(scale):
        scale = math.nextafter(scale, math.inf)
    return scale


def check_scale(name: str, scale: float, *, what: str) -> float:
    """Refuse a noise scale that underflows or overflows (RELIABILITY.md (c)).

    An overflowing scale (too small an ε) raises :class:`UndrawableNoiseError`.
    """
    if not scale <= MAX_SCALE:  # also NaN and inf
        raise UndrawableNoiseError(
            f"{name} ({scale!r}) computed from {what} exceeds 2**960, the largest noise "
            "scale the samplers draw; use a larger epsilon",
            symbol="scale",
            scale=scale,
            limit=MAX_SCALE,
        )
    if not (math.isfinite(scale) and MIN_SCALE <= scale <= MAX_SCALE):
        raise ParameterError(
            f"{name} ({scale!r}) computed from {what} must lie in [2**-960, 2**960]; "
            "the noise would underflow or overflow: rescale the query"
        )
    return scale


def smallest_epsilon(
    feasible: Callable[[float], bool], epsilon: float, *, largest: float = 1e6
) -> float | None:
    """The smallest ε above ``epsilon`` with ``feasible(ε)``, rounded up to 3 digits.

    ``feasible`` must be monotone (false below a threshold, true above it), as "the noise
    at ε can be drawn" is: every noise scale decreases with ε. The answer is checked:
    ``feasible`` holds at the returned value. None if it fails up to ``largest``.
    """
    lo = max(float(epsilon), 1e-320)
    hi = lo
    while True:
        hi = min(hi * 10.0, largest)
        if feasible(hi):
            break
        if hi >= largest:
            return None
        lo = hi
    for _ in range(200):  # bisection in log space, to a relative 1e-4
        if hi <= lo * (1.0 + 1e-4):
            break
        mid = math.sqrt(lo * hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    exponent = math.floor(math.log10(hi)) - 2
    answer = math.ceil(hi / 10.0**exponent) * 10.0**exponent
    answer = float(f"{answer:.3g}")
    while not feasible(answer):  # float rounding of the decimal: step up
        answer = float(f"{answer + 10.0**exponent:.3g}")
    return answer


def too_small_epsilon(
    owner: str,
    epsilon: float,
    error: UndrawableNoiseError,
    feasible: Callable[[float], bool],
) -> ParameterError:
    """The one-line refusal of an ε whose noise the samplers cannot draw (``error``).

    Names ``owner`` (the publisher or learner), the noise scale and the sampler's limit at
    this ε, and the smallest ε (3 digits, rounded up) for which ``feasible`` holds.
    """
    least = smallest_epsilon(feasible, epsilon)
    advice = f"use epsilon >= {least:.3g}" if least is not None else "no epsilon works"
    return ParameterError(
        f"epsilon ({epsilon!r}) is too small for {owner}: its noise ({error.symbol} = "
        f"{error.scale:.3g}) exceeds what the sampler can draw exactly ({error.symbol} <= "
        f"{error.limit:.3g}); {advice}"
    )


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
