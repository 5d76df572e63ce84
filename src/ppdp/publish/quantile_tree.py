"""Per-group quantiles with intervals, from a noisy hierarchical histogram (a tree).

The public grid of each declared range (:mod:`ppdp.publish.group_quantiles`) has
``LEAVES = 2¹⁶`` leaves here: grid point ``i`` is leaf ``min(i, LEAVES − 1)`` (the last two
points share a leaf). Per group a tree of ``LEVELS = 4`` levels of ``BRANCH = 16`` children
(no root: 16 + 256 + 4096 + 65536 nodes) counts the group's values under each node; every
count gets independent discrete Laplace noise. A value sits under one node per level, so
one row moves a group's tree by at most ``LEVELS`` in L1.

For a leaf ``x`` the nodes of the canonical split of the leaves into ``[0, x]`` and
``(x, end]`` (at each level the siblings of ``x``'s ancestor, and the leaf ``x`` itself)
give ``D(x) = (1 − p)·Σ_left − p·Σ_right``: a noisy ``#{v ≤ x} − p·n`` (the count ``n``
read from the same nodes) whose noise is a weighted sum of ``a`` and ``c`` node noises,
its law known from the public scale. A top-down search for a target ``τ`` reads the tree
from the top, at every level taking the first of the current node's 16 children whose end
has ``D ≥ τ`` (the last child if none has): ``D`` at a child's end needs the nodes of that
level and above only. The quantile is the search for ``τ = 0``; the interval's ends are
the searches for ``τ = −t`` and ``τ = +t``, ``t`` the two-sided ``level`` quantile of the
noise of ``D`` at the child's end (Cornish–Fisher, from its variance and fourth cumulant),
each end widened by half a grid step (a grid point holds the values rounded to it). See
``docs/proofs/groupby-statistics.md`` for the coverage argument and its measurement.

Node noise is drawn the first time a search reads a node (the children of one node
together, the (group, node) pairs in sorted order): the same law as drawing the whole tree
first, and the same draws in memory and on partitions for a seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtri

from ppdp.publish.group_quantiles import GRID, CellCounts, grid_values

__all__ = [
    "BRANCH",
    "LEVELS",
    "NODES",
    "QuantileInterval",
    "TreeNoise",
    "tree_quantiles",
]

_Ints = NDArray[np.int64]
_Floats = NDArray[np.float64]

BRANCH = 16
LEVELS = 4
LEAVES = BRANCH**LEVELS
#: Nodes of one group's tree (every level but the root).
NODES = sum(BRANCH**k for k in range(1, LEVELS + 1))
#: How far out (in grid steps) each end of an interval is moved: a grid point holds the
#: values within half a step of it.
HALF_STEP = 0.5
assert LEAVES == GRID


@dataclass(frozen=True)
class TreeNoise:
    """The public law of each node's noise and the sampler that adds it.

    Attributes
    ----------
    scale : float
        The discrete Laplace scale ``b`` of every node count.
    add : callable
        Exact node counts (int64) to noisy ones, in order (the release's draws).
    """

    scale: float
    add: Callable[[_Ints], _Ints]

    @property
    def variance(self) -> float:
        """One node's noise variance, ``2q/(1 − q)²`` with ``q = e^(−1/b)``."""
        q = math.exp(-1.0 / self.scale)
        return 2.0 * q / math.expm1(-1.0 / self.scale) ** 2

    @property
    def fourth_cumulant(self) -> float:
        """One node's noise fourth cumulant, ``2q(1 + 4q + q²)/(1 − q)⁴`` (twice a
        geometric's: the noise is the difference of two)."""
        q = math.exp(-1.0 / self.scale)
        return 2.0 * q * (1.0 + 4.0 * q + q * q) / math.expm1(-1.0 / self.scale) ** 4


@dataclass(frozen=True)
class QuantileInterval:
    """One probability's release per group: the quantile and its interval's ends (NaN
    without intervals), in the column's units."""

    value: _Floats
    lo: _Floats
    hi: _Floats


class _Exact:
    """Exact counts of a group's values over a range of leaves (the histogram's)."""

    def __init__(self, hist: CellCounts, n_groups: int) -> None:
        hist = CellCounts.joined([(hist, np.arange(n_groups))])  # sorted by (group, cell)
        self.key = hist.groups * LEAVES + np.minimum(hist.cells, LEAVES - 1)
        self.cum = np.concatenate([[0], np.cumsum(hist.counts)]).astype(np.int64)

    def children(self, groups: _Ints, parents: _Ints, level: int) -> _Ints:
        """The exact counts of the ``BRANCH`` children (at ``level``) of each parent."""
        width = BRANCH ** (LEVELS - level)  # leaves under one node of ``level``
        edges = (parents[:, None] * BRANCH + np.arange(BRANCH + 1)) * width
        at = np.searchsorted(self.key, groups[:, None] * LEAVES + edges, side="left")
        return np.diff(self.cum[at], axis=1)


def _thresholds(noise: TreeNoise, p: NDArray[np.float64], a: _Ints, c: _Ints, z: float) -> _Floats:
    """The one-sided tail quantile ``t`` of ``D``'s noise, ``(1 − p)·Σ_a − p·Σ_c`` of
    ``a`` and ``c`` node noises, at the normal quantile ``z``: Cornish–Fisher with the
    excess kurtosis (the noise is symmetric)."""
    k2 = noise.variance * ((1 - p) ** 2 * a + p**2 * c)
    k4 = noise.fourth_cumulant * ((1 - p) ** 4 * a + p**4 * c)
    with np.errstate(divide="ignore", invalid="ignore"):  # a = c = 0: no noise, t = 0
        kurt = np.where(k2 > 0, k4 / k2**2, 0.0)
    return np.sqrt(k2) * (z + (z**3 - 3 * z) * kurt / 24.0)


def tree_quantiles(
    hist: CellCounts,
    n_groups: int,
    probabilities: Sequence[float],
    noise: TreeNoise,
    level: float | None,
    lower: float,
    upper: float,
) -> dict[float, QuantileInterval]:
    """Every group's ``p``-quantile for each of ``probabilities`` and (``level`` not None)
    its interval, from one noisy tree per group (all probabilities read the same tree).

    Parameters
    ----------
    hist : CellCounts
        Each group's histogram on the grid of ``[lower, upper]``; groups in
        ``[0, n_groups)``.
    n_groups : int
    probabilities : sequence of float
        Each in (0, 1).
    noise : TreeNoise
        The node noise (its public scale, and the sampler).
    level : float or None
        The intervals' nominal coverage; None: quantiles only (NaN ends).
    lower, upper : float
        The declared bounds (the grid's).

    Returns
    -------
    dict of float to QuantileInterval
    """
    exact = _Exact(hist, n_groups)
    kinds = ("point", "lo", "hi") if level is not None else ("point",)
    ps = np.repeat(np.asarray(probabilities, dtype=np.float64), len(kinds))
    kind = np.tile(np.arange(len(kinds)), len(probabilities))
    S, G = len(ps), n_groups
    node = np.zeros((S, G), dtype=np.int64)
    left = np.zeros((S, G))  # noisy sum of the nodes left of ``node``
    right = np.zeros((S, G))
    a = np.zeros((S, G), dtype=np.int64)  # how many nodes each sum holds
    c = np.zeros((S, G), dtype=np.int64)
    alpha = 1.0 - (level if level is not None else 0.95)
    z = float(ndtri(1.0 - alpha / 2.0))
    p3 = ps[:, None, None]
    j = np.arange(BRANCH)
    # t depends on (p, a, c) only: a table per search, indexed below
    most = (BRANCH - 1) * (LEVELS - 1) + BRANCH
    nodes = np.arange(most + 1)
    table = _thresholds(noise, p3, nodes[None, :, None], nodes[None, None, :], z)
    search = np.arange(S)[:, None, None]
    sign = np.array([0.0, -1.0, 1.0])[kind][:, None, None]  # the searches' targets: 0, −t, +t
    groups = np.broadcast_to(np.arange(G), (S, G))
    for lvl in range(1, LEVELS + 1):
        pair = groups * BRANCH ** (lvl - 1) + node  # (group, parent), one key
        uniq, inv = np.unique(pair.reshape(-1), return_inverse=True)
        g_u, parent_u = uniq // BRANCH ** (lvl - 1), uniq % BRANCH ** (lvl - 1)
        counts = exact.children(g_u, parent_u, lvl)
        noisy = noise.add(counts.reshape(-1)).reshape(counts.shape).astype(np.float64)
        kids = noisy[inv.reshape(-1)].reshape(S, G, BRANCH)
        csum = np.cumsum(kids, axis=2)
        total = csum[:, :, -1:]
        # (1 − p)·Σ_left − p·Σ_right as Σ_left − p·n̂ (n̂ = both sums): exact integers
        # but for one product, so a noise-free tree meets p·n exactly where the data does
        d = (left[:, :, None] + csum) - p3 * ((left + right)[:, :, None] + total)
        aj = a[:, :, None] + j + 1  # nodes of [0, end of child j]
        cj = c[:, :, None] + (BRANCH - 1 - j)
        target = sign * table[search, aj, cj] if level is not None else 0.0
        pick = _first(d >= target)
        chosen = np.take_along_axis(kids, pick[:, :, None], 2)[:, :, 0]
        upto = np.take_along_axis(csum, pick[:, :, None], 2)[:, :, 0]
        left += upto - chosen
        right += total[:, :, 0] - upto
        a += pick
        c += BRANCH - 1 - pick
        node = node * BRANCH + pick
    return _values(node, probabilities, len(kinds), lower, upper)


def _first(hit: NDArray[np.bool_]) -> _Ints:
    """The first child where ``hit`` holds, the last child where none does."""
    return np.where(hit.any(axis=2), np.argmax(hit, axis=2), BRANCH - 1)


def _values(
    leaf: _Ints, probabilities: Sequence[float], kinds: int, lower: float, upper: float
) -> dict[float, QuantileInterval]:
    """The searches' leaves as values: the quantile at its grid point; the interval's
    ends half a step out (a grid point holds the values rounded to it; the last leaf
    holds the range's end)."""
    step = (upper - lower) / GRID
    out = {}
    for k, p in enumerate(probabilities):
        value = grid_values(leaf[k * kinds], lower, upper)
        if kinds == 1:
            nan = np.full(value.shape, np.nan)
            out[p] = QuantileInterval(value, nan, nan.copy())
            continue
        lo = np.maximum(grid_values(leaf[k * kinds + 1], lower, upper) - HALF_STEP * step, lower)
        top = leaf[k * kinds + 2]
        hi = np.where(
            top >= LEAVES - 1,
            upper,
            np.minimum(grid_values(top, lower, upper) + HALF_STEP * step, upper),
        )
        out[p] = QuantileInterval(value, lo, hi)
    return out
