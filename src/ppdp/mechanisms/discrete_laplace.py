"""The discrete Laplace mechanism for integer queries (``docs/proofs/discrete-laplace.md``)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp import noise
from ppdp._validation import check_epsilon, check_int, check_real
from ppdp.accounting.events import DiscreteLaplace as DiscreteLaplaceEvent
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.mechanisms.grid import laplace_scale_for
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = ["MAX_SCALE", "MAX_VALUE", "MIN_SCALE", "DiscreteLaplaceMechanism"]

#: The largest noise scale Δ/ε: the cap of :func:`ppdp.noise.discrete_laplace`, whose
#: per-integer error grows with the scale (``docs/proofs/noise.md`` §4).
MAX_SCALE = 2.0**40

#: The smallest noise scale (ε ≤ 2**40·Δ): below it the noise is 0 with probability
#: 1 − 2e**−2**40, and 1/b would strain the accounting's float arithmetic.
MIN_SCALE = 2.0**-40

#: The largest |value| of a coordinate: integers up to 2**53 are exact in float64 and the
#: sum with the noise cannot overflow int64.
MAX_VALUE = 2**53


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscreteLaplaceMechanism:
    """The discrete Laplace mechanism: ``f(D) + K``, ``P(K = k) ∝ exp(−|k|/b)`` on the integers.

    Guarantee: ε-differential privacy under ``relation``, provided the integer-valued query
    ``f`` (a count, a histogram) has L1 sensitivity at most ``sensitivity`` (an integer)
    under that relation. The scale is ``b = Δ/ε`` (rounded up to a float, exactly). The
    value and the noise are integers and their sum is computed exactly in int64, so there
    is no grid and no grid slack: the calibration is for Δ itself.

    Parameters
    ----------
    epsilon : float
        ε > 0, at most 10 unless ``allow_large_epsilon``.
    sensitivity : int
        Δ, the L1 sensitivity of the query: a whole number >= 1 (an integral float such
        as ``2.0`` is accepted). It must come from declared bounds, never from the data.
    dimension : int, default 1
        The most coordinates a released value may have (1 for a single count).
    relation : Neighbouring or str, default "replace-one"
        The neighbouring relation Δ was derived for (a histogram: 1 under add/remove,
        2 under replace-one).
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    scale : float
        The noise scale b, the smallest float with ``Δ/b ≤ ε`` exactly; in [2**-40, 2**40].

    Raises
    ------
    ParameterError, ParameterTypeError
        For an invalid ε, Δ or dimension, or when Δ/ε lies outside [2**-40, 2**40].

    Notes
    -----
    Numerical caveat: the noise is that of :func:`ppdp.noise.discrete_laplace`, whose
    probability of each integer matches the ideal law up to a relative error of at most
    ``max(b·2⁻⁵⁰, 2⁻⁴⁰)`` (``docs/proofs/noise.md`` §4), not an exact-arithmetic sampler.
    The release itself is exact integer arithmetic.

    References
    ----------
    .. [GRS12] A. Ghosh, T. Roughgarden, M. Sundararajan, "Universally utility-maximizing
       privacy mechanisms", SIAM J. Comput. 2012.
    .. [CKS20] C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for differential
       privacy", NeurIPS 2020.

    Examples
    --------
    >>> mech = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=2, dimension=3)
    >>> mech.scale
    4.0
    >>> out = mech.randomise([10, 0, 7])
    >>> out.dtype.name, out.shape
    ('int64', (3,))
    """

    epsilon: float
    sensitivity: int
    dimension: int = 1
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE
    allow_large_epsilon: bool = False
    _scale: float = field(init=False, repr=False, compare=False)

    name = "DiscreteLaplace"

    def __post_init__(self) -> None:
        if not isinstance(self.allow_large_epsilon, bool):
            raise ParameterTypeError(
                f"allow_large_epsilon ({self.allow_large_epsilon!r}) must be True or False"
            )
        eps = check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon)
        delta_f = _check_sensitivity(self.sensitivity)
        dim = check_int("dimension", self.dimension, minimum=1)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", delta_f)
        object.__setattr__(self, "dimension", dim)
        object.__setattr__(self, "relation", Neighbouring.parse(self.relation))
        scale = laplace_scale_for(float(delta_f), eps)
        if not MIN_SCALE <= scale <= MAX_SCALE:
            raise ParameterError(
                f"noise scale ({scale!r}) computed from sensitivity/epsilon = "
                f"{delta_f!r}/{eps!r} must lie in [2**-40, 2**40] for the discrete Laplace "
                "sampler; use LaplaceMechanism for larger noise"
            )
        object.__setattr__(self, "_scale", scale)

    # -- derived quantities ---------------------------------------------------------------

    @property
    def scale(self) -> float:
        """The noise scale b = Δ/ε (rounded up): ``P(k) ∝ exp(−|k|/b)``."""
        return self._scale

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs: ``PrivacyBudget(epsilon)``."""
        return PrivacyBudget(self.epsilon)

    @property
    def guarantee(self) -> Guarantee:
        """ε-DP under ``relation``, with the sensitivity and numerics assumptions spelled out."""
        assert isinstance(self.relation, Neighbouring)
        return Guarantee.pure(
            self.epsilon,
            relation=self.relation,
            mechanism=self.name,
            assumptions=(
                f"integer-valued query with L1 sensitivity ≤ {self.sensitivity} under "
                f"{self.relation.value}",
                f"at most {self.dimension} coordinate(s); value and noise are integers, summed "
                "exactly (no grid)",
                "idealised numerics: the sampler's per-integer error, at most "
                "max(b·2⁻⁵⁰, 2⁻⁴⁰), adds at most about 2d times that to ε "
                "(docs/proofs/noise.md)",
            ),
            details=self.ledger_details(),
        )

    @property
    def event(self) -> DiscreteLaplaceEvent:
        """The accounting event: the declared Δ, the scale b, d, and ε."""
        return DiscreteLaplaceEvent(
            l1_sensitivity=self.sensitivity,
            scale=self._scale,
            dimension=self.dimension,
            epsilon=self.epsilon,
        )

    def privacy_events(self) -> tuple[DiscreteLaplaceEvent, ...]:
        """``(self.event,)``."""
        return (self.event,)

    def bias(self, value: ArrayLike | None = None) -> float:
        """Bias of the noise: 0 (it is symmetric)."""
        return 0.0

    def variance(self, value: ArrayLike | None = None) -> float:
        """Variance of the noise per coordinate: ``2q/(1−q)²`` with ``q = exp(−1/b)``."""
        q = math.exp(-1.0 / self._scale)
        return 2.0 * q / (-math.expm1(-1.0 / self._scale)) ** 2

    def ledger_details(self) -> dict[str, Any]:
        """JSON-safe facts for ``Accountant.spend(m.event, mechanism=m.name, **details)``."""
        assert isinstance(self.relation, Neighbouring)
        return {
            "sensitivity": self.sensitivity,
            "norm": "l1",
            "noise": "discrete-laplace",
            "noise_scale": self._scale,
            "dimension": self.dimension,
            "relation": self.relation.value,
        }

    # -- release --------------------------------------------------------------------------

    def randomise(self, value: ArrayLike, random_state: RandomState = None) -> int | NDArray[Any]:
        """Release ``value`` (an integer or an array of integers answering one query).

        Parameters
        ----------
        value : int or array_like of int
            The true query answer: whole numbers (integer dtype, or floats with integral
            values), ``|x| ≤ 2**53``, at most ``dimension`` coordinates. For an array,
            ``sensitivity`` bounds the L1 change of the whole array; every coordinate gets
            independent noise.
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` (the default) uses the OS CSPRNG; anything else is for tests only.

        Returns
        -------
        int or ndarray of int64
            A Python int for a scalar, else an int64 array of the same shape.

        Raises
        ------
        DataValidationError
            If ``value`` is not integer-valued or is too large (the value is never printed).
        ParameterError
            If ``value`` has more than ``dimension`` coordinates.
        """
        arr, scalar = _as_integer_value(value)
        if arr.size > self.dimension:
            raise ParameterError(
                f"dimension ({self.dimension}) is smaller than the {arr.size} coordinates of "
                f"the value: construct the mechanism with dimension={arr.size} and the L1 "
                "sensitivity of the whole vector"
            )
        source = resolve_random_state(random_state)
        out = self._release(arr.reshape(-1), source, scale=self._scale)
        return int(out[0]) if scalar else out.reshape(arr.shape)

    def _sample(self, value: Any, n: int, source: RandomSource) -> NDArray[np.int64]:
        """``n`` scalar releases of ``value`` (for the audit: its rescaled source halves the
        noise, :class:`ppdp.audit.ScaledNoise`)."""
        arr, _ = _as_integer_value(value)
        flat = np.full(n, int(arr.reshape(-1)[0]), dtype=np.int64)
        return self._release(flat, source, scale=self._scale)

    @staticmethod
    def _release(flat: NDArray[np.int64], source: RandomSource, *, scale: float) -> NDArray[Any]:
        drawn = noise.discrete_laplace(scale, flat.size, random_state=source)
        return flat + np.asarray(drawn, dtype=np.int64)  # exact: |x| ≤ 2**53, |K| ≪ 2**62


def _check_sensitivity(value: Any) -> int:
    """Δ: a whole number in [1, 2**53] (an integral float is accepted)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        v: float | int = int(value)
    else:
        v = check_real("sensitivity", value)
        if not (math.isfinite(v) and v == int(v)):
            raise ParameterError(
                f"sensitivity ({v!r}) must be a whole number >= 1: the discrete Laplace adds "
                "integer noise to integer queries (use LaplaceMechanism for real-valued ones)"
            )
    out = int(v)
    if not 1 <= out <= MAX_VALUE:
        raise ParameterError(f"sensitivity ({out!r}) must be a whole number in [1, 2**53]")
    return out


def _as_integer_value(value: ArrayLike) -> tuple[NDArray[np.int64], bool]:
    """Validate an integer query answer; returns (int64 array, is_scalar). Never prints it."""
    if isinstance(value, bool | np.bool_):
        raise DataValidationError("value must be an integer or an array of integers, not bool")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nested sequences
        raise DataValidationError("value must be an integer or a regular array of them") from exc
    if arr.size == 0:
        raise DataValidationError("value must hold at least one number")
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" or arr.dtype.itemsize > 4:
            too_big = bool(np.any(arr > MAX_VALUE)) or (
                arr.dtype.kind == "i" and bool(np.any(arr < -MAX_VALUE))
            )
        else:
            too_big = False
        if too_big:
            raise DataValidationError("value has entries beyond ±2**53; they cannot be released")
        return arr.astype(np.int64), arr.ndim == 0
    if arr.dtype.kind != "f":
        raise DataValidationError(
            f"value must hold integers (integer dtype, or floats with whole values), "
            f"not dtype {arr.dtype}"
        )
    flt = arr.astype(np.float64, copy=False)
    if not np.isfinite(flt).all():
        raise DataValidationError("value contains NaN or infinite entries; they cannot be released")
    if np.any(np.abs(flt) > MAX_VALUE):
        raise DataValidationError("value has entries beyond ±2**53; they cannot be released")
    if np.any(flt != np.floor(flt)):
        raise DataValidationError(
            "value has non-integer entries; the discrete Laplace releases integer-valued "
            "queries (use LaplaceMechanism for real values)"
        )
    return flt.astype(np.int64), arr.ndim == 0
