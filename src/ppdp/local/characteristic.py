"""Wu's characteristic-vector scheme: one-hot region indicator plus integer lattice noise.

Privacy argument and the exact (ε, δ) computation: ``docs/proofs/local-randomizers.md``.
"""

from __future__ import annotations

import functools
import logging
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_int, check_option, check_positive, check_real
from ppdp.accounting.events import PrivacyEvent
from ppdp.budget import Guarantee
from ppdp.exceptions import (
    DataValidationError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.local import _laws
from ppdp.local._protocol import guarantee_events
from ppdp.local.reconstruction import Reconstruction, project_to_simplex
from ppdp.random import RandomState, resolve_random_state

__all__ = ["CV_NOISES", "CharacteristicVectorRandomizer"]

CVNoise = Literal[
    "discrete-normal", "discrete-gaussian", "poisson", "geometric", "zeta3", "inverse-square"
]
CV_NOISES: tuple[str, ...] = (
    "discrete-normal",
    "discrete-gaussian",
    "poisson",
    "geometric",
    "zeta3",
    "inverse-square",
)
_PARAMS = {
    "discrete-normal": "sigma",
    "discrete-gaussian": "sigma",
    "poisson": "rate",
    "geometric": "a",
    "zeta3": None,
    "inverse-square": None,
}
_ESTIMATORS = ("auto", "mean", "threshold")
#: Largest |report coordinate| accepted (lattice units): the samplers never exceed it in
#: practice (mass beyond is below 2**-50 for every law) and sums stay exact in int64.
_MAX_REPORT = 2**53
#: Largest spike h = 1/γ: the exact privacy computation enumerates about 2h lattice points.
_MAX_SPIKE = 1 << 16


#: Each noise's law, from its one parameter (None for the parameter-free laws).
_LAWS = {
    "discrete-normal": lambda p: _laws.discrete_normal(float(p)),
    "discrete-gaussian": lambda p: _laws.discrete_gaussian(float(p)),
    "poisson": lambda p: _laws.poisson(float(p)),
    "geometric": lambda p: _laws.geometric(float(p)),
    "zeta3": lambda p: _laws.zeta3(),
    "inverse-square": lambda p: _laws.inverse_square(),
}


@functools.lru_cache(maxsize=64)
def _law(noise: str, param: float | None) -> _laws.IntegerLaw:
    return _LAWS[noise](param)  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=64)
def _profile(noise: str, param: float | None, h: int) -> _laws.PrivacyProfile:
    return _laws.profile(_laws.loss_tables(_law(noise, param), h))


@functools.lru_cache(maxsize=256)
def _epsilon_at(noise: str, param: float | None, h: int, delta: float) -> float | None:
    return _laws.smallest_epsilon(_profile(noise, param, h), delta)


@functools.lru_cache(maxsize=256)
def _map_uniform(noise: str, param: float | None, h: int, k: int) -> float:
    return cv_map_success(
        CharacteristicVectorRandomizer(regions=k, noise=noise, gamma=1.0 / h, **_kw(noise, param)),  # type: ignore[arg-type]
        np.full(k, 1.0 / k),
    )


def _kw(noise: str, param: float | None) -> dict[str, float]:
    name = _PARAMS[noise]
    return {} if name is None or param is None else {name: param}


@functools.lru_cache(maxsize=64)
def _best_threshold(noise: str, param: float | None, h: int) -> tuple[int, float, float]:
    """The threshold t minimising the low-frequency variance of the indicator estimator."""
    law = _law(noise, param)
    lo, hi = law.window(h)
    if hi - lo > 20_000:  # heavy tails: the optimum is near the spike
        lo, hi = max(lo, -4096 - h), min(hi, 4096 + h)
    t = np.arange(lo, hi + 1)
    a = law.sf(t - h)  # P(W ≥ t − h): coordinate whose bit is 1
    b = law.sf(t)  # P(W ≥ t): bit 0
    gap = a - b
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(gap > 1e-12, b * (1.0 - b) / gap**2, np.inf)
    i = int(np.argmin(score))
    return int(t[i]), float(a[i]), float(b[i])


def _check_gamma(gamma: Any) -> tuple[float, int]:
    g = check_positive("gamma", gamma)
    m = round(1.0 / g)
    if m < 1 or abs(m * g - 1.0) > 1e-9:
        raise ParameterError(
            f"gamma ({g!r}) must be the inverse of a positive integer (1, 0.5, 0.333…, 0.25, …)"
        )
    if m > _MAX_SPIKE:
        raise ParameterError(f"gamma ({g!r}) must be >= 1/{_MAX_SPIKE} (the spike 1/γ is capped)")
    return 1.0 / m, int(m)


@dataclass(frozen=True, kw_only=True)
class CharacteristicVectorRandomizer:
    """Wu's characteristic-vector randomizer: ``z = χ(x) + y`` on the lattice ``γℤᵏ``.

    The respondent maps the value to its region ``j`` (one of ``k``), forms the one-hot
    vector ``e_j`` and adds ``k`` independent integer noise draws scaled by ``γ``. Reports
    are **integers in lattice units**: ``report = z/γ = h·e_j + W`` with spike ``h = 1/γ``
    and ``W`` iid from the noise law.

    Guarantee: ε-local DP, or (ε, δ)-local DP, for any two inputs of one respondent (in
    different regions), exactly as computed by :meth:`guarantee` (C.5): inverse-square noise
    is pure ``4·ln(1 + h)``-LDP; the discrete normal is (ε, δ)-LDP for every δ > 0 (never
    pure); the discrete Gaussian likewise, and is also ``h²/σ²``-zCDP; Poisson needs
    ``δ ≥ P(Pois(λ) < h)``; geometric is exactly ``(0, 1 − a^{−h})``;
    ζ(3) noise gives ``δ ≥ P(W < h + 1)`` ≈ 0.83 at h = 1, i.e. nothing. Each respondent
    must report once: fresh reports of the same value compose.

    Parameters
    ----------
    regions : int or sequence of float, optional
        ``k ≥ 2`` abstract regions (values are region indices ``0..k−1``), or ``k + 1``
        increasing edges (values are reals in ``[edges[0], edges[-1]]``; region ``j`` is
        ``[edges[j], edges[j+1])``, the last one closed). Declared, never inferred from data.
    categories : sequence, optional
        ``k ≥ 2`` distinct labels (str or int); values are labels. Give exactly one of
        ``regions`` and ``categories``.
    noise : {"discrete-normal", "discrete-gaussian", "poisson", "geometric", "zeta3", \
"inverse-square"}
        The per-coordinate law of ``W`` (lattice units): ``round(N(0, σ²))`` (Wu's);
        the discrete Gaussian ``∝ exp(−x²/(2σ²))`` (Canonne–Kamath–Steinke, not in Wu's
        report); Poisson(λ);
        ``P(k) = (a − 1)/a^{k+1}``, k ≥ 0; ``1/(ζ(3)k³)``, k ≥ 1; ``c/(|x| + 1)²``.
    gamma : float, default 1.0
        The lattice step γ; must be ``1/m`` for a positive integer m.
    sigma, rate, a : float, optional
        The parameter of the chosen noise (σ > 0 in lattice units, λ > 0, a > 1); the other
        two must be left unset.

    Notes
    -----
    Numerical caveats: the samplers are those of :mod:`ppdp.local._samplers` (exact laws up
    to the 2**-53 resolution of :mod:`ppdp.noise`; outputs beyond 2**53 in magnitude cannot
    occur, a tail mass below 2**-50). Reports beyond ±2**53 are rejected.

    References
    ----------
    .. [Wu] C. W. Wu. A simple method of data perturbation and efficient algorithms for
       density estimation in privacy preserving data mining. IBM Research Report.
    .. [CKS20] C. Canonne, G. Kamath, T. Steinke. The discrete Gaussian for differential
       privacy. NeurIPS 2020.

    Examples
    --------
    >>> r = CharacteristicVectorRandomizer(regions=4, noise="inverse-square")
    >>> print(r.guarantee())  # doctest: +ELLIPSIS
    local differential privacy with ε=2.77259...
    >>> r.randomise([0, 3, 1], random_state=1).shape  # doctest: +SKIP
    (3, 4)
    """

    regions: int | Sequence[float] | None = None
    categories: Sequence[Any] | None = None
    noise: CVNoise = "discrete-normal"
    gamma: float = 1.0
    sigma: float | None = None
    rate: float | None = None
    a: float | None = None
    k: int = field(init=False)
    spike: int = field(init=False)
    edges: NDArray[np.float64] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_option("noise", self.noise, CV_NOISES)
        gamma, m = _check_gamma(self.gamma)
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "spike", m)
        needed = _PARAMS[self.noise]
        for name in ("sigma", "rate", "a"):
            value = getattr(self, name)
            if name != needed and value is not None:
                raise ParameterError(
                    f"{name} ({value!r}) is not a parameter of noise {self.noise!r}"
                )
        if needed is not None:
            value = getattr(self, needed)
            if value is None:
                raise ParameterError(f"{needed} (None) is required for noise {self.noise!r}")
            v = check_positive(needed, value)
            if needed == "a" and not v > 1.0:
                raise ParameterError(f"a ({v!r}) must be a finite number > 1")
            if needed == "rate" and v > 1e6:
                raise ParameterError(f"rate ({v!r}) must be <= 1e6")
            if needed == "sigma" and not (2.0**-20 <= v <= 1e4):
                raise ParameterError(f"sigma ({v!r}) must be in [2**-20, 10000]")
            object.__setattr__(self, needed, v)
        if (self.regions is None) == (self.categories is None):
            raise ParameterError("give exactly one of regions (k or edges) and categories")
        edges = None
        if self.categories is not None:
            if isinstance(self.categories, str) or not isinstance(self.categories, Sequence):
                raise ParameterTypeError(
                    f"categories ({self.categories!r}) must be a sequence of labels"
                )
            cats = tuple(self.categories)
            for c in cats:
                if isinstance(c, bool) or not isinstance(c, str | numbers.Integral):
                    raise ParameterTypeError(f"categories: label {c!r} must be a str or an int")
            if len(set(cats)) != len(cats):
                raise ParameterError("categories must be distinct")
            if len(cats) < 2:
                raise ParameterError(
                    f"categories ({len(cats)} given) must number at least 2 (k >= 2)"
                )
            object.__setattr__(self, "categories", cats)
            k = len(cats)
        elif isinstance(self.regions, (numbers.Integral, bool)):
            k = check_int("regions", self.regions, minimum=2)
            object.__setattr__(self, "regions", k)
        else:
            try:
                e = np.asarray(self.regions, dtype=np.float64)
            except (TypeError, ValueError):
                raise ParameterTypeError(
                    f"regions ({self.regions!r}) must be an int k >= 2 or a sequence of edges"
                ) from None
            if e.ndim != 1 or e.size < 3:
                raise ParameterError(
                    f"regions (edges of length {e.size}) must have at least 3 edges (k >= 2)"
                )
            if not np.all(np.isfinite(e)) or not np.all(np.diff(e) > 0):
                raise ParameterError("regions (edges) must be finite and strictly increasing")
            edges = e.copy()
            edges.flags.writeable = False
            object.__setattr__(self, "regions", tuple(float(x) for x in e))
            k = e.size - 1
        object.__setattr__(self, "k", int(k))
        object.__setattr__(self, "edges", edges)

    # -- noise law ---------------------------------------------------------------------

    @property
    def _param(self) -> float | None:
        name = _PARAMS[self.noise]
        return None if name is None else float(getattr(self, name))

    @property
    def law(self) -> _laws.IntegerLaw:
        """The noise law W in lattice units."""
        return _law(self.noise, self._param)

    @property
    def noise_mean(self) -> float:
        """E[W] in value units (γ·E W); NaN when the law has no mean."""
        return self.gamma * self.law.mean

    @property
    def noise_variance(self) -> float:
        """Var[W] in value units (γ²·Var W); inf or NaN where it does not exist."""
        return self.gamma**2 * self.law.variance

    # -- respondent side ---------------------------------------------------------------

    def region_of(
        self, values: ArrayLike, *, on_invalid: Literal["raise", "mask"] = "raise"
    ) -> NDArray[np.int64]:
        """The region index of each value; raises DataValidationError for undeclared values.

        ``on_invalid="mask"`` (total mode: no value-dependent error, for analyst-facing
        services) maps an undeclared category to the first one, clips a region index or a
        value into the declared range and maps a non-finite value to the first region; the
        count goes to the custodian log only.
        """
        check_option("on_invalid", on_invalid, ("raise", "mask"))
        mask = on_invalid == "mask"
        if self.categories is not None:
            index = {c: i for i, c in enumerate(self.categories)}
            seq = list(np.asarray(values, dtype=object).ravel())
            bad = sum(1 for v in seq if _label(v) not in index)
            if bad and mask:
                _log_masked(self, bad, len(seq))
                return np.array([index.get(_label(v), 0) for v in seq], dtype=np.int64)
            if bad:
                raise DataValidationError(
                    f"values: {bad} of {len(seq)} values are not among the declared "
                    f"categories ({len(self.categories)} labels)"
                )
            return np.array([index[_label(v)] for v in seq], dtype=np.int64)
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError):
            raise ParameterTypeError("values must be a regular array of numbers") from None
        if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
            raise ParameterTypeError(f"values must be numbers, not dtype {arr.dtype}")
        arr = arr.astype(np.float64).ravel()
        if self.edges is None:
            ok = np.isfinite(arr) & (arr == np.rint(arr)) & (arr >= 0) & (arr < self.k)
            if not np.all(ok) and mask:
                _log_masked(self, int(np.sum(~ok)), arr.size)
                arr = np.clip(np.rint(np.where(np.isfinite(arr), arr, 0.0)), 0, self.k - 1)
            elif not np.all(ok):
                raise DataValidationError(
                    f"values: {int(np.sum(~ok))} of {arr.size} values are not region indices "
                    f"0..{self.k - 1} (the declared regions)"
                )
            return arr.astype(np.int64)
        lo, hi = float(self.edges[0]), float(self.edges[-1])
        ok = np.isfinite(arr) & (arr >= lo) & (arr <= hi)
        if not np.all(ok) and mask:
            _log_masked(self, int(np.sum(~ok)), arr.size)
            arr = np.clip(np.where(np.isfinite(arr), arr, lo), lo, hi)
        elif not np.all(ok):
            raise DataValidationError(
                f"values: {int(np.sum(~ok))} of {arr.size} values lie outside the declared "
                f"regions [{lo:g}, {hi:g}]; clip or drop them before randomising"
            )
        idx = np.searchsorted(self.edges, arr, side="right") - 1
        return np.minimum(idx, self.k - 1).astype(np.int64)

    def randomise(
        self,
        values: ArrayLike,
        random_state: RandomState = None,
        *,
        on_invalid: Literal["raise", "mask"] = "raise",
    ) -> NDArray[np.int64]:
        """Perturb each value: returns an int64 array ``(n, k)`` of reports in lattice units.

        ``report[i] = h·e_{region(x_i)} + W_i`` (``z = γ·report``). Values are validated
        against the declared regions or categories first (one error, nothing drawn), or
        mapped into them with ``on_invalid="mask"`` (:meth:`region_of`).
        """
        idx = self.region_of(values, on_invalid=on_invalid)
        src = resolve_random_state(random_state)
        n = idx.size
        out = self.law.sample(n * self.k, src).reshape(n, self.k)
        out[np.arange(n), idx] += self.spike
        return out

    # -- collector side ----------------------------------------------------------------

    def check_report(self, reports: ArrayLike) -> NDArray[np.int64]:
        """Validate reports (shape, lattice, range); return them as an int64 ``(n, k)`` array.

        A single report may be given as a 1-D array of length ``k``.

        Raises
        ------
        DataValidationError
            Naming what is wrong: the number of coordinates, a non-integer (off-lattice)
            coordinate, a value outside the noise support, or a report impossible under
            every input.
        """
        try:
            arr = np.asarray(reports)
        except (TypeError, ValueError):
            raise DataValidationError(
                "reports must be a regular (n, k) array of integers"
            ) from None
        if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
            raise DataValidationError(
                f"reports must be integers in lattice units (report = z/γ), not dtype {arr.dtype}"
            )
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != self.k:
            raise DataValidationError(
                f"reports have shape {tuple(np.asarray(reports).shape)}; each report must have "
                f"k={self.k} coordinates (one per region)"
            )
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)):
                raise DataValidationError("reports contain NaN or infinity")
            if not np.all(arr == np.rint(arr)):
                raise DataValidationError(
                    "reports are off the lattice: coordinates must be integers in lattice "
                    f"units (report = z/γ with γ={self.gamma:g})"
                )
        if arr.size and (np.max(np.abs(arr.astype(np.float64))) > _MAX_REPORT):
            raise DataValidationError("reports contain a coordinate beyond ±2**53 (impossible)")
        out = arr.astype(np.int64)
        m0 = self.law.support_min
        if m0 is not None and out.size:
            if int(out.min()) < m0:
                raise DataValidationError(
                    f"reports contain a coordinate below {m0}, outside the support of the "
                    f"{self.noise} noise (coordinates must be >= {m0})"
                )
            if int(out.max(axis=1).min()) < m0 + self.spike:
                raise DataValidationError(
                    f"reports contain a report impossible under every input: some coordinate "
                    f"must be >= {m0 + self.spike} (= support minimum + 1/γ)"
                )
        return out

    def _estimator(self, estimator: str) -> str:
        check_option("estimator", estimator, _ESTIMATORS)
        if estimator == "auto":
            return "mean" if self.law.has_mean else "threshold"
        if estimator == "mean" and not self.law.has_mean:
            raise ParameterError(
                f"estimator ('mean') needs a noise law with a finite mean; {self.noise!r} has "
                "none (the sample mean never converges): use estimator='threshold'"
            )
        return estimator

    def threshold(self) -> int:
        """The lattice threshold t of the indicator estimator (counts of ``report ≥ t``)."""
        return _best_threshold(self.noise, self._param, self.spike)[0]

    def totals(self, reports: ArrayLike, *, estimator: str = "auto") -> NDArray[np.int64]:
        """The running-total contribution of a batch: what a collector adds up and keeps.

        ``estimator="mean"``: the coordinate sums of the reports; ``"threshold"``: per
        coordinate, the number of reports with ``report ≥ threshold()``; ``"auto"``: mean
        where the noise has a finite mean, else threshold. Reports are validated first.
        """
        est = self._estimator(estimator)
        arr = self.check_report(reports)
        if est == "mean":
            return arr.sum(axis=0, dtype=np.int64)
        return (arr >= self.threshold()).sum(axis=0, dtype=np.int64)

    def estimate_from_totals(
        self, totals: ArrayLike, count: int, *, estimator: str = "auto"
    ) -> Reconstruction:
        """The one-step estimate of the region frequencies from running totals.

        ``"mean"`` (Wu): ``p̂_j = γ·(T_j/n) − E[γW]``; ``"threshold"`` (C.5, consistent
        for every law, required for inverse-square noise): ``p̂_j = (T_j/n − B)/(A − B)``
        with ``A = P(W ≥ t − h)``, ``B = P(W ≥ t)``. Both are unbiased before the
        non-negativity step; the returned ``density`` is the Euclidean projection onto the
        probability simplex (not Wu's clipping at 0, which biases upward and breaks
        ``Σ p̂ = 1``), divided by the region widths where regions have edges. The unbiased
        vector is ``details["unbiased"]``. Pure post-processing: no privacy cost.

        Raises
        ------
        ParameterError
            ``estimator="mean"`` with a law that has no finite mean (inverse square).
        DataValidationError
            ``totals`` of the wrong length or not finite, or ``count`` < 1.
        """
        est = self._estimator(estimator)
        n = check_int("count", count, minimum=1)
        t = np.asarray(totals, dtype=np.float64)
        if t.shape != (self.k,) or not np.all(np.isfinite(t)):
            raise DataValidationError(
                f"totals must be {self.k} finite numbers (one per region), got shape {t.shape}"
            )
        if est == "mean":
            raw = self.gamma * (t / n - self.law.mean)
            per_item = self.noise_variance
            extra: dict[str, Any] = {}
        else:
            thr, a_, b_ = _best_threshold(self.noise, self._param, self.spike)
            if est == "threshold" and np.any((t < 0) | (t > n)):
                raise DataValidationError("threshold totals must be counts in [0, count]")
            raw = (t / n - b_) / (a_ - b_)
            per_item = b_ * (1.0 - b_) / (a_ - b_) ** 2
            extra = {"threshold": thr, "A": a_, "B": b_}
        probs = project_to_simplex(raw)
        if self.edges is not None:
            density = probs / np.diff(self.edges)
            edges: NDArray[np.float64] | None = np.array(self.edges)
            cats = None
        else:
            density = probs
            edges = None
            cats = self.categories if self.categories is not None else tuple(range(self.k))
        details = {
            "estimator": est,
            "count": n,
            "unbiased": [float(v) for v in raw],
            "n_var_per_item": _json_float(float(per_item)),
            **extra,
        }
        return Reconstruction(
            density=density,
            edges=edges,
            categories=cats,
            iterations=1,
            converged=True,
            method=f"characteristic-vector/{est}",
            details=details,
        )

    def estimate(self, reports: ArrayLike, *, estimator: str = "auto") -> Reconstruction:
        """:meth:`estimate_from_totals` of a batch of reports (validated)."""
        arr = self.check_report(reports)
        return self.estimate_from_totals(
            self.totals(arr, estimator=estimator), arr.shape[0], estimator=estimator
        )

    # -- guarantee ---------------------------------------------------------------------

    def _mechanism(self) -> str:
        name = _PARAMS[self.noise]
        par = "" if name is None else f", {name}={self._param:g}"
        return f"characteristic-vector({self.noise}, k={self.k}, γ={self.gamma:g}{par})"

    def delta_floor(self) -> float:
        """P(privacy loss = ∞): the smallest δ this randomizer can satisfy at any ε."""
        return _profile(self.noise, self._param, self.spike).inf_mass

    def delta_at(self, epsilon: float) -> float:
        """The exact smallest δ at which the randomizer is (ε, δ)-LDP."""
        eps = check_real("epsilon", epsilon)
        if not eps >= 0:
            raise ParameterError(f"epsilon ({eps!r}) must be >= 0")
        return _laws.delta_of_epsilon(_profile(self.noise, self._param, self.spike), eps)

    def privacy_events(self, delta: float | None = None) -> tuple[PrivacyEvent, ...]:
        """The accounting event of one report, from :meth:`guarantee` at ``delta``.

        ε-local DP (δ = 0) is a :class:`~ppdp.accounting.events.LocalRandomizer`; an
        (ε, δ) one an :class:`~ppdp.accounting.events.EpsilonDelta`. Raises
        :class:`~ppdp.exceptions.UnsupportedEventError` when there is no formal ε at ``delta``.
        """
        return guarantee_events(self, delta)

    def guarantee(self, delta: float | None = None) -> Guarantee:
        """The formal local-DP guarantee: the smallest ε at ``delta`` (C.5).

        ``delta=None`` means δ = 0: a pure ε where one exists (inverse square), otherwise a
        guarantee of kind ``none`` whose details carry the δ floor and the legacy figures.
        For δ > 0 the exact privacy-loss distribution of a report (two coordinates differ)
        is enumerated on the lattice and ε found by bisection (rounded up); kind ``none`` if
        δ is below the δ floor (support mismatch: Poisson, geometric, ζ(3)).
        """
        d = 0.0 if delta is None else _check_delta(delta)
        law = self.law
        pure = law.bounded_loss(self.spike)
        floor = self.delta_floor()
        details: dict[str, Any] = {
            "k": self.k,
            "gamma": self.gamma,
            "spike_lattice_units": self.spike,
            "noise": self.noise,
            "delta_floor": floor,
            "noise_mean": _json_float(self.noise_mean),
            "noise_variance": _json_float(self.noise_variance),
        }
        if self.noise == "discrete-normal":
            details["continuous_gaussian_sensitivity"] = math.sqrt(2.0) * self.spike
        if self.noise == "discrete-gaussian":
            # ρ-zCDP with ρ = ‖Δ‖²/(2σ²), Δ = h·(e_j − e_l) [CKS20]
            details["rho_zcdp"] = self.spike**2 / float(self.sigma) ** 2  # type: ignore[arg-type]
        details["map_success_uniform_prior"] = _map_uniform(
            self.noise, self._param, self.spike, self.k
        )
        details["map_success_no_report"] = 1.0 / self.k
        assumptions = (
            "local model: any two inputs of one respondent (different regions)",
            "each respondent reports once; repeated fresh reports of a value compose",
            "regions/categories declared, not inferred from the data",
            "idealised sampler up to the numerical caveats of ppdp.local._samplers",
        )
        eps: float | None
        if d == 0.0:
            eps = pure
        else:
            eps = _epsilon_at(self.noise, self._param, self.spike, d)
            if pure is not None and (eps is None or pure < eps):
                eps = pure
        if eps is None:
            if d == 0.0:
                reason = (
                    f"no finite ε at δ=0 for {self.noise} noise (unbounded privacy loss"
                    + (f"; δ must be ≥ {floor:.3g}" if floor > 0 else "; pass delta > 0")
                    + ")"
                )
            else:
                reason = (
                    f"no finite ε at δ={d:g}: an output possible under one input and impossible "
                    f"under another has probability {floor:.3g} > δ"
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
            "type": "characteristic-vector",
            "regions": (
                None
                if self.regions is None
                else self.regions
                if isinstance(self.regions, int)
                else list(self.regions)
            ),
            "categories": None if self.categories is None else list(self.categories),
            "noise": self.noise,
            "gamma": self.gamma,
            "sigma": self.sigma,
            "rate": self.rate,
            "a": self.a,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CharacteristicVectorRandomizer:
        """Rebuild from :meth:`to_dict` output."""
        if (
            not isinstance(data, dict)
            or data.get("type", "characteristic-vector") != "characteristic-vector"
        ):
            raise ParameterError(f"not a characteristic-vector randomizer description: {data!r}")
        return cls(
            regions=data.get("regions"),
            categories=data.get("categories"),
            noise=data.get("noise", "discrete-normal"),
            gamma=data.get("gamma", 1.0),
            sigma=data.get("sigma"),
            rate=data.get("rate"),
            a=data.get("a"),
        )


def _label(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _json_float(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _check_delta(delta: Any) -> float:
    d = check_real("delta", delta)
    if not (0.0 <= d < 1.0):
        raise ParameterError(f"delta ({d!r}) must be in [0, 1)")
    return d


def _log_masked(randomizer: Any, count: int, total: int) -> None:
    logging.getLogger("ppdp.custodian").info(
        "%s: %d of %d values outside the declared regions were masked",
        type(randomizer).__name__,
        count,
        total,
    )


# ------------------------------------------------ MAP success (read by ppdp.local.metrics)

#: Half-width (lattice units) of the window on which the CV metrics enumerate the noise;
#: beyond it the likelihood ratio of the heavy-tailed laws is within 2h/W of 1 and is
#: treated as 1 (an error below 1e-6 on the metrics).
_METRIC_WINDOW = 1 << 14


def _cv_ratio_law(
    r: CharacteristicVectorRandomizer,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The law of ``R = p(W − h)/p(W)`` for ``W ~ p``: sorted values and masses."""
    law, h = r.law, r.spike
    lo, hi = law.window(h)
    lo, hi = max(lo, -_METRIC_WINDOW - h), min(hi, _METRIC_WINDOW + h)
    w = np.arange(lo, hi + 1)
    lp = law.logpmf(w)
    mass = np.exp(lp)
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = np.exp(law.logpmf(w - h) - lp)
    keep = mass > 0
    ratio, mass = ratio[keep], mass[keep]
    tail = max(0.0, 1.0 - float(math.fsum(mass)))
    vals = np.concatenate([ratio, [1.0]])
    masses = np.concatenate([mass, [tail]])
    order = np.argsort(vals, kind="stable")
    return vals[order], masses[order]


def cv_map_success(r: CharacteristicVectorRandomizer, prior: NDArray[np.float64]) -> float:
    """``E[max_j π_j R_j]`` for iid ``R_j`` (= P(MAP correct) = Σ_z max_j π_j P(z | e_j)).

    The characteristic-vector case of :func:`ppdp.local.metrics.map_success_probability`
    (``prior``: normalised region probabilities); lives here because the randomizer's
    calibration reads it too.
    """
    v, m = _cv_ratio_law(r)
    cdf = np.cumsum(m)
    cdf = np.minimum(cdf / cdf[-1], 1.0)
    if np.allclose(prior, prior[0]):
        k = prior.size
        fk = cdf**k
        prev = np.concatenate([[0.0], fk[:-1]])
        return float(np.sum(v * (fk - prev)) / k)
    # General prior: P(max_j π_j R_j ≤ t) = Π_j F(t/π_j); integrate 1 − that over t ≥ 0.
    pts = np.unique(np.concatenate([pj * v for pj in prior if pj > 0] + [np.zeros(1)]))
    log_prod = np.zeros(pts.size)
    for pj in prior:
        if pj <= 0:
            continue
        # compare in the scaled space: pts holds exactly these products (no division)
        idx = np.searchsorted(pj * v, pts, side="right") - 1
        f = np.where(idx >= 0, cdf[np.maximum(idx, 0)], 0.0)
        with np.errstate(divide="ignore"):
            log_prod += np.log(f)
    g = 1.0 - np.exp(log_prod)  # P(max > t) on [pts[i], pts[i+1])
    return float(np.sum(g[:-1] * np.diff(pts)))
