"""The Gaussian mechanism with classic or analytic calibration (``docs/proofs/gaussian.md``)."""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

from numpy.typing import ArrayLike

from ppdp import noise
from ppdp._validation import check_delta, check_epsilon, check_int, check_option, check_positive
from ppdp.accounting.events import Gaussian as GaussianEvent
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError, PrivacyLeakWarning, user_stacklevel
from ppdp.mechanisms._base import AdditiveGridMechanism
from ppdp.mechanisms.calibration import analytic_gaussian_sigma, classic_gaussian_sigma
from ppdp.mechanisms.grid import (
    check_drawable,
    check_scale,
    effective_sensitivity,
)

__all__ = ["GaussianMechanism"]

_CALIBRATIONS = ("analytic", "classic")


@functools.lru_cache(maxsize=256)
def _unit_sigma(epsilon: float, delta: float, calibration: str) -> float:
    if calibration == "classic":
        return classic_gaussian_sigma(epsilon, delta, 1.0)
    return analytic_gaussian_sigma(epsilon, delta, 1.0)


def _sigma_for(unit: float, sensitivity: float) -> float:
    # One ulp up: σ/Δ is then at least the unit ratio in exact arithmetic.
    return math.nextafter(unit * sensitivity, math.inf)


@dataclass(frozen=True, slots=True, kw_only=True)
class GaussianMechanism(AdditiveGridMechanism):
    """The Gaussian mechanism: ``snap(f(D), Λ) + N(0, σ² I)`` on a power-of-two grid Λ.

    Guarantee: (ε, δ)-differential privacy under ``relation``, provided the query ``f``
    has L2 sensitivity at most ``sensitivity`` under that relation.

    Calibration:

    - ``"analytic"`` (default): the smallest σ with
      ``Φ(Δ'/(2σ) − εσ/Δ') − e^ε Φ(−Δ'/(2σ) − εσ/Δ') ≤ δ`` ([BW18]_ Theorem 8), which is
      necessary and sufficient, valid for every ε, found by a bracketing root finder and
      rounded up (σ exceeds the exact minimum by a relative ~1e-9 at most).
    - ``"classic"``: ``σ = Δ' √(2 ln(1.25/δ)) / ε`` ([DR14]_ Theorem A.1), only for ε < 1.

    Here ``Δ' = Δ + √d·Λ`` with ``Λ = noise.granularity(σ₀)`` (σ₀ the calibration for Δ)
    and ``d = dimension``: each coordinate of the true value is rounded to the grid, which
    can add √d·Λ to the L2 sensitivity.

    Parameters
    ----------
    epsilon : float
        ε > 0, at most 10 unless ``allow_large_epsilon``; < 1 for ``"classic"``.
    delta : float
        δ in (0, 1). Should be much smaller than 1/n.
    sensitivity : float
        Δ, the L2 sensitivity of the query; finite, > 0, from declared bounds.
    dimension : int, default 1
        The most coordinates a released value may have (1 for a scalar query).
    calibration : {"analytic", "classic"}, default "analytic"
    relation : Neighbouring or str, default "replace-one"
        The neighbouring relation Δ was derived for.
    allow_large_epsilon : bool, default False
        Accept ε > 10.
    n : int, optional
        The (public or declared lower-bound) number of records; when given, δ ≥ 1/n issues
        a :class:`~ppdp.exceptions.PrivacyLeakWarning`: such a δ allows publishing a whole
        record.
    strict : bool, default False
        Raise :class:`~ppdp.exceptions.ParameterError` instead of warning when δ ≥ 1/n.

    Attributes
    ----------
    sigma : float
        The noise standard deviation.
    granularity : float
        Λ, the power-of-two grid of the value and the noise.

    Raises
    ------
    ParameterError, ParameterTypeError
        For invalid ε, δ (including δ = 0), Δ, calibration or relation; ``"classic"`` with
        ε ≥ 1; a noise scale that would underflow or overflow; and (as
        ``UndrawableNoiseError``) a σ above ``2**40·Λ``, which the sampler cannot draw
        exactly (ε so small that ``√d·Λ`` dominates Δ).

    Notes
    -----
    Numerical caveats: the noise is :func:`ppdp.noise.gaussian` (Box–Muller on OS entropy,
    bins within a small stated relative error of the ideal law, ``docs/proofs/noise.md``),
    so the guarantee holds up to those idealised numerics; the release has no low-bit holes.

    References
    ----------
    .. [BW18] B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
       Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
    .. [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
       2014, Theorem A.1.

    Examples
    --------
    >>> mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(mech.sigma, 4)
    3.7306
    >>> mech.budget
    PrivacyBudget(epsilon=1.0, delta=1e-05)
    """

    epsilon: float
    delta: float
    sensitivity: float
    dimension: int = 1
    calibration: Literal["analytic", "classic"] = "analytic"
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE
    allow_large_epsilon: bool = False
    n: int | None = None
    strict: bool = False
    _granularity: float = field(init=False, repr=False, compare=False)
    _scale: float = field(init=False, repr=False, compare=False)

    name = "Gaussian"
    noise_law = "gaussian"

    def __post_init__(self) -> None:
        for flag in ("allow_large_epsilon", "strict"):
            if not isinstance(getattr(self, flag), bool):
                raise ParameterTypeError(f"{flag} ({getattr(self, flag)!r}) must be True or False")
        eps = check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon)
        delta = check_delta("delta", self.delta, allow_zero=False)
        delta_f = check_positive("sensitivity", self.sensitivity)
        dim = check_int("dimension", self.dimension, minimum=1)
        calibration = check_option("calibration", self.calibration, _CALIBRATIONS)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "dimension", dim)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "sensitivity", delta_f)
        object.__setattr__(self, "relation", Neighbouring.parse(self.relation))
        if self.n is not None:
            n = check_int("n", self.n, minimum=1)
            object.__setattr__(self, "n", n)
            if delta >= 1.0 / n:
                message = (
                    f"delta ({delta!r}) >= 1/n (n={n}): such a delta allows releasing a whole "
                    "record; choose delta much smaller than 1/n"
                )
                if self.strict:
                    raise ParameterError(message)
                warnings.warn(message, PrivacyLeakWarning, stacklevel=user_stacklevel())
        unit = _unit_sigma(eps, delta, calibration)
        what = f"sensitivity {delta_f!r}, epsilon {eps!r}, delta {delta!r}"
        ideal = check_scale("noise scale", _sigma_for(unit, delta_f), what=what)
        lam = noise.granularity(ideal)
        sigma = _sigma_for(unit, effective_sensitivity(delta_f, lam, dimension=dim, norm="l2"))
        object.__setattr__(self, "_granularity", lam)
        sigma = check_scale("noise scale", sigma, what=what)
        check_drawable(
            "σ",
            sigma,
            lam,
            what=f"the Gaussian mechanism at epsilon {eps!r} (sensitivity {delta_f!r}, "
            f"dimension {dim})",
        )
        object.__setattr__(self, "_scale", sigma)

    # -- derived quantities ---------------------------------------------------------------

    @property
    def sigma(self) -> float:
        """The noise standard deviation σ."""
        return self._scale

    @property
    def scale(self) -> float:
        """Alias of :attr:`sigma` (the noise scale, as for every mechanism)."""
        return self._scale

    @property
    def effective_sensitivity(self) -> float:
        """Δ + √d·Λ (rounded up), the L2 sensitivity σ is calibrated for."""
        return effective_sensitivity(
            self.sensitivity, self._granularity, dimension=self.dimension, norm="l2"
        )

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs: ``PrivacyBudget(epsilon, delta)``."""
        return PrivacyBudget(self.epsilon, self.delta)

    @property
    def guarantee(self) -> Guarantee:
        """(ε, δ)-DP under ``relation``, with the sensitivity and grid assumptions."""
        assert isinstance(self.relation, Neighbouring)
        return Guarantee.approx(
            self.epsilon,
            self.delta,
            relation=self.relation,
            mechanism=self.name,
            assumptions=(
                f"L2 sensitivity ≤ {self.sensitivity:g} of the query under {self.relation.value}",
                f"{self.calibration} calibration, σ = {self._scale:.6g}",
                f"at most {self.dimension} coordinate(s), value and noise on the power-of-two "
                f"grid Λ = 2^{math.frexp(self._granularity)[1] - 1} (calibrated for Δ + √d·Λ)",
            ),
            details=self.ledger_details(),
        )

    @property
    def event(self) -> GaussianEvent:
        """The accounting event: the declared Δ, σ, d and the grid Λ, and the (ε, δ)."""
        return GaussianEvent(
            l2_sensitivity=self.sensitivity,
            sigma=self._scale,
            dimension=self.dimension,
            granularity=self._granularity,
            epsilon=self.epsilon,
            delta=self.delta,
        )

    def privacy_events(self) -> tuple[GaussianEvent, ...]:
        """``(self.event,)``."""
        return (self.event,)

    def variance(self, value: ArrayLike | None = None) -> float:
        """Variance of the noise per coordinate: σ² (grid rounding adds ≈ Λ²/12)."""
        return self._scale**2

    def ledger_details(self) -> dict[str, Any]:
        """JSON-safe facts for ``Accountant.spend(m.budget, mechanism=m.name, **details)``."""
        assert isinstance(self.relation, Neighbouring)
        return {
            "sensitivity": self.sensitivity,
            "norm": "l2",
            "noise_scale": self._scale,
            "granularity": self._granularity,
            "dimension": self.dimension,
            "calibration": self.calibration,
            "relation": self.relation.value,
        }
