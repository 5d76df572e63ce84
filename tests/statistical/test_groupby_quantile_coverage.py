"""Coverage of GroupByPublisher's 95 % quantile intervals over 4,000 seeded releases.

The default quantiles (``quantile_method="exponential+tree"``: the exponential mechanism's
quantile clipped into the interval of a noisy tree, which gets 0.2 of each probability's
part) and the tree alone (``"tree"``): the 0.5- and 0.9-quantiles of ages in two groups
(``SIZES`` rows on [20, 50] and on [40, 90]; declared on [0, 100]; ε = 2, half for the
quantiles, replace-one), drawn through the release path of ``fit``
(``GroupByPublisher._publish`` on the exact statistics, fresh noise each time). Each of the
4 intervals must cover the true quantile (``numpy.quantile(method="inverted_cdf")``) in
93–97 % of 4,000 releases (the issue asks for 1,000 or more).

The coverage depends on the tree's noise against the group's size: the groups are 600
and 3,000 rows for the tree (ε = 1 for its tree), five times that for the default (ε = 0.2
for its tree), the same noise per row. Measured (seed 0): the tree covers 95.4–96.2 % over
3,000 releases; the default 95.5–96.7 % over 4,000 (97.25 % for the larger group's
0.9-quantile over the first 2,000 alone). Both are slightly above nominal: the searches
stop early, which widens the lower end (``docs/proofs/groupby-statistics.md``), and the
more so where the noise is a large share of the group (the default's tree on 600 and 3,000
rows: 95.4–97.4 % over 2,000). False-positive rate: a cell whose coverage is 96.7 % falls
above 97 % in a check of 4,000 releases with probability ≈ 14 % (binomial; ≈ 1 % at 96.2 %,
≈ 0 at 95 %); seeded (seed 0), so the outcome is fixed.

Broken controls, each must fall below 93 % in some check (300 releases):

- the threshold ignoring the count's noise (the ``p``-weighted nodes right of the point,
  which carry ``p·n``'s noise, left out of the variance);
- the ends not widened by half a grid step, on a third group of 200,000 ages packed in
  [40, 40.05] (about 6,000 rows per grid point: the interval is one grid point, and the
  true quantile, a raw value, lies anywhere within half a step of it). The correct
  interval covers at least 93 % there (it is conservative: the grid point holds the
  quantile's whole rank interval).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import ppdp.publish.quantile_tree as quantile_tree
from ppdp.data import Schema
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import group_statistics
from ppdp.random import resolve_random_state

pytestmark = pytest.mark.statistical

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "sex", "type": "categorical", "categories": ["F", "M", "X"]},
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        ]
    }
)
RELEASES = 4_000
PS = (0.5, 0.9)
METHODS = ("exponential+tree", "tree")
#: Per method, the two groups' sizes: the same tree noise per row (see the docstring).
SIZES = {"exponential+tree": (3_000, 15_000), "tree": (600, 3_000)}


def _coverage(
    releases: int = RELEASES, dense: int = 0, method: str = "exponential+tree"
) -> np.ndarray:
    """Per (p, group): the share of releases whose interval covers the true quantile."""
    rng = np.random.default_rng(0)
    sizes = [*SIZES[method], dense]
    df = pd.DataFrame(
        {
            "sex": np.repeat(["F", "M", "X"], sizes),
            "age": np.r_[
                rng.uniform(20, 50, sizes[0]),
                rng.uniform(40, 90, sizes[1]),
                rng.uniform(40, 40.05, sizes[2]),
            ],
        }
    )
    groups = [df.loc[df["sex"] == s, "age"].to_numpy() for s in ("F", "M", "X")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            2.0, SCHEMA, by=["sex"], quantiles=["age"], q=list(PS), count_share=0.5,
            quantile_method=method,
        )  # fmt: skip
    plan = pub.plan()
    stats = group_statistics(SCHEMA, plan, *SCHEMA.encode(df))
    k = 3 if dense else 2
    truth = np.array([[np.quantile(v, p, method="inverted_cdf") for v in groups[:k]] for p in PS])
    source = resolve_random_state(0)
    hits = np.zeros(truth.shape)
    for _ in range(releases):
        out = pub._publish(plan, stats, source).statistics
        for i, p in enumerate(PS):
            lo, hi = out[f"p{p * 100:g}_age_lo"][:k], out[f"p{p * 100:g}_age_hi"][:k]
            hits[i] += (lo <= truth[i]) & (truth[i] <= hi)
    return hits / releases


@pytest.mark.parametrize("method", METHODS)
def test_every_95_percent_quantile_interval_covers_93_to_97_percent(method) -> None:
    cover = _coverage(method=method)
    assert np.all((cover >= 0.93) & (cover <= 0.97)), cover


def test_an_interval_ignoring_the_counts_noise_covers_too_little(monkeypatch) -> None:
    real = quantile_tree._thresholds

    def without_the_count(noise, p, a, c, z):
        return real(noise, p, a, 0 * c, z)  # the nodes right of the point left out

    monkeypatch.setattr(quantile_tree, "_thresholds", without_the_count)
    assert np.any(_coverage(releases=300) < 0.93)


def test_the_grid_step_keeps_a_packed_group_covered_and_ignoring_it_does_not(monkeypatch):
    cover = _coverage(releases=300, dense=200_000)
    assert np.all(cover >= 0.93), cover
    monkeypatch.setattr(quantile_tree, "HALF_STEP", 0.0)
    assert np.all(_coverage(releases=300, dense=200_000)[:, 2] < 0.93)
