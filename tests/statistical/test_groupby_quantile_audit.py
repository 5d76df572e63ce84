"""Black-box audits of GroupByPublisher's per-group quantiles, both methods.

**Exponential mechanism** (``quantile_method="exponential"``). D′ moves one row from group
F at the lower bound (age 0) to group M at the upper bound (age 100): both groups' medians
move, so under replace-one each group's draw gets half of
the quantile part's ε (the proof's factor). ε = 2 with count_share 0.5: the median part has
ε = 1, the claim of the statistic p50_F + p50_M. Draws come from the release path of
``fit`` (``GroupByPublisher._quantiles`` on the encoded rows, many releases stacked as
groups of one draw). The correct release must PASS (measured ε ≥ 0.19, its bound 1: the
exponential mechanism's realized loss on this pair is well below its bound). A broken
variant drawing each group at 8 times its ε must FAIL (measured 1.9); a factor 2 (the move
between groups forgotten alone) is beyond this audit's power on this pair, as the
mechanism's slack hides it.

Per person (privacy unit of 6 rows, add/remove): D holds one more person with 3 rows at 0
in each group; each draw at ε_part/6 passes (measured 0.23), each draw calibrated for one
row fails (measured 1.96).

**Tree** (``quantile_method="tree"``; intervals off: post-processing). The
quantile part's ε = 1 is the claim of the whole released vector. Row level, replace-one:
groups of 50 rows at 50 each; D has one more row at age 0 in F, D′ one more at 100 in M;
the statistic counts F's 0.01-quantile in the first sixteenth of the range and M's
0.99-quantile below the last sixteenth (each reads the one top-level node holding the
moved row, with weight 0.99). The correct trees pass (measured 0.19); trees at 8 times
their ε fail (1.92).
Per person (unit of 6 rows, add/remove): 50 persons at 50 in each group, D adds a person
with 3 rows at 0 in F and 3 at 100 in M; the statistic counts F's 0.01-quantile at 0 and
M's 0.99-quantile at the last grid point (each needs the search to follow the person's
nodes at all 4 levels): per-person trees pass (0.37), trees calibrated for one row fail
(1.98).

The default (``"exponential+tree"``) runs both mechanisms, each at its share of the part,
in one plan: sequential composition of the two audited here one at a time.

False-positive rate: α = 1e-6 per audit (``docs/audit.md``); seeded (seed 0).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.audit import audit
from ppdp.data import Schema
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import GroupPlan, group_codes

pytestmark = pytest.mark.statistical

FACTOR = 8.0
DRAWS = {"n_select": 20_000, "n_measure": 200_000, "alpha": 1e-6}
SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
        ]
    }
)


class ForgetsTheMove(GroupByPublisher):
    """Broken: each group's quantile draw at ``FACTOR`` times its ε."""

    def _quantiles(self, plan: GroupPlan, rows, source):
        whole = GroupPlan(**{**plan.__dict__, "epsilon_mean": plan.epsilon_mean * FACTOR})
        return super()._quantiles(whole, rows, source)


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    base = pd.DataFrame({"sex": ["F", "F", "M", "M"], "age": [50.0, 50.0, 50.0, 50.0]})
    d = pd.concat([base, pd.DataFrame({"sex": ["F"], "age": [0.0]})], ignore_index=True)
    d2 = pd.concat([base, pd.DataFrame({"sex": ["M"], "age": [100.0]})], ignore_index=True)
    return d, d2


def _sampler(pub: GroupByPublisher, df: pd.DataFrame):
    plan = pub.plan()
    X, y = SCHEMA.encode(df)
    g = group_codes(SCHEMA, plan, X, y)

    def sample(n, source):
        # n releases at once: copy r of the table's groups are groups 2r and 2r + 1.
        stacked = GroupPlan(**{**plan.__dict__, "levels": (tuple(range(2 * n)),)})
        rows = ((g + 2 * np.arange(n)[:, None]).reshape(-1), np.tile(X, (n, 1)))
        q = pub._quantiles(stacked, rows, source)["p50_age"].reshape(n, 2)
        return q[:, 0] + q[:, 1]

    return sample


def _audit(cls) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = cls(
            2.0, SCHEMA, by=["sex"], quantiles=["age"], count_share=0.5,
            quantile_method="exponential",
        )  # fmt: skip
    assert pub.plan().epsilon_mean == 1.0
    d, d2 = _tables()
    return audit(_sampler(pub, d), _sampler(pub, d2), claimed_epsilon=1.0, random_state=0, **DRAWS)


def test_medians_pass_and_forgetting_the_move_between_groups_fails() -> None:
    good = _audit(GroupByPublisher)
    broken = _audit(ForgetsTheMove)
    assert good.passed, good
    assert not broken.passed, broken


# -- per person: the neighbour lacks one person's whole set of rows --------------------------

UNIT_SCHEMA = Schema.from_dict(
    {
        "columns": SCHEMA.to_dict()["columns"],
        "privacy_unit": {"column": "pid", "max_rows": 6},
    }
)


class CalibratedForOneRow(GroupByPublisher):
    """Broken: each group's draw calibrated as if one person brought one row."""

    def _quantiles(self, plan: GroupPlan, rows, source):
        return super()._quantiles(GroupPlan(**{**plan.__dict__, "contribution": 1}), rows, source)


def _unit_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """20 persons of one row at 50 in each of F and M; D adds a person with 3 rows at 0 in
    F and 3 in M (6 = max_rows: nothing dropped). Each median's mass below 50 grows."""
    base = pd.DataFrame(
        {"pid": np.arange(40), "sex": ["F"] * 20 + ["M"] * 20, "age": np.full(40, 50.0)}
    )
    extra = pd.DataFrame({"pid": [99] * 6, "sex": ["F"] * 3 + ["M"] * 3, "age": np.zeros(6)})
    return pd.concat([base, extra], ignore_index=True), base


def _unit_sampler(pub: GroupByPublisher, df: pd.DataFrame):
    from ppdp.random import resolve_random_state

    plan = pub.plan()
    kept = pub._bounded(df, resolve_random_state(0), "raise")
    assert len(kept) == len(df)  # within the caps: the neighbours differ by the person
    X, y = UNIT_SCHEMA.encode(kept.drop(columns=["pid"]))
    g = group_codes(UNIT_SCHEMA, plan, X, y)

    def sample(n, source):
        stacked = GroupPlan(**{**plan.__dict__, "levels": (tuple(range(2 * n)),)})
        rows = ((g + 2 * np.arange(n)[:, None]).reshape(-1), np.tile(X, (n, 1)))
        q = pub._quantiles(stacked, rows, source)["p50_age"].reshape(n, 2)
        return q.min(axis=1)  # high when both medians are above 50

    return sample


def _unit_audit(cls) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = cls(
            2.0, UNIT_SCHEMA, by=["sex"], quantiles=["age"], count_share=0.5,
            relation="add/remove", quantile_method="exponential",
        )  # fmt: skip
    plan = pub.plan()
    assert plan.epsilon_mean == 1.0 and plan.contribution == 6
    d, d2 = _unit_tables()
    return audit(
        _unit_sampler(pub, d), _unit_sampler(pub, d2), claimed_epsilon=1.0, random_state=0,
        **DRAWS,
    )  # fmt: skip


def test_per_person_quantiles_pass_and_row_calibration_fails() -> None:
    """Add/remove one person of 6 rows (3 in each group), claim ε_part = 1. Per-person
    calibration (each draw at ε_part/6) passes (its loss on this pair ≈ 0.27); calibrated
    for one row (each draw at ε_part) it is ≈ 2.0 and fails. α = 1e-6, seed 0."""
    good = _unit_audit(GroupByPublisher)
    broken = _unit_audit(CalibratedForOneRow)
    assert good.passed, good
    assert not broken.passed, broken


# -- the tree (the default) ------------------------------------------------------------------

EDGE = 100 / 16  # the first top-level node's end
LAST = 100 - 1.5 * 100 / 2**16  # above it: the last grid point's leaf


def _tree_sampler(pub: GroupByPublisher, X: np.ndarray, y, schema: Schema, outer: bool):
    """Stacked releases of the 0.01- and 0.99-quantile trees: ``outer`` counts F's
    0.01-quantile below ``EDGE`` and M's 0.99-quantile below ``100 − EDGE`` (both likelier
    where F, not M, holds the moved row); otherwise F's at 0 and M's above ``LAST`` (both
    likelier with the person)."""
    plan = pub.plan()
    g = group_codes(schema, plan, X, y)

    def sample(n, source):
        stacked = GroupPlan(**{**plan.__dict__, "levels": (tuple(range(2 * n)),)})
        rows = ((g + 2 * np.arange(n)[:, None]).reshape(-1), np.tile(X, (n, 1)))
        out = pub._quantiles(stacked, rows, source)
        low, high = out["p1_age"].reshape(n, 2)[:, 0], out["p99_age"].reshape(n, 2)[:, 1]
        if outer:
            return (low < EDGE).astype(float) + (high < 100 - EDGE)
        return (low == 0.0).astype(float) + (high > LAST)

    return sample


def _tree_audit(cls) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = cls(
            2.0, SCHEMA, by=["sex"], quantiles=["age"], q=[0.01, 0.99], count_share=0.5,
            interval=None, quantile_method="tree",
        )  # fmt: skip
    assert pub.plan().epsilon_mean == 1.0 and pub.plan().tree_sensitivity == 8
    base = pd.DataFrame({"sex": ["F"] * 50 + ["M"] * 50, "age": np.full(100, 50.0)})
    d = pd.concat([base, pd.DataFrame({"sex": ["F"], "age": [0.0]})], ignore_index=True)
    d2 = pd.concat([base, pd.DataFrame({"sex": ["M"], "age": [100.0]})], ignore_index=True)
    samplers = [_tree_sampler(pub, *SCHEMA.encode(t), SCHEMA, outer=True) for t in (d, d2)]
    return audit(*samplers, claimed_epsilon=1.0, random_state=0, **DRAWS)


def test_tree_quantiles_pass_and_trees_at_eight_times_their_epsilon_fail() -> None:
    good = _tree_audit(GroupByPublisher)
    broken = _tree_audit(ForgetsTheMove)
    assert good.passed, good
    assert not broken.passed, broken


def _tree_unit_audit(cls) -> object:
    from ppdp.random import resolve_random_state

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = cls(
            2.0, UNIT_SCHEMA, by=["sex"], quantiles=["age"], q=[0.01, 0.99], count_share=0.5,
            relation="add/remove", interval=None, quantile_method="tree",
        )  # fmt: skip
    assert pub.plan().contribution == 6
    base = pd.DataFrame(
        {"pid": np.arange(100), "sex": ["F"] * 50 + ["M"] * 50, "age": np.full(100, 50.0)}
    )
    extra = pd.DataFrame(
        {"pid": [100] * 6, "sex": ["F"] * 3 + ["M"] * 3, "age": [0.0] * 3 + [100.0] * 3}
    )
    samplers = []
    for df in (pd.concat([base, extra], ignore_index=True), base):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kept = pub._bounded(df, resolve_random_state(0), "raise")
        assert len(kept) == len(df)  # within the caps: the neighbours differ by the person
        X, y = UNIT_SCHEMA.encode(kept.drop(columns=["pid"]))
        samplers.append(_tree_sampler(pub, X, y, UNIT_SCHEMA, outer=False))
    return audit(*samplers, claimed_epsilon=1.0, random_state=0, **DRAWS)


def test_per_person_tree_quantiles_pass_and_row_calibration_fails() -> None:
    good = _tree_unit_audit(GroupByPublisher)
    broken = _tree_unit_audit(CalibratedForOneRow)
    assert good.passed, good
    assert not broken.passed, broken
