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

import numpy as np
from numpy.typing import NDArray

__all__ = ["discrete_laplace_halfwidth", "laplace_mix_halfwidth", "round_to_noise"]

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
