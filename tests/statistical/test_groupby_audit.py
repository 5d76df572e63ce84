"""Black-box audits of GroupByPublisher on worst-case neighbours, with broken variants.

Draws come from the release path of ``fit`` (:meth:`GroupByPublisher._noisy` on the exact
:func:`~ppdp.publish.groupby.group_statistics` of each table, many releases stacked;
``tests/publish/test_groupby.py`` checks that ``fit`` releases exactly this path).

- Counts, replace-one: D′ moves one row from group F to group M, so the count vector moves
  by (−1, +1), the L1 sensitivity 2. Statistic: count_M − count_F (the direction of the
  log-likelihood ratio). Claim: ε (all of it on the counts, no means).
- Centred sums, replace-one: a row at the lower bound in group F becomes a row at the upper
  bound in group M; the centred sums move by (+range/2, +range/2), L1 the range. Statistic:
  sum_F + sum_M. Claim: the sums' share ε_mean (the statistic reads the sums only).
- Counts, add/remove: D′ lacks one row of group F, sensitivity 1. Statistic: count_F.

Each must PASS at its claim; two deliberately broken variants must FAIL at the same
claim: counts calibrated for sensitivity 1 under replace-one (the move between groups
forgotten), and centred sums calibrated for half the range under replace-one (the
add/remove value); so must the half-noise positive control (the release's draws from a
:class:`ppdp.audit.ScaledNoise` source). False-positive rate: each audit of a correct
release fails with probability at most α = 1e-6 (``docs/audit.md``); three such audits here.
Seeded (seed 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import CONTROL_NOISE_MULTIPLIER, ScaledNoise, audit
from ppdp.data import Schema
from ppdp.mechanisms import DiscreteLaplaceMechanism
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import HALF_UNIT, GroupPlan, GroupStatistics, group_statistics

pytestmark = pytest.mark.statistical

DRAWS = {"n_select": 20_000, "n_measure": 200_000, "alpha": 1e-6}

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
        ]
    }
)


class ForgetsTheMove(GroupByPublisher):
    """Broken: counts calibrated for L1 sensitivity 1 under replace-one."""

    def _count_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(plan.epsilon_count, 1, plan, "the counts")


class HalfRangeSums(GroupByPublisher):
    """Broken: centred sums calibrated for half the range under replace-one."""

    def _sum_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        return self._mechanism(plan.epsilon_mean, HALF_UNIT, plan, "each mean column")


def _tables(kind: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    base = pd.DataFrame({"age": [30.0, 40, 50, 60, 70, 35, 45, 55], "sex": list("FFFFMMMM")})
    if kind == "move":
        d = pd.concat([base, pd.DataFrame({"age": [0.0], "sex": ["F"]})], ignore_index=True)
        d2 = pd.concat([base, pd.DataFrame({"age": [100.0], "sex": ["M"]})], ignore_index=True)
        return d, d2
    d = pd.concat([base, pd.DataFrame({"age": [0.0], "sex": ["F"]})], ignore_index=True)
    return d, base


def _sampler(pub: GroupByPublisher, df: pd.DataFrame, statistic, factor: float):
    plan = pub.plan()
    exact = group_statistics(SCHEMA, plan, *SCHEMA.encode(df))
    G, k = plan.n_groups, len(plan.means)

    def sample(n, source):
        stacked = GroupStatistics(np.tile(exact.counts, n), np.tile(exact.sums, (1, n)))
        counts, sums = pub._noisy(plan, stacked, ScaledNoise(source, factor))
        return statistic(counts.reshape(n, G), sums.reshape(k, n, G)).astype(np.float64)

    return sample


def _audit(cls, kind: str, statistic, claim: float, factor: float = 1.0, **kw):
    """``factor`` < 1: the release's own draws from a rescaled source (the half-noise control)."""
    d, d2 = _tables(kind)
    pub = cls(kw.pop("epsilon"), SCHEMA, by=["sex"], **kw)
    return audit(
        _sampler(pub, d, statistic, factor),
        _sampler(pub, d2, statistic, factor),
        claimed_epsilon=claim,
        random_state=0,
        **DRAWS,
    )


def _count_gap(c, s):
    return c[:, 1] - c[:, 0]


def _sum_total(c, s):
    return s[0, :, 0] + s[0, :, 1]


def _count_f(c, s):
    return c[:, 0]


def test_counts_under_replace_one_pass_and_the_broken_variants_fail() -> None:
    kw = {"epsilon": 1.0, "relation": "replace-one"}
    assert _audit(GroupByPublisher, "move", _count_gap, 1.0, **kw).passed
    broken = _audit(ForgetsTheMove, "move", _count_gap, 1.0, **kw)
    assert not broken.passed and broken.epsilon_lower_bound > 1.3
    half = CONTROL_NOISE_MULTIPLIER
    assert not _audit(GroupByPublisher, "move", _count_gap, 1.0, factor=half, **kw).passed


def test_centred_sums_under_replace_one_pass_and_half_range_noise_fails() -> None:
    # ε = 2 with count_share 0.5: the sums get ε_mean = 1, the claim of their statistic.
    kw = {"epsilon": 2.0, "means": ["age"], "count_share": 0.5}
    assert GroupByPublisher(2.0, SCHEMA, means=["age"], count_share=0.5).plan().epsilon_mean == 1.0
    assert _audit(GroupByPublisher, "move", _sum_total, 1.0, **kw).passed
    broken = _audit(HalfRangeSums, "move", _sum_total, 1.0, **kw)
    assert not broken.passed and broken.epsilon_lower_bound > 1.3


def test_counts_under_add_remove_pass_and_half_noise_fails() -> None:
    kw = {"epsilon": 1.0, "relation": "add/remove"}
    assert _audit(GroupByPublisher, "remove", _count_f, 1.0, **kw).passed
    half = CONTROL_NOISE_MULTIPLIER
    assert not _audit(GroupByPublisher, "remove", _count_f, 1.0, factor=half, **kw).passed
