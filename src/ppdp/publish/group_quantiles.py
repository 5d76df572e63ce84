"""Per-group quantiles by the exponential mechanism on the declared range (Smith 2011).

For a group of ``n`` values clipped to the declared ``[l, u]`` and sorted, ``v_1 ≤ … ≤ v_n``,
every point ``x`` of ``[l, u]`` has utility ``−|#{v < x} − p·n|`` (sensitivity 1: adding or
removing one value moves both the rank and ``p·n`` by at most 1 in total, as
``max(p, 1 − p) ≤ 1``), and the output has density ``∝ exp(ε_g · utility / 2)`` over
``[l, u]``: an ``ε_g``-DP release of the group's ``p``-quantile. It is sampled exactly as the
mechanism defines it: pick the gap ``[v_i, v_(i+1)]`` (``v_0 = l``, ``v_(n+1) = u``) with
probability ``∝ (v_(i+1) − v_i) · exp(−ε_g |i − p n| / 2)``, then a uniform point in it.
All groups are drawn at once. See ``docs/proofs/groupby-statistics.md``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp.random import RandomSource

__all__ = ["exponential_quantiles"]


def exponential_quantiles(
    groups: NDArray[np.int64],
    values: NDArray[np.float64],
    n_groups: int,
    p: float,
    epsilon: float,
    lower: float,
    upper: float,
    source: RandomSource,
) -> NDArray[np.float64]:
    """One ``epsilon``-DP ``p``-quantile per group (an empty group: uniform on the range).

    Parameters
    ----------
    groups : ndarray of int64, shape (n,)
        Each value's group in ``[0, n_groups)``.
    values : ndarray of float64, shape (n,)
        The values, clipped here to ``[lower, upper]``.
    n_groups : int
    p : float
        In (0, 1).
    epsilon : float
        ε of each group's draw.
    lower, upper : float
        The declared bounds.
    source : RandomSource

    Returns
    -------
    ndarray of float64, shape (n_groups,)
    """
    v = np.clip(np.asarray(values, dtype=np.float64), lower, upper)
    g = np.asarray(groups, dtype=np.int64)
    order = np.lexsort((v, g))
    v, g = v[order], g[order]
    counts = np.bincount(g, minlength=n_groups).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])  # first value of each group
    gaps = counts + 1
    seg_start = np.concatenate([[0], np.cumsum(gaps)[:-1]])  # first gap of each group
    seg = np.repeat(np.arange(n_groups), gaps)
    i = np.arange(int(gaps.sum())) - seg_start[seg]  # the gap's rank: values below it
    n = counts[seg]
    left_idx = np.clip(starts[seg] + i - 1, 0, max(len(v) - 1, 0))
    right_idx = np.clip(starts[seg] + i, 0, max(len(v) - 1, 0))
    if len(v):
        left = np.where(i == 0, lower, v[left_idx])
        right = np.where(i == n, upper, v[right_idx])
    else:
        left = np.full(i.shape, lower)
        right = np.full(i.shape, upper)
    length = np.maximum(right - left, 0.0)
    with np.errstate(divide="ignore"):
        logw = np.log(length) - epsilon * np.abs(i - p * n) / 2.0
    top = np.maximum.reduceat(logw, seg_start)
    w = np.exp(logw - top[seg])
    cs = np.cumsum(w)
    before = np.concatenate([[0.0], cs])[seg_start]
    total = cs[seg_start + gaps - 1] - before
    u = np.asarray(noise.uniform(2 * n_groups, random_state=source), dtype=np.float64)
    target = before + u[:n_groups] * total
    pick = np.searchsorted(cs, target, side="right")
    pick = np.clip(pick, seg_start, seg_start + gaps - 1)
    # side="right" never picks a gap of zero weight (a tie): its cumulative sum equals
    # the previous one, so no target lies in it.
    return np.clip(left[pick] + u[n_groups:] * length[pick], lower, upper)
