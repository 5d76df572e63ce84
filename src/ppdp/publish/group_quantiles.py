"""Per-group quantiles by the exponential mechanism on a public grid of the declared range.

Each value clipped to the declared ``[l, u]`` is first moved to the nearest point of the
public grid ``l + i·(u − l)/GRID``, ``i = 0 … GRID`` (:func:`grid_cells`: a fixed per-value
map, at most ``(u − l)/2¹⁷`` away). For a group of ``n`` such values, sorted,
``v_1 ≤ … ≤ v_n``, every point ``x`` of ``[l, u]`` has utility ``−|#{v < x} − p·n|``
(sensitivity 1: adding or removing one value moves both the rank and ``p·n`` by at most 1
in total, as ``max(p, 1 − p) ≤ 1``), and the output has density ``∝ exp(ε_g · utility /
2)`` over ``[l, u]`` (Smith 2011): an ``ε_g``-DP release of the group's ``p``-quantile. It
is sampled exactly as the mechanism defines it: pick the gap ``[v_i, v_(i+1)]``
(``v_0 = l``, ``v_(n+1) = u``) with probability ``∝ (v_(i+1) − v_i) · exp(−ε_g |i − p n| /
2)``, then a uniform point in it.

On the grid, the values of a group are its histogram, :class:`CellCounts` (one count per
occupied grid point): gaps between tied values have length 0 and weight 0, so the draw
reads the histogram only. Histograms add across partitions, so a Parquet dataset or a Dask
DataFrame gives the in-memory draws exactly for one seed. All groups are drawn at once.
See ``docs/proofs/groupby-statistics.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp.random import RandomSource

__all__ = ["GRID", "CellCounts", "exponential_quantiles", "grid_cells", "histogram_quantiles"]

_Ints = NDArray[np.int64]

#: Intervals of the public grid of each declared range (``GRID + 1`` points).
GRID_BITS = 16
GRID = 2**GRID_BITS


def grid_cells(values: NDArray[np.float64], lower: float, upper: float) -> _Ints:
    """Each value's nearest grid point, ``i`` in ``[0, GRID]`` for ``l + i·(u − l)/GRID``
    (values clipped to ``[lower, upper]`` first)."""
    v = np.clip(np.asarray(values, dtype=np.float64), lower, upper)
    return np.rint((v - lower) * (GRID / (upper - lower))).astype(np.int64).clip(0, GRID)


def grid_values(cells: _Ints, lower: float, upper: float) -> NDArray[np.float64]:
    """The values of grid points ``cells`` (the last one is ``upper`` exactly)."""
    return np.minimum(lower + np.asarray(cells, dtype=np.float64) * ((upper - lower) / GRID), upper)


@dataclass(frozen=True)
class CellCounts:
    """A sparse histogram of grid points per group: one entry per occupied (group, point),
    sorted by group then point. Partition values add with ``+``.

    Attributes
    ----------
    groups, cells, counts : ndarray of int64
        The group, the grid point (``[0, GRID]``) and the number of values there.
    """

    groups: _Ints
    cells: _Ints
    counts: _Ints

    @classmethod
    def of(cls, groups: _Ints, cells: _Ints, counts: _Ints | None = None) -> CellCounts:
        """The histogram of values at ``cells`` in ``groups`` (``counts`` each, default 1)."""
        g = np.asarray(groups, dtype=np.int64).reshape(-1)
        c = np.asarray(cells, dtype=np.int64).reshape(-1)
        if g.size == 0:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty.copy(), empty.copy())
        key = g * (GRID + 1) + c
        if counts is None:  # one value per entry: sorting the keys themselves is enough
            first, total = np.unique(key, return_counts=True)
        else:
            order = np.argsort(key)
            key = key[order]
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            total = np.add.reduceat(np.asarray(counts, dtype=np.int64)[order], starts)
            first = key[starts]
        return cls(first // (GRID + 1), first % (GRID + 1), total.astype(np.int64))

    @classmethod
    def joined(cls, parts: list[tuple[CellCounts, _Ints]]) -> CellCounts:
        """The sum of histograms, each with group ``g`` renamed ``new_group[g]`` (dropped
        where ``< 0``): ``(histogram, new_group)`` pairs, sorted once."""
        groups = [np.asarray(m, dtype=np.int64)[h.groups] for h, m in parts]
        keep = [g >= 0 for g in groups]
        return cls.of(
            np.concatenate([g[k] for g, k in zip(groups, keep, strict=True)]),
            np.concatenate([h.cells[k] for (h, _), k in zip(parts, keep, strict=True)]),
            np.concatenate([h.counts[k] for (h, _), k in zip(parts, keep, strict=True)]),
        )

    def __add__(self, other: CellCounts) -> CellCounts:
        return CellCounts.of(
            np.concatenate([self.groups, other.groups]),
            np.concatenate([self.cells, other.cells]),
            np.concatenate([self.counts, other.counts]),
        )

    def regroup(self, new_group: _Ints) -> CellCounts:
        """The histogram with group ``g`` renamed ``new_group[g]`` (dropped where ``< 0``)."""
        return CellCounts.joined([(self, new_group)])


def histogram_quantiles(
    hist: CellCounts,
    n_groups: int,
    p: float,
    epsilon: float,
    lower: float,
    upper: float,
    source: RandomSource,
) -> NDArray[np.float64]:
    """One ``epsilon``-DP ``p``-quantile per group of ``hist`` (an empty group: uniform on
    the range), the exponential mechanism on the grid values of the histogram.

    Parameters
    ----------
    hist : CellCounts
        Groups in ``[0, n_groups)``.
    n_groups : int
    p : float
        In (0, 1).
    epsilon : float
        ε of each group's draw.
    lower, upper : float
        The declared bounds (the grid's).
    source : RandomSource

    Returns
    -------
    ndarray of float64, shape (n_groups,)
    """
    hist = CellCounts.joined([(hist, np.arange(n_groups))])  # sorted, one entry per point
    pts = grid_values(hist.cells, lower, upper)
    m = np.bincount(hist.groups, minlength=n_groups).astype(np.int64)  # occupied points
    cum = np.concatenate([[0], np.cumsum(hist.counts)])  # values before each entry
    pstart = np.concatenate([[0], np.cumsum(m)[:-1]]).astype(np.int64)  # group's first entry
    n = cum[pstart + m] - cum[pstart]  # values per group
    gaps = m + 1
    seg_start = np.concatenate([[0], np.cumsum(gaps)[:-1]]).astype(np.int64)
    seg = np.repeat(np.arange(n_groups), gaps)
    i = np.arange(int(gaps.sum())) - seg_start[seg]  # the gap's place: entries below it
    at = pstart[seg] + i  # the entry above the gap (the group's end for the last gap)
    rank = cum[at] - cum[pstart[seg]]  # values below the gap
    last = max(len(pts) - 1, 0)
    if len(pts):
        left = np.where(i == 0, lower, pts[np.clip(at - 1, 0, last)])
        right = np.where(i == m[seg], upper, pts[np.clip(at, 0, last)])
    else:
        left = np.full(i.shape, lower)
        right = np.full(i.shape, upper)
    length = np.maximum(right - left, 0.0)
    with np.errstate(divide="ignore"):
        logw = np.log(length) - epsilon * np.abs(rank - p * n[seg]) / 2.0
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
    """One ``epsilon``-DP ``p``-quantile per group of raw values (an empty group: uniform
    on the range): :func:`histogram_quantiles` of their grid histogram.

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
    hist = CellCounts.of(groups, grid_cells(values, lower, upper))
    return histogram_quantiles(hist, n_groups, p, epsilon, lower, upper, source)
