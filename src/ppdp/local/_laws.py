"""The integer noise laws of the characteristic-vector scheme and their exact privacy loss.

A law lives on the integers (lattice units). :class:`IntegerLaw` knows its log-pmf, its
mean and variance, a finite window ``[lo, hi]`` outside which the mass is negligible or
handled as a tail atom, and its sampler. :func:`delta_of_epsilon` and
:func:`smallest_epsilon` compute the exact (ε, δ) profile of the scheme for two inputs in
different regions (C.5 of the algorithms reference): the privacy loss of a report is the sum
of two independent per-coordinate losses, enumerated on the window.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_ndtr, polygamma, zeta
from scipy.stats import poisson as _poisson

from ppdp.local import _samplers
from ppdp.random import RandomSource

__all__ = [
    "IntegerLaw",
    "LossTable",
    "PrivacyProfile",
    "delta_of_epsilon",
    "loss_tables",
    "profile",
    "smallest_epsilon",
]

ZETA3 = float(zeta(3.0))
INVERSE_SQUARE_C = 6.0 / (2.0 * math.pi**2 - 6.0)

#: Window half-width of the heavy-tailed laws (inverse square, ζ(3)): the tail beyond it is
#: one atom whose loss is bounded by about 2h/W (inverse square) or 3h/W (ζ(3)), so δ(ε) is
#: exact for every ε above that bound and conservative below it.
_HEAVY_WINDOW = 1 << 12
#: The discrete normal is enumerated on ±(_NORMAL_SIGMAS·σ + 2 + h); the mass beyond
#: (< 1e-44) is counted as an infinite loss, so δ below that is never certified.
_NORMAL_SIGMAS = 14.0
_TINY_MASS = 1e-200


@dataclass(frozen=True, slots=True)
class IntegerLaw:
    """An integer noise law W (lattice units).

    Attributes
    ----------
    name : str
    support_min : int or None
        The smallest value with positive mass (None: unbounded below).
    mean, variance : float
        ``math.nan`` where the moment does not exist (``math.inf`` for an infinite one).
    logpmf : callable
        ``log P(W = x)`` for an int array, ``-inf`` off the support.
    sf : callable
        ``P(W ≥ t)`` for an int array.
    sample : callable ``(n, source) -> int64 array``
    window : callable ``(h) -> (lo, hi)``
        The values enumerated by the exact privacy computation for spike ``h``.
    tail_loss : callable ``(h, lo, hi) -> (l1_tail, l2_tail)``
        Upper bounds of the two per-coordinate losses over the values outside the window.
    bounded_loss : float or None
        The supremum of the privacy loss of a report (two coordinates), where finite.
    """

    name: str
    support_min: int | None
    mean: float
    variance: float
    logpmf: Callable[[NDArray[np.int64]], NDArray[np.float64]]
    sf: Callable[[NDArray[np.int64]], NDArray[np.float64]]
    sample: Callable[[int, RandomSource], NDArray[np.int64]]
    window: Callable[[int], tuple[int, int]]
    tail_loss: Callable[[int, int, int], tuple[float, float]]
    bounded_loss: Callable[[int], float | None]

    @property
    def has_mean(self) -> bool:
        """True when E|W| is finite."""
        return math.isfinite(self.mean)


def _log_diff_sf(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(Φ̄(a) − Φ̄(b))`` for a < b, stable in the upper tail."""
    la = log_ndtr(-a)
    lb = log_ndtr(-b)
    with np.errstate(divide="ignore"):
        return la + np.log1p(-np.exp(lb - la))


def _unbounded_tail(h: int, lo: int, hi: int) -> tuple[float, float]:
    return math.inf, math.inf


def discrete_normal(sigma: float) -> IntegerLaw:
    """``round(N(0, σ²))``: P(x) = Φ((x+½)/σ) − Φ((x−½)/σ)."""

    def logpmf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        ax = np.abs(np.asarray(x, dtype=np.float64))
        return _log_diff_sf((ax - 0.5) / sigma, (ax + 0.5) / sigma)

    def sf(t: NDArray[np.int64]) -> NDArray[np.float64]:
        t = np.asarray(t, dtype=np.float64)
        return np.exp(log_ndtr(-(t - 0.5) / sigma))

    def window(h: int) -> tuple[int, int]:
        w = math.ceil(_NORMAL_SIGMAS * sigma) + 2
        return -w - h, w + h

    var = _window_moment(logpmf, (-int(40 * sigma) - 2, int(40 * sigma) + 2), 2)
    return IntegerLaw(
        "discrete-normal",
        None,
        0.0,
        var,
        logpmf,
        sf,
        lambda n, src: _samplers.discrete_normal(sigma, n, src),
        window,
        _unbounded_tail,
        lambda h: None,
    )


def discrete_gaussian(sigma: float) -> IntegerLaw:
    """The discrete Gaussian ``N_ℤ(0, σ²)``: P(x) ∝ exp(−x²/(2σ²)) [CKS20]."""
    half = math.ceil(_NORMAL_SIGMAS * sigma) + 2
    grid = np.arange(-half, half + 1)
    log_w = -(grid.astype(np.float64) ** 2) / (2.0 * sigma * sigma)
    log_z = float(np.log(np.sum(np.exp(log_w - log_w.max())))) + float(log_w.max())
    pmf = np.exp(log_w - log_z)
    tail_sums = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])  # P(W ≥ grid[i])

    def logpmf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        xf = np.asarray(x, dtype=np.float64)
        return -(xf**2) / (2.0 * sigma * sigma) - log_z

    def sf(t: NDArray[np.int64]) -> NDArray[np.float64]:
        idx = np.clip(np.asarray(t, dtype=np.int64) + half, 0, grid.size)
        return np.asarray(tail_sums[idx], dtype=np.float64)

    def window(h: int) -> tuple[int, int]:
        return -half - h, half + h

    from ppdp import noise as _noise

    def sample(n: int, src: RandomSource) -> NDArray[np.int64]:
        return np.asarray(_noise.discrete_gaussian(sigma, n, random_state=src), dtype=np.int64)

    return IntegerLaw(
        "discrete-gaussian",
        None,
        0.0,
        float(np.sum(pmf * grid.astype(np.float64) ** 2)),
        logpmf,
        sf,
        sample,
        window,
        _unbounded_tail,
        lambda h: None,
    )


def poisson(rate: float) -> IntegerLaw:
    """Poisson(λ) on {0, 1, …}."""

    def logpmf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.asarray(_poisson.logpmf(np.asarray(x), rate), dtype=np.float64)

    def sf(t: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.asarray(_poisson.sf(np.asarray(t) - 1, rate), dtype=np.float64)

    def window(h: int) -> tuple[int, int]:
        return 0, math.ceil(rate + 40.0 * math.sqrt(rate) + 60) + h

    return IntegerLaw(
        "poisson",
        0,
        rate,
        rate,
        logpmf,
        sf,
        lambda n, src: _samplers.poisson(rate, n, src),
        window,
        _unbounded_tail,
        lambda h: None,
    )


def geometric(a: float) -> IntegerLaw:
    """``P(k) = (a − 1)/a**(k+1)`` on {0, 1, …}."""
    log_a = math.log(a)

    def logpmf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return np.where(x >= 0, math.log(a - 1.0) - (x + 1.0) * log_a, -np.inf)

    def sf(t: NDArray[np.int64]) -> NDArray[np.float64]:
        t = np.asarray(t, dtype=np.float64)
        return np.exp(-np.maximum(t, 0.0) * log_a)

    def window(h: int) -> tuple[int, int]:
        return 0, 2 * h + 2  # the loss is constant beyond: the tail atom is exact

    def tail_loss(h: int, lo: int, hi: int) -> tuple[float, float]:
        return h * log_a, -h * log_a

    return IntegerLaw(
        "geometric",
        0,
        1.0 / (a - 1.0),
        a / (a - 1.0) ** 2,
        logpmf,
        sf,
        lambda n, src: _samplers.geometric(a, n, src),
        window,
        tail_loss,
        lambda h: None,
    )


def zeta3() -> IntegerLaw:
    """``P(k) = 1/(ζ(3) k³)`` on {1, 2, …}: finite mean ζ(2)/ζ(3), infinite variance."""

    def logpmf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x >= 1, -3.0 * np.log(np.maximum(x, 1.0)) - math.log(ZETA3), -np.inf)

    def sf(t: NDArray[np.int64]) -> NDArray[np.float64]:
        t = np.maximum(np.asarray(t, dtype=np.float64), 1.0)
        return np.asarray(zeta(3.0, t), dtype=np.float64) / ZETA3

    def window(h: int) -> tuple[int, int]:
        return 1, _HEAVY_WINDOW + h

    def tail_loss(h: int, lo: int, hi: int) -> tuple[float, float]:
        # l1(w) = 3 ln((w + h)/w) decreases in w; l2(w) = 3 ln((w − h)/w) < 0.
        return 3.0 * math.log1p(h / (hi + 1.0)), 0.0

    return IntegerLaw(
        "zeta3",
        1,
        float(zeta(2.0)) / ZETA3,
        math.inf,
        logpmf,
        sf,
        lambda n, src: _samplers.zeta(3.0, n, src),
        window,
        tail_loss,
        lambda h: None,
    )


def inverse_square() -> IntegerLaw:
    """``P(x) = c/(|x| + 1)²`` on the integers, ``c = 6/(2π² − 6)``: no mean."""
    log_c = math.log(INVERSE_SQUARE_C)

    def logpmf(x: NDArray[np.int64]) -> NDArray[np.float64]:
        return log_c - 2.0 * np.log1p(np.abs(np.asarray(x, dtype=np.float64)))

    def sf(t: NDArray[np.int64]) -> NDArray[np.float64]:
        # P(W ≥ t) = c·ψ′(t + 1) for t ≥ 1 (Σ_{x ≥ t} (x + 1)^-2); symmetric below.
        t = np.asarray(t, dtype=np.float64)
        upper = INVERSE_SQUARE_C * np.asarray(polygamma(1, np.maximum(t, 1.0) + 1.0))
        lower = 1.0 - INVERSE_SQUARE_C * np.asarray(polygamma(1, np.maximum(-t, 0.0) + 2.0))
        return np.where(t >= 1, upper, np.where(t <= 0, lower, upper))

    def window(h: int) -> tuple[int, int]:
        return -_HEAVY_WINDOW - h, _HEAVY_WINDOW + h

    def tail_loss(h: int, lo: int, hi: int) -> tuple[float, float]:
        b = 2.0 * math.log1p(h / (min(-lo, hi) - h + 1.0))
        return b, b

    return IntegerLaw(
        "inverse-square",
        None,
        math.nan,
        math.nan,
        logpmf,
        sf,
        lambda n, src: _samplers.inverse_square(n, src),
        window,
        tail_loss,
        lambda h: 4.0 * math.log1p(h),
    )


def _window_moment(
    logpmf: Callable[[NDArray[np.int64]], NDArray[np.float64]], win: tuple[int, int], order: int
) -> float:
    x = np.arange(win[0], win[1] + 1)
    p = np.exp(logpmf(x))
    return float(np.sum(p * x.astype(np.float64) ** order))


# ------------------------------------------------------------------------ privacy loss


@dataclass(frozen=True, slots=True)
class LossTable:
    """The law of one per-coordinate privacy loss: sorted values and their masses.

    ``inf_mass`` is the probability of an infinite loss (an output impossible under the
    other input); the tail beyond the window is folded in as one atom at its loss bound.
    """

    values: NDArray[np.float64]
    masses: NDArray[np.float64]
    inf_mass: float


def _table(
    loss: NDArray[np.float64], mass: NDArray[np.float64], tail: float, tail_loss: float
) -> LossTable:
    # Masses below 1e-200 are counted as infinite loss (conservative, and it keeps
    # subnormal numbers, which are very slow on x86, out of δ(ε)).
    tiny = (mass > 0) & (mass < _TINY_MASS)
    inf = float(np.sum(mass[tiny]))
    keep = mass >= _TINY_MASS
    loss, mass = loss[keep], mass[keep]
    inf += float(np.sum(mass[np.isposinf(loss)]))
    fin = np.isfinite(loss)
    vals = np.concatenate([loss[fin], [tail_loss] if math.isfinite(tail_loss) else []])
    mass_f = np.concatenate([mass[fin], [tail] if math.isfinite(tail_loss) else []])
    if not math.isfinite(tail_loss):
        inf += tail
    uniq, inv = np.unique(vals, return_inverse=True)
    agg = np.zeros(uniq.size)
    np.add.at(agg, inv, mass_f)
    return LossTable(uniq, agg, inf)


def loss_tables(law: IntegerLaw, h: int) -> tuple[LossTable, LossTable]:
    """The laws of the two per-coordinate losses for inputs ``e_j`` (P) vs ``e_l`` (Q).

    Coordinate j: ``z = h + w`` under P, loss ``l1(w) = ln p(w) − ln p(w + h)``.
    Coordinate l: ``z = w`` under P, loss ``l2(w) = ln p(w) − ln p(w − h)``.
    """
    lo, hi = law.window(h)
    w = np.arange(lo, hi + 1, dtype=np.int64)
    lp = law.logpmf(w)
    mass = np.exp(lp)
    # The mass beyond the window, from the survival function (not 1 − Σ, which rounds).
    tail = float(law.sf(np.array([hi + 1]))[0]) + _left_tail(law, lo)
    t1, t2 = law.tail_loss(h, lo, hi)
    with np.errstate(invalid="ignore"):
        l1 = lp - law.logpmf(w + h)
        l2 = lp - law.logpmf(w - h)
    return _table(l1, mass, tail, t1), _table(l2, mass, tail, t2)


def _left_tail(law: IntegerLaw, lo: int) -> float:
    if law.support_min is not None:
        return 0.0 if lo <= law.support_min else 1.0
    return float(law.sf(np.array([1 - lo]))[0])  # the two-sided laws are symmetric


@dataclass(frozen=True, slots=True)
class PrivacyProfile:
    """The two loss tables with the suffix sums that make δ(ε) one O(m log m) pass.

    ``suf_m[i] = Σ_{r ≥ i} m2_r`` and ``suf_w[i] = Σ_{r ≥ i} m2_r e^{−l2_r}`` over the sorted
    second table; ``inf_mass = P(L = ∞)``.
    """

    v1: NDArray[np.float64]
    m1: NDArray[np.float64]
    v2: NDArray[np.float64]
    suf_m: NDArray[np.float64]
    suf_w: NDArray[np.float64]
    inf_mass: float
    top: float


def profile(tables: tuple[LossTable, LossTable]) -> PrivacyProfile:
    """Precompute the suffix sums of :func:`delta_of_epsilon` for a pair of loss tables."""
    t1, t2 = tables
    inf = t1.inf_mass + t2.inf_mass - t1.inf_mass * t2.inf_mass  # 1 − (1 − a)(1 − b)
    v2, m2 = t2.values, t2.masses
    suf_m = np.concatenate([np.cumsum(m2[::-1])[::-1], [0.0]])
    with np.errstate(over="ignore"):
        w2 = m2 * np.exp(-v2)
    suf_w = np.concatenate([np.cumsum(w2[::-1])[::-1], [0.0]])
    top = max(0.0, float(t1.values.max(initial=0.0) + v2.max(initial=0.0)))
    return PrivacyProfile(t1.values, t1.masses, v2, suf_m, suf_w, inf, top)


def delta_of_epsilon(prof: PrivacyProfile, epsilon: float) -> float:
    """Exact δ(ε) = P(L = ∞) + E_P[(1 − e^{ε − L})₊; L < ∞], L = l1 + l2 (independent)."""
    # Queries in ascending order (v1 is sorted ascending, so reverse): faster search.
    idx = np.searchsorted(prof.v2, (epsilon - prof.v1)[::-1], side="right")[::-1]
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        part = prof.suf_m[idx] - np.exp(epsilon - prof.v1) * prof.suf_w[idx]
    # Raise positive terms to at least 1e-100 (δ grows by < 1e-100: conservative) so the
    # products stay clear of subnormal numbers, which are very slow on x86.
    part = np.where(np.isfinite(part) & (part > 0.0), np.maximum(part, 1e-100), 0.0)
    # (np.sum of the product, not np.dot: BLAS threading makes a small dot slow under load)
    return min(1.0, prof.inf_mass + float(np.sum(prof.m1 * part)))


def smallest_epsilon(prof: PrivacyProfile, delta: float) -> float | None:
    """The smallest ε with δ(ε) ≤ delta (bisection, rounded up); None when none exists."""
    top = prof.top
    if delta_of_epsilon(prof, top) > delta:
        return None
    if delta_of_epsilon(prof, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, top
    while hi - lo > 1e-10 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if delta_of_epsilon(prof, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi
