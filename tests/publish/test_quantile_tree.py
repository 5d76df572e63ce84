"""The tree quantiles (``ppdp.publish.quantile_tree``): exact without noise, each interval
holding its quantile, the count's noise in the threshold, and no node read twice."""

from __future__ import annotations

import numpy as np

from ppdp.publish.group_quantiles import GRID, CellCounts, grid_cells, grid_values
from ppdp.publish.quantile_tree import BRANCH, LEVELS, TreeNoise, tree_quantiles


def _groups(seed: int = 0) -> tuple[CellCounts, list[np.ndarray]]:
    """Four groups: continuous, tied integers, two values, and an empty one."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(20, 60, 500), rng.integers(1, 8, 300).astype(float), [3.0, 97.0], []]
    g = np.concatenate([np.full(len(v), i) for i, v in enumerate(values)]).astype(np.int64)
    v = np.concatenate([np.asarray(x, float) for x in values])
    return CellCounts.of(g, grid_cells(v, 0, 100)), [np.sort(np.asarray(x)) for x in values]


def test_without_noise_each_quantile_is_the_grid_point_of_the_true_one() -> None:
    hist, values = _groups()
    silent = TreeNoise(1e-3, lambda exact: exact)  # the law's variance is 0 there too
    out = tree_quantiles(hist, 4, [0.1, 0.5, 0.9], silent, 0.95, 0.0, 100.0)
    step = 100.0 / GRID
    for p, q in out.items():
        for k, v in enumerate(values[:3]):
            truth = np.quantile(v, p, method="inverted_cdf")
            expect = grid_values(grid_cells(np.array([truth]), 0, 100), 0, 100)[0]
            assert q.value[k] == expect, (p, k)
            assert q.lo[k] <= truth <= q.hi[k]
            assert q.hi[k] - q.lo[k] <= step * 1.000001  # one grid point: half a step out


def test_every_interval_holds_its_quantile_and_lies_in_the_bounds() -> None:
    hist, _ = _groups(1)
    rng = np.random.default_rng(3)

    def add(exact):
        return exact + rng.geometric(0.2, exact.shape) - rng.geometric(0.2, exact.shape)

    noise = TreeNoise(-1.0 / np.log(0.8), add)
    for _ in range(20):
        for q in tree_quantiles(hist, 4, [0.05, 0.5, 0.95], noise, 0.9, 0.0, 100.0).values():
            assert np.all((q.lo >= 0.0) & (q.lo <= q.value) & (q.value <= q.hi) & (q.hi <= 100))


def test_no_interval_reads_one_search_per_probability_and_no_node_twice() -> None:
    hist, _ = _groups()
    drawn: list[int] = []

    def add(exact):
        drawn.append(exact.size)
        return exact

    out = tree_quantiles(hist, 4, [0.5], TreeNoise(2.0, add), None, 0.0, 100.0)
    assert np.all(np.isnan(out[0.5].lo)) and np.all(np.isnan(out[0.5].hi))
    # one search per group: the children of one node per level, each read once
    assert drawn == [4 * BRANCH] * LEVELS


def test_the_threshold_grows_with_the_counts_noise() -> None:
    """The count's noise enters through the ``c`` nodes right of the point: a larger
    scale, a wider interval; the interval of a larger ``level`` is no narrower."""
    hist, _ = _groups()
    widths = []
    for scale, level in ((2.0, 0.9), (2.0, 0.99), (8.0, 0.99)):
        rng = np.random.default_rng(0)
        noise = TreeNoise(scale, lambda e, r=rng: e)  # no draw: the threshold alone moves
        q = tree_quantiles(hist, 4, [0.5], noise, level, 0.0, 100.0)[0.5]
        widths.append(q.hi[0] - q.lo[0])
    assert widths[0] <= widths[1] < widths[2]
