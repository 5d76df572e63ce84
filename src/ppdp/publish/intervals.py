"""Confidence intervals of released statistics, from the noise laws and released values.

Everything here is post-processing: its inputs are public noise scales and released
values. A statistic's error is, to first order, a linear combination ``Σ a_j Z_j`` of the
independent noises of the parts it reads (a count, a sum, a sum of squares), each a
(discrete) Laplace of scale ``b_j``; the combination is Laplace-like with scales
``s_j = |a_j|·b_j``, and its two-sided quantile is exact (below). See
``docs/proofs/groupby-statistics.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_ndtr, ndtri

__all__ = [
    "discrete_laplace_halfwidth",
    "laplace_mix_halfwidth",
    "round_to_noise",
    "selected_count_interval",
]

#: Adjacent scales of a mix are kept at least this ratio apart (1.02) (the larger ones raised:
#: wider, never narrower) so the partial fractions below stay well conditioned.
_SEPARATION = 1.02


def discrete_laplace_halfwidth(scale: float, level: float) -> int:
    """The least integer ``k`` with ``P(|Z| > k) = 2 q^(k+1)/(1 + q) ≤ 1 − level`` for ``Z``
    discrete Laplace of scale ``scale`` (``q = e^(−1/scale)``): ``[x − k, x + k]`` covers
    ``x`` with probability at least ``level``."""
    q = math.exp(-1.0 / scale)
    k = max(0, math.ceil(math.log((1.0 - level) * (1.0 + q) / 2.0) / math.log(q)) - 1)
    while 2.0 * q ** (k + 1) / (1.0 + q) > 1.0 - level:
        k += 1
    return k


def _separate(scales: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scales sorted descending along axis 0 with ``s_i ≥ 1.15 s_(i+1)`` (raising; 1.02)."""
    s = -np.sort(-scales, axis=0)
    for i in range(s.shape[0] - 2, -1, -1):
        s[i] = np.maximum(s[i], _SEPARATION * s[i + 1])
    return s


def laplace_mix_halfwidth(scales: NDArray[np.float64], level: float) -> NDArray[np.float64]:
    """The half-width ``t`` with ``P(|Σ_j L_j| > t) = 1 − level`` for independent Laplace
    ``L_j`` of scales ``scales[j]`` (shape ``(k, G)``: ``k`` terms, ``G`` statistics).

    For distinct scales ``a_i`` the characteristic function ``Π 1/(1 + a_i²ω²)`` splits into
    partial fractions, so ``P(|Σ L_j| > t) = Σ_i c_i e^(−t/a_i)`` with
    ``c_i = Π_(j≠i) a_i²/(a_i² − a_j²)``. Scales closer than a ratio 1.02 are first moved
    apart by raising the larger (a wider interval); zero scales drop out. Solved by
    bisection, to a relative 1e-9.
    """
    s = np.atleast_2d(np.asarray(scales, dtype=np.float64))
    s = np.where(np.isfinite(s), np.abs(s), np.nan)
    s = _separate(np.nan_to_num(s, nan=0.0))
    k, G = s.shape
    alpha = 1.0 - level
    live = s > 0
    c = np.zeros_like(s)
    for i in range(k):
        ci = np.ones(G)
        for j in range(k):
            if j != i:
                # a zero scale contributes a factor 1 (it is not a term)
                ratio = np.where(live[j], s[i] ** 2 / (s[i] ** 2 - s[j] ** 2), 1.0)
                ci = ci * np.where(live[i], ratio, 0.0)
        c[i] = np.where(live[i], ci, 0.0)

    def tail(t: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            terms = np.where(live, c * np.exp(-t / np.where(live, s, 1.0)), 0.0)
        return terms.sum(axis=0)

    hi = np.where(live.any(axis=0), s.sum(axis=0) * math.log(k / alpha + 1.0) * 2.0, 0.0)
    lo = np.zeros(G)
    for _ in range(64):  # the bracket shrinks 2**64-fold: far below a relative 1e-9
        mid = (lo + hi) / 2.0
        above = tail(mid) > alpha
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return hi


def round_to_noise(
    values: NDArray[np.float64], halfwidth: NDArray[np.float64], digits: int | None
) -> NDArray[np.float64]:
    """Round ``values`` to ``digits`` decimals, or (``digits=None``) each to the decimal of
    its interval's half-width's second significant digit: ``±2.3`` keeps one decimal,
    ``±230`` none beyond the tens (``1234.5 → 1230``)."""
    v = np.asarray(values, dtype=np.float64)
    # + 0.0 turns a -0.0 (a small negative value rounded to zero) into 0.0: "-0.0" in a
    # released table reads as a sign the rounding erased.
    if digits is not None:
        return np.round(v, digits) + 0.0
    hw = np.asarray(halfwidth, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(np.isfinite(hw) & (hw > 0), 1 - np.floor(np.log10(hw)), 15)
    d = np.clip(d, -15, 15).astype(np.int64)
    scale = 10.0 ** d.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(np.isfinite(v), np.round(v * scale) / scale + 0.0, v)


def _log_survival(law: str, scale: float, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log P(Z ≥ x)``: ``Z`` discrete Laplace of scale ``scale`` (``x`` integers) or
    ``N(0, scale²)``."""
    if law == "gauss":
        return np.asarray(log_ndtr(-x / scale), dtype=np.float64)
    log_q = -1.0 / scale
    log_1q = math.log1p(math.exp(log_q))
    # P(Z ≥ k) = q^k/(1 + q) for k ≥ 1, and 1 − q^(1−k)/(1 + q) for k ≤ 0 (symmetry)
    pos = x * log_q - log_1q
    with np.errstate(over="ignore", divide="ignore"):  # the branch not taken may be -inf
        neg = np.log1p(-np.exp(np.minimum((1.0 - x) * log_q - log_1q, 0.0)))
    return np.where(x >= 1.0, pos, neg)


def selected_count_interval(
    released: NDArray[np.float64],
    law: str,
    scale: float,
    threshold: NDArray[np.float64],
    level: float,
    floor: float | NDArray[np.float64] = 0.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``level`` interval ``[lo, hi]`` of each integer true count ``c ≥ floor`` given its
    released count ``r`` *and that the key was released because its noisy count
    ``N = c + Z`` passed ``threshold``* (``N ≥ threshold``; −inf: no condition).

    ``law`` is ``"dlap"`` (``Z`` discrete Laplace of scale ``scale``, ``r = N``) or
    ``"gauss"`` (``Z ~ N(0, scale²)``, ``r = rint(N)``). The law of ``r`` given the
    selection is the noise's truncated at ``threshold − c``, stochastically increasing in
    ``c`` (a log-concave location family keeps its monotone likelihood ratio when
    truncated). ``hi`` is the largest ``c`` with ``P_c(R ≤ r | N ≥ τ) > α/2``
    (``α = 1 − level``), a test of size ``α_L(c) ≤ α/2``; ``lo`` the least ``c`` with
    ``P_c(R ≥ r | N ≥ τ) > α/2 + max(0, α_F − α_L(c))``, ``α_F`` the first test's size
    without a threshold: near τ the truncation leaves the first test little or nothing to
    reject, and the second gets what it lost. The interval misses the truth with
    probability at most ``α/2 + max(α_L(c), α_F) ≤ α`` *conditionally on the release*.
    Far above the threshold, or without one (−inf), it is the noise's own interval
    (``r ± k`` for discrete Laplace). See docs/proofs/partition-selection.md, Intervals of
    selected keys.
    """
    r = np.asarray(released, dtype=np.float64)
    tau = np.broadcast_to(np.asarray(threshold, dtype=np.float64), r.shape)
    floor_ = np.broadcast_to(np.asarray(floor, dtype=np.float64), r.shape)
    half = (1.0 - level) / 2.0
    # Far above the threshold the condition changes no tail probability in floating point
    # (P(Z ≥ τ − c) = 1 to below 1e-17 over the whole search): the noise's own interval.
    if law == "dlap":
        k = float(discrete_laplace_halfwidth(scale, level))
        lo, hi, margin = r - k, r + k, k + 1.0 + 40.0 * scale
    elif law == "gauss":
        z = float(ndtri(1.0 - half)) * scale
        lo, hi = np.floor(r - 0.5 - z) + 1.0, np.ceil(r + 0.5 + z) - 1.0
        margin = z + 2.0 + 12.0 * scale
    else:
        raise ValueError(f"law ({law!r}) must be 'dlap' or 'gauss'")
    lo, hi = np.maximum(lo, floor_), np.maximum(hi, floor_)
    near = np.flatnonzero(r < tau + margin)
    if near.size:
        lo[near], hi[near] = _truncated_interval(
            r[near], law, scale, tau[near], half, floor_[near].copy()
        )
    return lo, hi


def _truncated_interval(
    r: NDArray[np.float64],
    law: str,
    scale: float,
    tau: NDArray[np.float64],
    half: float,
    floor_: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`selected_count_interval` by its tests (``half = α/2``), for keys near τ."""
    level = 1.0 - 2.0 * half
    if law == "dlap":
        # integer noisy counts: N ≥ τ is N ≥ ⌈τ⌉; R = N
        t = np.ceil(tau)
        at_least = r
        reach = float(discrete_laplace_halfwidth(scale, level)) + 1.0
    else:
        t = tau
        at_least = np.maximum(tau, r - 0.5)
        reach = float(ndtri(1.0 - half)) * scale + 1.5

    def p_at_least(c: NDArray[np.float64], a: Any = None, t: Any = t) -> NDArray[np.float64]:
        """P_c(R ≥ r | N ≥ τ) (``a`` the least noisy count giving r or more)."""
        a = at_least if a is None else a
        tail = _log_survival(law, scale, a - c) - _log_survival(law, scale, t - c)
        return np.exp(np.minimum(tail, 0.0))

    def at_most(x: NDArray[np.float64], c: NDArray[np.float64], t: Any) -> NDArray[np.float64]:
        """P_c(R ≤ x | N ≥ t), for released counts x ≥ the least."""
        edge = x + 1.0 if law == "dlap" else x + 0.5
        tail = _log_survival(law, scale, edge - c) - _log_survival(law, scale, t - c)
        return -np.expm1(np.minimum(tail, 0.0))

    def lower_size(c: NDArray[np.float64], t: Any) -> NDArray[np.float64]:
        """The true size of the lower-tail test at ``c``: the largest ``P_c(R ≤ j | ·)``
        that is ≤ α/2 (0 where even the least released count has more)."""
        first = np.ceil(t) if law == "dlap" else np.rint(t)
        first = np.where(np.isfinite(first), first, c - 2.0 * reach)
        j = _least(lambda x: at_most(x, c, t) > half, first, c + reach) - 1.0
        return np.where(j >= first, at_most(j, c, t), 0.0)

    base = np.maximum(np.floor(r), floor_)
    hi = _least(lambda c: at_most(r, c, t) <= half, base, base + reach) - 1.0
    # The lower-tail test (it sets hi) rejects c with probability lower_size(c) ≤ α/2. Near
    # the threshold the truncation leaves it less (none at all for the c whose least
    # released count alone has mass > α/2); what it loses against the untruncated noise
    # (size_free, the same for every c) goes to the upper-tail test (it sets lo), so the
    # two together still miss at most α/2 + size_free ≤ α, and far from the threshold
    # lo is the unconditional one.
    size_free = float(lower_size(np.zeros(1), -np.inf)[0])
    # lo ∈ [floor, r] (P_r(R ≥ r | ·) ≥ 1/2): c is rejected where P_c(R ≥ r | ·) ≤ its
    # upper size, which lies in [α/2, α/2 + size_free]: between the two bisections, scan.
    lo = _least(lambda c: p_at_least(c) > half, floor_, base)
    sure = _least(lambda c: p_at_least(c) > half + size_free, floor_, base)
    open_ = np.flatnonzero(lo < sure)
    while open_.size:  # each step: the keys whose lo is still being scanned
        c, a, tt = lo[open_], at_least[open_], t[open_]
        up = half + np.maximum(size_free - lower_size(c, tt), 0.0)
        found = (p_at_least(c, a, tt) > up) | (c >= sure[open_])
        lo[open_[~found]] += 1.0
        open_ = open_[~found]
    return lo, np.maximum(hi, lo)


def _least(
    ok: Callable[[NDArray[np.float64]], NDArray[np.bool_]],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The least integer ``c`` in ``[lo, hi]`` with ``ok(c)`` (``ok`` monotone: false then
    true), ``hi`` where ``ok(hi)`` is false; integer bisection."""
    lo, hi = lo.copy(), hi.copy()
    while np.any(lo < hi):
        mid = np.floor((lo + hi) / 2.0)
        yes = ok(mid)
        hi = np.where(yes, mid, hi)
        lo = np.where(yes | (lo >= hi), lo, mid + 1.0)
    return lo
