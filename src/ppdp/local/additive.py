"""Additive input perturbation ``w = x + y`` (Agrawal & Srikant 2000; Wu).

Privacy argument: ``docs/proofs/local-randomizers.md``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr
from scipy.stats import norm

from ppdp import noise as _noise
from ppdp._validation import check_finite, check_option, check_positive, check_real
from ppdp.accounting.events import PrivacyEvent
from ppdp.budget import Guarantee
from ppdp.exceptions import (
    DataValidationError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.local import _samplers
from ppdp.local._protocol import guarantee_events
from ppdp.mechanisms import gaussian_delta
from ppdp.random import RandomState, resolve_random_state

_custodian_log = logging.getLogger("ppdp.custodian")

__all__ = ["ADDITIVE_NOISES", "AdditiveRandomizer"]

AdditiveNoise = Literal["uniform", "gaussian", "laplace"]
ADDITIVE_NOISES: tuple[str, ...] = ("uniform", "gaussian", "laplace")


@dataclass(frozen=True, kw_only=True)
class AdditiveRandomizer:
    """Each respondent releases ``w = x + y`` with ``y`` from a published noise law.

    Every law snaps ``x`` to the power-of-two grid Λ = ``noise.granularity(scale)``
    (≈ 2⁻³²·scale) and draws ``y`` on the same grid, so every report is a multiple of Λ
    whatever the input: the report's float pattern carries nothing about ``x``
    (``docs/proofs/local-randomizers.md``, "Float and grid patterns").

    Guarantee (local DP, any two inputs ``x, x′`` of one respondent in the declared domain
    ``[lo, hi]``, so the sensitivity is ``D = hi − lo``; snapping moves ``x`` by at most
    Λ/2, which adds Λ to D):

    * ``"laplace"`` (scale b): pure ``ε = (D + Λ)/b``; at δ > 0 the smallest ε is
      ``max(0, ε₀ + 2 ln(1 − δ))``.
    * ``"gaussian"`` (std σ): never pure; the smallest ε at δ > 0 from Balle & Wang's exact
      profile with sensitivity ``D + Λ``.
    * ``"uniform"`` (width w): ``y = KΛ`` with ``K`` uniform on the ``2m + 1`` integers
      ``−m … m``, ``m = ⌊w/(2Λ)⌋`` (the grid points of ``[−w/2, w/2]``). The privacy loss
      is 0 or ±∞: no finite ε below ``δ = min(1, j/(2m + 1))`` with
      ``j = (snap(hi) − snap(lo))/Λ``, and ε = 0 at or above it (:meth:`delta_floor`;
      ``|j/(2m + 1) − D/w| ≲ 2⁻³¹·(1 + D/w)``).

    Where no finite ε exists the guarantee is of kind ``none`` and carries the legacy
    metrics (Agrawal–Srikant interval widths, Agrawal–Aggarwal ``2^{h(Y)}``), which are
    average-case and much weaker than LDP.

    Parameters
    ----------
    noise : {"uniform", "gaussian", "laplace"}
    scale : float
        Uniform: the width w; Gaussian: σ; Laplace: b. Finite, in ``(2**-991, 2**960]``
        (so that the grid Λ is a normal float).
    domain : tuple of two floats
        The declared ``(lo, hi)`` of the values, ``lo < hi``; never inferred from data.

    References
    ----------
    .. [AS00] R. Agrawal, R. Srikant. Privacy-preserving data mining. SIGMOD 2000.
    .. [AA01] D. Agrawal, C. C. Aggarwal. On the design and quantification of privacy
       preserving data mining algorithms. PODS 2001.
    .. [BW18] B. Balle, Y.-X. Wang. Improving the Gaussian mechanism. ICML 2018.

    Examples
    --------
    >>> r = AdditiveRandomizer(noise="laplace", scale=2.0, domain=(0.0, 1.0))
    >>> round(r.guarantee().epsilon, 6)
    0.5
    >>> r.guarantee().kind.value
    'local'
    >>> AdditiveRandomizer(noise="uniform", scale=2.0, domain=(0, 1)).guarantee().kind.value
    'none'
    """

    noise: AdditiveNoise = "gaussian"
    scale: float
    domain: tuple[float, float]
    grid: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_option("noise", self.noise, ADDITIVE_NOISES)
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        if (
            isinstance(self.domain, str)
            or not hasattr(self.domain, "__len__")
            or len(self.domain) != 2
        ):
            raise ParameterTypeError(f"domain ({self.domain!r}) must be a pair (lo, hi)")
        lo = check_finite("domain[0]", self.domain[0])
        hi = check_finite("domain[1]", self.domain[1])
        if not lo < hi:
            raise ParameterError(f"domain ({lo!r}, {hi!r}) must satisfy lo < hi")
        object.__setattr__(self, "domain", (lo, hi))
        object.__setattr__(self, "grid", _noise.granularity(self.scale))

    @property
    def width(self) -> float:
        """The domain width ``D = hi − lo``."""
        return self.domain[1] - self.domain[0]

    @property
    def sensitivity(self) -> float:
        """``D + Λ``: the domain width plus the snapping grid."""
        return self.width + self.grid

    @property
    def uniform_half_points(self) -> int:
        """Uniform noise: ``m = ⌊w/(2Λ)⌋``; the noise is ``KΛ``, K uniform on ``−m … m``.

        For the other laws, 0 (their noise has unbounded support).
        """
        if self.noise != "uniform":
            return 0
        return math.floor(self.scale / (2.0 * self.grid))  # exact: Λ is a power of two

    def _snapped_span(self) -> int:
        """``j = (snap(hi) − snap(lo))/Λ``, exactly: the largest distance, in grid steps,
        between two snapped inputs (snapping is monotone)."""
        lo, hi = (Fraction(float(_noise.snap(v, self.grid))) for v in self.domain)
        span = (hi - lo) / Fraction(self.grid)
        assert span.denominator == 1
        return int(span)

    # -- respondent side ---------------------------------------------------------------

    def check_values(
        self, values: ArrayLike, *, on_invalid: Literal["raise", "mask"] = "raise"
    ) -> NDArray[np.float64]:
        """Validate values against the declared domain (one error; values are never shown).

        ``on_invalid="mask"`` (total mode: no value-dependent error, for analyst-facing
        services) clips each value into the domain and maps a non-finite one to the
        domain's midpoint; the count goes to the custodian log only.
        """
        check_option("on_invalid", on_invalid, ("raise", "mask"))
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError):
            raise ParameterTypeError("values must be a regular array of real numbers") from None
        if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
            raise ParameterTypeError(f"values must be real numbers, not dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        lo, hi = self.domain
        ok = np.isfinite(arr) & (arr >= lo) & (arr <= hi)
        if not np.all(ok):
            if on_invalid == "mask":
                _custodian_log.info(
                    "%s: %d of %d values outside the domain or not finite were masked",
                    type(self).__name__,
                    int(np.sum(~ok)),
                    arr.size,
                )
                arr = np.where(np.isfinite(arr), arr, (lo + hi) / 2.0)
                return np.clip(arr, lo, hi)
            raise DataValidationError(
                f"values: {int(np.sum(~ok))} of {arr.size} values lie outside the declared "
                f"domain [{lo:g}, {hi:g}] (or are not finite); clip or drop them before randomising"
            )
        return arr

    def randomise(
        self,
        values: ArrayLike,
        random_state: RandomState = None,
        *,
        on_invalid: Literal["raise", "mask"] = "raise",
    ) -> NDArray[np.float64]:
        """Release ``snap(x, Λ) + y`` for each value (same shape as ``values``).

        ``y`` is a multiple of Λ, so the sum is exact (a multiple of Λ) wherever
        ``|x| + |y| < 2**53·Λ`` and a deterministic rounding of it beyond. ``on_invalid`` as
        :meth:`check_values`.
        """
        x = self.check_values(values, on_invalid=on_invalid)
        src = resolve_random_state(random_state)
        n = x.size
        snapped = np.asarray(_noise.snap(x.ravel(), self.grid), dtype=np.float64)
        if self.noise == "uniform":
            m = self.uniform_half_points
            k = _samplers.uniform_integers(2 * m + 1, n, src) - m
            y = k.astype(np.float64) * self.grid  # exact: |k| < 2**53, Λ a power of two
        elif self.noise == "gaussian":
            y = _noise.gaussian(self.scale, n, random_state=src, granularity=self.grid)
        else:
            y = _noise.laplace(self.scale, n, random_state=src, granularity=self.grid)
        return (snapped + np.asarray(y, dtype=np.float64)).reshape(x.shape)

    # -- the noise law -----------------------------------------------------------------

    def noise_pdf(self, t: ArrayLike) -> NDArray[np.float64]:
        """Density of the noise y (idealised continuous law).

        The reports come from the grid version of this law (Λ ≈ 2⁻³²·scale); its cdf
        differs from the continuous one by at most about Λ/scale (uniform) or the grid error
        of ``ppdp.noise`` (Laplace, Gaussian), far below any reconstruction's resolution.
        """
        t = np.asarray(t, dtype=np.float64)
        s = self.scale
        if self.noise == "uniform":
            return np.where(np.abs(t) <= s / 2.0, 1.0 / s, 0.0)
        if self.noise == "gaussian":
            return np.asarray(norm.pdf(t, scale=s))
        return np.exp(-np.abs(t) / s) / (2.0 * s)

    def noise_cdf(self, t: ArrayLike) -> NDArray[np.float64]:
        """Distribution function of the noise y."""
        t = np.asarray(t, dtype=np.float64)
        s = self.scale
        if self.noise == "uniform":
            return np.clip((t + s / 2.0) / s, 0.0, 1.0)
        if self.noise == "gaussian":
            return np.asarray(ndtr(t / s))
        return np.where(
            t < 0, 0.5 * np.exp(np.minimum(t, 0.0) / s), 1.0 - 0.5 * np.exp(-np.maximum(t, 0.0) / s)
        )

    def noise_integrated_cdf(self, t: ArrayLike) -> NDArray[np.float64]:
        """``G(t) = ∫_{−∞}^t F(u) du`` (for the bin-averaged kernels of the EM)."""
        t = np.asarray(t, dtype=np.float64)
        s = self.scale
        if self.noise == "uniform":
            h = s / 2.0
            return np.where(t < -h, 0.0, np.where(t > h, t, (t + h) ** 2 / (2.0 * s)))
        if self.noise == "gaussian":
            return np.asarray(t * ndtr(t / s) + s * norm.pdf(t / s))
        return np.where(
            t < 0,
            0.5 * s * np.exp(np.minimum(t, 0.0) / s),
            t + 0.5 * s * np.exp(-np.maximum(t, 0.0) / s),
        )

    def noise_characteristic(self, t: ArrayLike) -> NDArray[np.float64]:
        """``φ_Y(t) = E e^{itY}`` (real: every law here is symmetric about 0)."""
        t = np.asarray(t, dtype=np.float64)
        s = self.scale
        if self.noise == "uniform":
            return np.sinc(t * s / (2.0 * np.pi))  # sin(ts/2)/(ts/2)
        if self.noise == "gaussian":
            return np.exp(-0.5 * (s * t) ** 2)
        return 1.0 / (1.0 + (s * t) ** 2)

    def noise_support(self) -> tuple[float, float]:
        """Bounds of the perturbation ``w − x`` of a report (infinite for Gaussian and Laplace).

        Uniform: ``±(m + ½)Λ``, the noise's ``±mΛ`` plus the snapping offset of at most Λ/2
        (so at most ``w/2 + Λ/2``).
        """
        if self.noise == "uniform":
            half = (self.uniform_half_points + 0.5) * self.grid
            return -half, half
        return -math.inf, math.inf

    def noise_quantile(self, q: float) -> float:
        """Upper quantile: the smallest t with P(|y| > t) ≤ 1 − q."""
        s = self.scale
        if self.noise == "uniform":
            return q * s / 2.0
        if self.noise == "gaussian":
            return float(norm.ppf(0.5 + q / 2.0)) * s
        return -s * math.log(1.0 - q)

    # -- guarantee ---------------------------------------------------------------------

    def legacy_metrics(self) -> dict[str, float]:
        """Agrawal–Srikant interval widths (50 %, 95 %) and Agrawal–Aggarwal ``Π(Y) = 2^{h(Y)}``."""
        s = self.scale
        if self.noise == "uniform":
            h_nats = math.log(s)
        elif self.noise == "gaussian":
            h_nats = 0.5 * math.log(2.0 * math.pi * math.e * s * s)
        else:
            h_nats = 1.0 + math.log(2.0 * s)
        return {
            "interval_width_50": 2.0 * self.noise_quantile(0.5),
            "interval_width_95": 2.0 * self.noise_quantile(0.95),
            "aa_privacy": math.exp(h_nats),  # 2^{h in bits} = e^{h in nats}
            "domain_width": self.width,
        }

    def _mechanism(self) -> str:
        lo, hi = self.domain
        return f"additive({self.noise}, scale={self.scale:g}, domain=[{lo:g}, {hi:g}])"

    def delta_floor(self) -> float:
        """P(privacy loss = ∞): the smallest δ this randomizer can satisfy at any ε.

        Uniform: ``min(1, j/(2m + 1))`` with ``j = (snap(hi) − snap(lo))/Λ`` and
        ``m = ⌊w/(2Λ)⌋`` (exact, rounded up to a float); 0 for Gaussian and Laplace.
        """
        if self.noise != "uniform":
            return 0.0
        ratio = Fraction(self._snapped_span(), 2 * self.uniform_half_points + 1)
        if ratio >= 1:
            return 1.0
        out = float(ratio)
        return out if Fraction(out) >= ratio else math.nextafter(out, math.inf)

    def delta_at(self, epsilon: float) -> float:
        """The exact smallest δ at which the randomizer is (ε, δ)-LDP."""
        eps = check_real("epsilon", epsilon)
        if not eps >= 0:
            raise ParameterError(f"epsilon ({eps!r}) must be >= 0")
        if self.noise == "uniform":
            return self.delta_floor()
        if self.noise == "gaussian":
            return gaussian_delta(self.scale, eps, self.sensitivity)
        eps0 = self.sensitivity / self.scale
        return max(0.0, -math.expm1((eps - eps0) / 2.0)) if eps < eps0 else 0.0

    def privacy_events(self, delta: float | None = None) -> tuple[PrivacyEvent, ...]:
        """The accounting event of one report, from :meth:`guarantee` at ``delta``.

        ε-local DP (δ = 0) is a :class:`~ppdp.accounting.events.LocalRandomizer`; an
        (ε, δ) one an :class:`~ppdp.accounting.events.EpsilonDelta`. Raises
        :class:`~ppdp.exceptions.UnsupportedEventError` when there is no formal ε at ``delta``.
        """
        return guarantee_events(self, delta)

    def guarantee(self, delta: float | None = None) -> Guarantee:
        """The formal local-DP guarantee: the smallest ε at ``delta`` (None means δ = 0)."""
        d = 0.0 if delta is None else check_real("delta", delta)
        if not (0.0 <= d < 1.0):
            raise ParameterError(f"delta ({d!r}) must be in [0, 1)")
        details: dict[str, Any] = {
            "noise": self.noise,
            "scale": self.scale,
            "sensitivity": self.sensitivity,
            "grid": self.grid,
            **self.legacy_metrics(),
        }
        assumptions = (
            f"local model: any two inputs in the declared domain "
            f"[{self.domain[0]:g}, {self.domain[1]:g}]",
            "each respondent reports once; repeated fresh reports of a value compose",
            f"x snapped to the grid Λ = 2^{math.frexp(self.grid)[1] - 1} and the noise drawn "
            "on it: every report is a multiple of Λ",
        )
        eps: float | None = None
        if self.noise == "laplace":
            eps0 = self.sensitivity / self.scale
            eps = max(0.0, eps0 + 2.0 * math.log1p(-d)) if d > 0 else eps0
        elif self.noise == "gaussian":
            eps = _gaussian_epsilon(self.scale, self.sensitivity, d) if d > 0 else None
        else:
            floor = self.delta_floor()
            details["grid_points"] = 2 * self.uniform_half_points + 1
            eps = 0.0 if d >= floor else None
        if eps is None:
            if self.noise == "gaussian":
                reason = "no finite ε at δ=0 for Gaussian noise (pass delta > 0)"
            else:
                reason = (
                    f"no finite ε at δ={d:g} for uniform noise: the privacy loss is 0 or ±∞, "
                    f"with P(∞) = {self.delta_floor():.6g} (about D/w)"
                )
            return Guarantee.none(
                reason, mechanism=self._mechanism(), assumptions=assumptions, details=details
            )
        return Guarantee.local(
            eps, d, mechanism=self._mechanism(), assumptions=assumptions, details=details
        )

    # -- serialisation -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (inverse: :meth:`from_dict`)."""
        return {
            "type": "additive",
            "noise": self.noise,
            "scale": self.scale,
            "domain": list(self.domain),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdditiveRandomizer:
        """Rebuild from :meth:`to_dict` output."""
        if not isinstance(data, dict) or data.get("type", "additive") != "additive":
            raise ParameterError(f"not an additive randomizer description: {data!r}")
        dom = data.get("domain")
        if not isinstance(dom, list | tuple) or len(dom) != 2:
            raise ParameterError(f"domain ({dom!r}) must be a pair (lo, hi)")
        return cls(
            noise=data.get("noise", "gaussian"), scale=data["scale"], domain=(dom[0], dom[1])
        )


def _gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """The smallest ε with δ_BW(σ, ε) ≤ δ (bisection on the exact profile, rounded up)."""
    if gaussian_delta(sigma, 0.0, sensitivity) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(sigma, hi, sensitivity) > delta:
        hi *= 2.0
        if hi > 1e6:
            raise ParameterError(f"delta ({delta!r}) is too small for this Gaussian noise")
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(sigma, mid, sensitivity) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi
