"""What every mechanism shares: the protocol, the grid arithmetic, input checks.

The grid argument (``docs/proofs/laplace.md``): a mechanism snaps the true value to a
power-of-two grid Λ and adds noise that :mod:`ppdp.noise` returns on the same grid, so the
released float is an exact sum of two grid points. Snapping moves each coordinate by at most
Λ/2, so two neighbouring inputs with ``d`` coordinates, once snapped, differ by at most
``Δ + d·Λ`` in L1 and ``Δ + √d·Λ`` in L2 (each coordinate's rounding error difference is at
most Λ). A mechanism declared for ``dimension = d`` calibrates its noise for that
*effective sensitivity* (:func:`effective_sensitivity`); for a scalar it is ``Δ + Λ``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp import noise
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = ["Mechanism"]

#: Noise scales outside [2**-960, 2**960] are refused: below, the grid Λ ≈ 2**-32 × scale
#: would come near subnormal numbers; above, a noise draw could overflow to inf.
MIN_SCALE = 2.0**-960
MAX_SCALE = 2.0**960


@runtime_checkable
class Mechanism(Protocol):
    """The contract every ppdp mechanism meets (later issues compose these).

    A mechanism knows what it costs from its parameters alone (``budget``), states what it
    promises (``guarantee``), releases (``randomise``) and describes itself for the ledger
    (``event``, ``ledger_details``), so that ``acct.spend(m.event, mechanism=m.name)``
    can be recorded *before* ``m.randomise(...)`` is called.
    """

    @property
    def name(self) -> str:
        """Short mechanism name for ledgers and guarantees."""
        ...

    @property
    def budget(self) -> PrivacyBudget:
        """What one call of :meth:`randomise` costs."""
        ...

    @property
    def guarantee(self) -> Guarantee:
        """What one call of :meth:`randomise` promises."""
        ...

    def randomise(self, value: Any, random_state: RandomState = None) -> Any:
        """Release ``value`` privately."""
        ...

    def ledger_details(self) -> dict[str, Any]:
        """JSON-safe facts about the event (sensitivity, noise scale, relation, ...)."""
        ...

    @property
    def event(self) -> Any:
        """The typed accounting event (:mod:`ppdp.accounting.events`) of one release."""
        ...

    def privacy_events(self) -> tuple[Any, ...]:
        """The events one release charges, from the parameters alone."""
        ...


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


class AdditiveGridMechanism:
    """The release path shared by the additive mechanisms (Laplace, Gaussian).

    ``randomise`` snaps the value to the grid Λ and adds noise drawn on the same grid, so
    the release is an exact float sum. A subclass is a frozen dataclass with ``dimension``,
    ``_granularity`` and ``_scale`` fields and a ``_draw`` method for its noise law.
    """

    __slots__ = ()

    dimension: int
    _granularity: float
    _scale: float

    def _draw(
        self, scale: float, n: int, source: RandomSource, granularity: float
    ) -> NDArray[np.float64]:
        """``n`` noise draws of the given scale on the grid ``granularity``."""
        raise NotImplementedError

    @property
    def granularity(self) -> float:
        """Λ, the power-of-two grid of the value and the noise."""
        return self._granularity

    def bias(self, value: ArrayLike | None = None) -> float:
        """Bias of the noise: 0 (the grid rounding of the value shifts it by ≤ Λ/2)."""
        return 0.0

    def randomise(
        self, value: ArrayLike, random_state: RandomState = None
    ) -> float | NDArray[np.float64]:
        """Release ``value`` (a scalar or an array answering one query) with noise.

        Parameters
        ----------
        value : float or array_like of float
            The true query answer; finite, at most ``dimension`` coordinates. For an array,
            ``sensitivity`` bounds the change of the whole array in the mechanism's norm
            (L1 for Laplace, L2 for Gaussian); every coordinate gets independent noise.
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` (the default) uses the OS CSPRNG; anything else is for tests only.

        Returns
        -------
        float or ndarray of float64
            A float for a scalar, else an array of the same shape; on the grid.

        Raises
        ------
        DataValidationError
            If ``value`` is not numeric or holds NaN or inf (the value is never printed).
        ParameterError
            If ``value`` has more than ``dimension`` coordinates.
        """
        arr, scalar = as_query_value(value)
        check_dimension(arr.size, self.dimension)
        source = resolve_random_state(random_state)
        out = self._release(arr.reshape(-1), source, noise_multiplier=1.0)
        return float(out[0]) if scalar else out.reshape(arr.shape)

    def _sample(
        self, value: float, n: int, source: RandomSource, *, noise_multiplier: float = 1.0
    ) -> NDArray[np.float64]:
        """``n`` scalar releases of ``value`` (for the audit; multiplier < 1 is not DP)."""
        arr, _ = as_query_value(value)
        return self._release(np.full(n, float(arr)), source, noise_multiplier=noise_multiplier)

    def _release(
        self, flat: NDArray[np.float64], source: RandomSource, *, noise_multiplier: float
    ) -> NDArray[np.float64]:
        lam = self._granularity
        snapped = np.asarray(noise.snap(flat, lam), dtype=np.float64)
        return snapped + self._draw(self._scale * noise_multiplier, flat.size, source, lam)
