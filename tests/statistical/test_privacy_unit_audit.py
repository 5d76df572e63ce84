"""Black-box audits of GroupByPublisher under a privacy unit: neighbours differ by one
person's whole set of rows, with broken variants calibrated for one row.

Draws come from the release path of ``fit``: the contribution bounding
(:meth:`GroupByPublisher._bounded`, keys from the audit's seeded source), the exact
:func:`~ppdp.publish.groupby.group_statistics` of the kept rows, and
:meth:`GroupByPublisher._noisy` (many releases stacked). The person whose rows differ has
identical rows in each group, so which of them the bounding keeps does not change the
statistics: the pair is a worst case for every draw of the bounding key.

- Counts, add/remove one person: D holds person P with 5 rows in group F, D′ lacks P;
  ``max_rows = 3``, so 3 rows reach the counts (sensitivity 3). Statistic: count_F.
- Counts, replace one person: P's 3 rows in F become 3 rows in M (L1 sensitivity 6).
  Statistic: count_M − count_F.
- Centred sums, replace one person: P's 3 rows at the lower bound in F become 3 rows at the
  upper bound in M (L1 3 × the range). Statistic: sum_F + sum_M. Claim: ε_mean.
- L0/L∞ caps, add/remove: ``max_rows = 6``, ``max_groups = 1``, ``max_rows_per_group = 2``:
  P's 6 rows (3 in F, 3 in M) reach the counts as 2 rows of one group. Statistic:
  count_F + count_M.

Each must PASS at its claim, and its broken variant must FAIL at the same claim: noise
calibrated for one row (a per-row guarantee passed off as a per-person one), and for the
caps, the bounding left out (each person's 6 rows counted, the noise still calibrated for
2). False-positive rate: each audit of a correct release fails with probability at most
α = 1e-6 (``docs/audit.md``); four such audits here. Seeded (seed 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import audit
from ppdp.data import Schema
from ppdp.mechanisms import DiscreteLaplaceMechanism
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import GroupPlan, GroupStatistics, group_statistics
from ppdp.random import SeededRandom

pytestmark = pytest.mark.statistical

DRAWS = {"n_select": 20_000, "n_measure": 200_000, "alpha": 1e-6}


def _schema(max_rows: int) -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
                {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            ],
            "privacy_unit": {"column": "pid", "max_rows": max_rows},
        }
    )


class PerRow(GroupByPublisher):
    """Broken: counts and sums calibrated for one row (the unit's caps ignored)."""

    def _count_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        one = plan.count_sensitivity // plan.contribution
        return self._mechanism(plan.epsilon_count, one, plan, "the counts")

    def _sum_mechanism(self, plan: GroupPlan) -> DiscreteLaplaceMechanism:
        one = plan.sum_sensitivity // plan.contribution
        return self._mechanism(plan.epsilon_mean, one, plan, "each mean column")


class Unbounded(GroupByPublisher):
    """Broken: no contribution bounding (every row of a person counted)."""

    def _bounded(self, df, source, on_invalid):
        return df


def _others() -> pd.DataFrame:
    """Eight other persons, one row each."""
    return pd.DataFrame(
        {
            "pid": np.arange(100, 108),
            "age": [30.0, 40, 50, 60, 70, 35, 45, 55],
            "sex": list("FFFFMMMM"),
        }
    )


def _with(rows: list[tuple[float, str]]) -> pd.DataFrame:
    person = pd.DataFrame({"pid": 1, "age": [a for a, _ in rows], "sex": [s for _, s in rows]})
    return pd.concat([_others(), person], ignore_index=True)


def _sampler(pub: GroupByPublisher, df: pd.DataFrame, statistic):
    plan = pub.plan()
    kept = pub._bounded(df, SeededRandom(0), "raise")
    exact = group_statistics(pub.schema, plan, *pub.schema.encode(kept))
    G, k = plan.n_groups, len(plan.means)

    def sample(n, source):
        stacked = GroupStatistics(np.tile(exact.counts, n), np.tile(exact.sums, (1, n)))
        counts, sums = pub._noisy(plan, stacked, source)
        return statistic(counts.reshape(n, G), sums.reshape(k, n, G)).astype(np.float64)

    return sample


def _audit(cls, d, d2, statistic, claim: float, max_rows: int, **kw):
    pub = cls(kw.pop("epsilon"), _schema(max_rows), by=["sex"], **kw)
    return audit(
        _sampler(pub, d, statistic),
        _sampler(pub, d2, statistic),
        claimed_epsilon=claim,
        random_state=0,
        **DRAWS,
    )


def _count_f(c, s):
    return c[:, 0]


def _count_gap(c, s):
    return c[:, 1] - c[:, 0]


def _count_total(c, s):
    return c[:, 0] + c[:, 1]


def _sum_total(c, s):
    return s[0, :, 0] + s[0, :, 1]


def test_counts_add_remove_one_person_pass_and_per_row_noise_fails() -> None:
    d, d2 = _with([(0.0, "F")] * 5), _others()
    kw = {"epsilon": 1.0, "relation": "add/remove"}
    assert _audit(GroupByPublisher, d, d2, _count_f, 1.0, 3, **kw).passed
    broken = _audit(PerRow, d, d2, _count_f, 1.0, 3, **kw)
    assert not broken.passed and broken.epsilon_lower_bound > 1.5


def test_counts_replace_one_person_pass_and_per_row_noise_fails() -> None:
    d, d2 = _with([(0.0, "F")] * 3), _with([(0.0, "M")] * 3)
    kw = {"epsilon": 1.0}
    assert _audit(GroupByPublisher, d, d2, _count_gap, 1.0, 3, **kw).passed
    broken = _audit(PerRow, d, d2, _count_gap, 1.0, 3, **kw)
    assert not broken.passed and broken.epsilon_lower_bound > 1.5


def test_centred_sums_replace_one_person_pass_and_per_row_noise_fails() -> None:
    d, d2 = _with([(0.0, "F")] * 3), _with([(100.0, "M")] * 3)
    kw = {"epsilon": 2.0, "means": ["age"], "count_share": 0.5}  # ε_mean = 1
    assert _audit(GroupByPublisher, d, d2, _sum_total, 1.0, 3, **kw).passed
    broken = _audit(PerRow, d, d2, _sum_total, 1.0, 3, **kw)
    assert not broken.passed and broken.epsilon_lower_bound > 1.5


def test_group_caps_pass_and_skipping_the_bounding_fails() -> None:
    d, d2 = _with([(0.0, "F")] * 3 + [(0.0, "M")] * 3), _others()
    kw = {"epsilon": 1.0, "relation": "add/remove", "max_groups": 1, "max_rows_per_group": 2}
    caps = {k: v for k, v in kw.items() if k != "epsilon"}
    assert GroupByPublisher(1.0, _schema(6), by=["sex"], **caps).plan().count_sensitivity == 2
    assert _audit(GroupByPublisher, d, d2, _count_total, 1.0, 6, **kw).passed
    broken = _audit(Unbounded, d, d2, _count_total, 1.0, 6, **kw)
    assert not broken.passed and broken.epsilon_lower_bound > 1.5
    per_row = _audit(PerRow, d, d2, _count_total, 1.0, 6, **kw)
    assert not per_row.passed
