"""Coverage of GroupByPublisher's 95 % intervals over 1,000 seeded releases.

Each released statistic (count, sum, mean, variance, standard deviation) of two groups (600
and 3,000 rows, ages on [0, 100], ε = 2 split over counts, sums and sums of squares) must
have its interval cover the true value in 93–97 % of 1,000 releases drawn through the
release path of ``fit`` (``GroupByPublisher._publish`` on the exact statistics, fresh
noise each time). False-positive rate: for an interval of exactly 95 % coverage each of the
10 checks falls outside [930, 970] hits with probability ≈ 0.4 % (binomial), ≈ 4 % for all;
seeded (seed 0), so the outcome is fixed. Broken control: intervals computed at 85 %
(claimed 95 %) must fall below 93 % (300 releases).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import group_statistics
from ppdp.random import resolve_random_state

pytestmark = pytest.mark.statistical

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        ]
    }
)
RELEASES = 1_000


def _coverage(level: float, releases: int = RELEASES) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "sex": np.repeat(["F", "M"], [600, 3000]),
            "age": np.r_[rng.uniform(20, 50, 600), rng.uniform(40, 90, 3000)],
        }
    )
    by = df.groupby("sex")["age"]
    truth = {
        "count": by.size().to_numpy(float),
        "sum_age": by.sum().to_numpy(),
        "mean_age": by.mean().to_numpy(),
        "var_age": by.var(ddof=0).to_numpy(),
        "std_age": by.std(ddof=0).to_numpy(),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            2.0, SCHEMA, by=["sex"], means=["age"], variances=["age"], interval=level
        )
    plan = pub.plan()
    stats = group_statistics(SCHEMA, plan, *SCHEMA.encode(df))
    source = resolve_random_state(0)
    hits = {k: np.zeros(2) for k in truth}
    for _ in range(releases):
        released = pub._publish(plan, stats, source).statistics
        for k, v in truth.items():
            hits[k] += (released[f"{k}_lo"] <= v) & (v <= released[f"{k}_hi"])
    return {k: h / releases for k, h in hits.items()}


def test_every_95_percent_interval_covers_93_to_97_percent_and_85_percent_ones_do_not() -> None:
    cover = _coverage(0.95)
    for name, c in cover.items():
        assert np.all((c >= 0.93) & (c <= 0.97)), (name, c)
    broken = _coverage(0.85, releases=300)
    assert all(np.all(c < 0.93) for c in broken.values()), broken
