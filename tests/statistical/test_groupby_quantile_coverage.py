"""Coverage of GroupByPublisher's 95 % quantile intervals over 2,000 seeded releases.

The tree quantiles (``quantile_method="tree"``, the default): the 0.5- and 0.9-quantiles of
ages in two groups (600 rows on [20, 50], 3,000 on [40, 90]; declared on [0, 100]; ε = 2,
half for the quantiles, replace-one), drawn through the release path of ``fit``
(``GroupByPublisher._publish`` on the exact statistics, fresh noise each time). Each of the
4 intervals must cover the true quantile (``numpy.quantile(method="inverted_cdf")``) in
93–97 % of 2,000 releases (the issue asks for 1,000 or more). The method's coverage here,
measured over 3,000 releases, is 95.4–96.2 % (its searches stop early, which widens the
lower end: ``docs/proofs/groupby-statistics.md``). False-positive rate: at a coverage of
96.2 % a check of 2,000 releases falls outside [93 %, 97 %] with probability ≈ 3 %
(binomial; ≈ 0.1 % at 95 %), at most ≈ 8 % for all 4; seeded (seed 0), so the outcome is
fixed.

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
RELEASES = 2_000
PS = (0.5, 0.9)


def _coverage(releases: int = RELEASES, dense: int = 0) -> np.ndarray:
    """Per (p, group): the share of releases whose interval covers the true quantile."""
    rng = np.random.default_rng(0)
    sizes = [600, 3000, dense]
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
            2.0, SCHEMA, by=["sex"], quantiles=["age"], q=list(PS), count_share=0.5
        )
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


def test_every_95_percent_quantile_interval_covers_93_to_97_percent() -> None:
    cover = _coverage()
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
