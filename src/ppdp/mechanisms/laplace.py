"""The Laplace mechanism on a power-of-two grid (privacy argument: ``docs/proofs/laplace.md``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from numpy.typing import ArrayLike

from ppdp import noise
from ppdp._validation import check_epsilon, check_int, check_positive
from ppdp.accounting.events import Laplace as LaplaceEvent
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.exceptions import ParameterTypeError
from ppdp.mechanisms._base import AdditiveGridMechanism
from ppdp.mechanisms.grid import (
    check_drawable,
    check_scale,
    effective_sensitivity,
    laplace_scale_for,
)

__all__ = ["LaplaceMechanism"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LaplaceMechanism(AdditiveGridMechanism):
    """The Laplace mechanism: ``snap(f(D), Λ) + Lap(b)`` on a power-of-two grid Λ.

    Guarantee: ε-differential privacy under ``relation``, provided the query ``f`` has L1
    sensitivity at most ``sensitivity`` under that relation (for a vector query, the L1
    norm of the change of the whole vector). The noise scale is ``b = (Δ + d·Λ)/ε`` where
    ``Λ = noise.granularity(Δ/ε)`` ≈ 2⁻³² Δ/ε and ``d = dimension``: each coordinate of the
    true value is rounded to the grid, which can add Λ per coordinate to the L1
    sensitivity, and the calibration pays for it (at a relative cost of about d·2⁻³²).

    Parameters
    ----------
    epsilon : float
        ε > 0, at most 10 unless ``allow_large_epsilon``.
    sensitivity : float
        Δ, the L1 sensitivity of the query; finite, > 0. It must come from declared bounds,
        never from the data.
    dimension : int, default 1
        The most coordinates a released value may have (1 for a scalar query).
    relation : Neighbouring or str, default "replace-one"
        The neighbouring relation Δ was derived for.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    granularity : float
        Λ, the power-of-two grid of the value and the noise.
    scale : float
        The Laplace scale b, the smallest float with ``(Δ + d·Λ)/b ≤ ε`` exactly.

    Raises
    ------
    ParameterError, ParameterTypeError
        For an invalid ε or Δ, or when the noise scale would underflow or overflow.
    UndrawableNoiseError
        (a ParameterError) When ε is so small that ``b`` exceeds ``2**40·Λ``, which the
        sampler cannot draw exactly: about ``ε < d·2⁻⁴⁰``.

    Notes
    -----
    Numerical caveats: the noise is that of :func:`ppdp.noise.laplace`, whose grid bins
    match the ideal law up to a small stated relative error (``docs/proofs/noise.md``);
    the release is an exact float sum, so it has no low-bit "holes" (Mironov 2012).
    ``bias`` and ``variance`` describe the noise; the grid rounding of the value adds a
    deterministic shift of at most Λ/2.

    References
    ----------
    .. [DMNS06] C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating noise to
       sensitivity in private data analysis", TCC 2006.
    .. [M12] I. Mironov, "On significance of the least significant bits for differential
       privacy", CCS 2012.

    Examples
    --------
    >>> mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    >>> mech.scale == 1.0 + 2.0**-32
    True
    >>> print(mech.guarantee)  # doctest: +ELLIPSIS
    ε-differential privacy with ε=1, neighbouring: replace-one (mechanism: Laplace; ...)
    """

    epsilon: float
    sensitivity: float
    dimension: int = 1
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE
    allow_large_epsilon: bool = False
    _granularity: float = field(init=False, repr=False, compare=False)
    _scale: float = field(init=False, repr=False, compare=False)

    name = "Laplace"
    noise_law = "laplace"

    def __post_init__(self) -> None:
        if not isinstance(self.allow_large_epsilon, bool):
            raise ParameterTypeError(
                f"allow_large_epsilon ({self.allow_large_epsilon!r}) must be True or False"
            )
        eps = check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon)
        delta_f = check_positive("sensitivity", self.sensitivity)
        dim = check_int("dimension", self.dimension, minimum=1)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "dimension", dim)
        object.__setattr__(self, "sensitivity", delta_f)
        object.__setattr__(self, "relation", Neighbouring.parse(self.relation))
        ideal = check_scale(
            "noise scale", delta_f / eps, what=f"sensitivity/epsilon = {delta_f!r}/{eps!r}"
        )
        lam = noise.granularity(ideal)
        eff = effective_sensitivity(delta_f, lam, dimension=dim, norm="l1")
        object.__setattr__(self, "_granularity", lam)
        scale = check_scale("noise scale", laplace_scale_for(eff, eps), what="(Δ + d·Λ)/ε")
        check_drawable(
            "b",
            scale,
            lam,
            what=f"the Laplace mechanism at epsilon {eps!r} (sensitivity {delta_f!r}, "
            f"dimension {dim})",
        )
        object.__setattr__(self, "_scale", scale)

    # -- derived quantities ---------------------------------------------------------------

    @property
    def scale(self) -> float:
        """The Laplace scale b = (Δ + d·Λ)/ε (rounded up)."""
        return self._scale

    @property
    def effective_sensitivity(self) -> float:
        """Δ + d·Λ (rounded up), the L1 sensitivity the noise is calibrated for."""
        return effective_sensitivity(self.sensitivity, self._granularity, dimension=self.dimension)

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs: ``PrivacyBudget(epsilon)``."""
        return PrivacyBudget(self.epsilon)

    @property
    def guarantee(self) -> Guarantee:
        """ε-DP under ``relation``, with the sensitivity and grid assumptions spelled out."""
        assert isinstance(self.relation, Neighbouring)
        return Guarantee.pure(
            self.epsilon,
            relation=self.relation,
            mechanism=self.name,
            assumptions=(
                f"L1 sensitivity ≤ {self.sensitivity:g} of the query under {self.relation.value}",
                f"at most {self.dimension} coordinate(s), value and noise on the power-of-two "
                f"grid Λ = 2^{_log2(self._granularity)} (calibrated for Δ + d·Λ)",
                "idealised numerics: the float sampler's per-cell error adds at most about "
                "d·2⁻¹⁸ to ε (docs/proofs/noise.md)",
            ),
            details=self.ledger_details(),
        )

    @property
    def event(self) -> LaplaceEvent:
        """The accounting event: the declared Δ, the scale b, d and the grid Λ, and ε."""
        return LaplaceEvent(
            l1_sensitivity=self.sensitivity,
            scale=self._scale,
            dimension=self.dimension,
            granularity=self._granularity,
            epsilon=self.epsilon,
        )

    def privacy_events(self) -> tuple[LaplaceEvent, ...]:
        """``(self.event,)``."""
        return (self.event,)

    def variance(self, value: ArrayLike | None = None) -> float:
        """Variance of the noise per coordinate: 2b² (grid rounding adds ≈ Λ²/12)."""
        return 2.0 * self._scale**2

    def ledger_details(self) -> dict[str, Any]:
        """JSON-safe facts for ``Accountant.spend(m.budget, mechanism=m.name, **details)``."""
        assert isinstance(self.relation, Neighbouring)
        return {
            "sensitivity": self.sensitivity,
            "norm": "l1",
            "noise_scale": self._scale,
            "granularity": self._granularity,
            "dimension": self.dimension,
            "relation": self.relation.value,
        }


def _log2(power_of_two: float) -> int:
    return math.frexp(power_of_two)[1] - 1
