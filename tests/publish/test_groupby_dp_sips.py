"""DP-SIPS partition selection (``selection="dp-sips"``): many keys per person.

The rounds' thresholds meet their share of δ exactly (the max over a person's number of
remaining keys, the grid included) and are the least that do; the rounds' noise precisions
add up to the one Gaussian mechanism's; a person's weight is spread evenly over their keys
not yet selected, so keys found in a round free weight for the rest; the release does not
depend on the rows' order; it charges keys then counts; bad input is one line, nothing
spent. The audit is tests/statistical/test_partition_selection_audit.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from ppdp.accounting import Accountant
from ppdp.audit import ScaledNoise
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.publish import GroupByPublisher
from ppdp.publish.partition_selection import SIPS_SHARES, PartitionSelection

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "dx", "type": "categorical", "open": True, "categories": ["Z99"]},
            {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
        ],
        "privacy_unit": {"column": "pid", "max_rows": 8},
    }
)


def panel(seed: int = 0) -> pd.DataFrame:
    """3,000 persons of 1 to 6 codes each: C0..C4 common, then a long tail of R codes."""
    rng = np.random.default_rng(seed)
    rows = []
    for pid in range(3000):
        k = int(rng.integers(1, 7))
        common = rng.choice([f"C{i}" for i in range(5)], size=min(k, 3), replace=False)
        tail = [f"R{int(rng.zipf(1.6))}" for _ in range(k - len(common))]
        rows += [(pid, c, float(rng.integers(1, 30))) for c in [*common, *tail]]
    return pd.DataFrame(rows, columns=["pid", "dx", "los"])


def sips(relation=Neighbouring.ADD_REMOVE, m: int = 8, **kw) -> PartitionSelection:
    return PartitionSelection("dp-sips", 1.0, 1e-6, relation, max_groups=m, **kw)


@pytest.mark.parametrize("relation", list(Neighbouring))
@pytest.mark.parametrize("m", [1, 8, 50])
def test_each_rounds_threshold_meets_its_share_of_delta_and_is_the_least(relation, m) -> None:
    """max over r ≤ m of r·P(N(0, σ_i²) ≥ τ_i − 1/√r − Λ) = δ/(2·rounds·(1 + e^ε))."""
    sel = sips(relation, m)
    lam = sel.sips()._granularity
    beta = 1e-6 / (2 * len(sel.shares) * (1 + math.e))
    r = np.arange(1, m + 1)
    for tau, s in zip(sel.sips_thresholds(), sel.sips_sigmas(), strict=True):
        worst = np.max(r * norm.sf((tau - 1 / np.sqrt(r) - lam) / s))
        assert worst == pytest.approx(beta, rel=1e-6)
        lower = np.max(r * norm.sf((tau * (1 - 1e-6) - 1 / np.sqrt(r) - lam) / s))
        assert lower > beta  # any lower threshold overshoots


def test_the_rounds_share_one_gaussian_mechanisms_precision() -> None:
    for relation in Neighbouring:
        sel = sips(relation)
        mech = sel.sips()
        assert mech.sensitivity == pytest.approx(
            math.sqrt(2 if relation.value == "replace-one" else 1)
        )
        assert mech.delta == 5e-7 and mech.epsilon == 1.0
        precision = sum(1 / s**2 for s in sel.sips_sigmas())
        assert precision == pytest.approx(1 / mech.sigma**2, rel=1e-12)
    assert sum(SIPS_SHARES) == pytest.approx(1.0)


def test_weight_found_early_moves_to_a_persons_other_keys() -> None:
    """Nearly noise-free (a source scaling the noise by 1e-9): ``n + 1`` persons hold A and
    B, ``n`` of them also X, with ``n/√3`` below both rounds' thresholds and ``n`` above
    round 2's. Round 1 weighs X at ``n/√3`` and misses it; once A and B are selected, round
    2 weighs X at ``n`` (each person's whole unit weight) and releases it."""
    sel = sips(shares=(0.5, 0.5))
    t1, t2 = sel.sips_thresholds()
    n = math.floor(t2) + 2
    assert n / math.sqrt(3) < min(t1, t2) and n > t2 and 2 * n > t1
    persons = np.concatenate([np.arange(2 * n), np.arange(2 * n), np.arange(n)])
    keys = np.repeat([0, 1, 2], [2 * n, 2 * n, n]).astype(np.int64)
    chosen = sel.select_persons(persons, keys, 3, ScaledNoise(0, 1e-9))
    assert chosen.tolist() == [True, True, True]
    one = sips(shares=(1.0,))  # a single round at the full precision: X's weight is n/√3
    assert n / math.sqrt(3) < one.sips_thresholds()[0]
    single = one.select_persons(persons, keys, 3, ScaledNoise(0, 1e-9))
    assert single.tolist() == [True, True, False]


def fit(df: pd.DataFrame, **kw) -> GroupByPublisher:
    kw = {"by": ["dx"], "keys": "private", "delta": 1e-6, "selection": "dp-sips",
          "random_state": 0, **kw}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GroupByPublisher(kw.pop("epsilon", 1.0), SCHEMA, **kw).fit(df)


def test_common_keys_are_released_the_tail_not_and_the_rows_order_is_ignored() -> None:
    df = panel()
    a = fit(df, means=["los"]).release_.data
    b = fit(df.sample(frac=1.0, random_state=3), means=["los"]).release_.data
    assert a["dx"].tolist()[:6] == ["Z99", "C0", "C1", "C2", "C3", "C4"]
    assert not any(k.startswith("R") and int(k[1:]) > 50 for k in a["dx"])
    pd.testing.assert_series_equal(a["dx"], b["dx"])
    c0 = (df["dx"] == "C0").sum()
    assert abs(a["count"][1] - c0) < 100


def test_dp_sips_charges_keys_then_counts_and_says_so() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            1.0, SCHEMA, by=["dx"], keys="private", delta=1e-6, selection="dp-sips",
            max_groups=4,
        ).fit(panel(), accountant=acct)  # fmt: skip
    keys, counts = acct.history()
    assert keys.budget.epsilon == pytest.approx(0.5) and keys.budget.delta == 1e-6
    assert keys.details["rounds"] == len(SIPS_SHARES) and keys.details["max_groups"] == 4
    assert counts.budget.epsilon == pytest.approx(0.5) and counts.budget.delta == 0
    text = " ".join(pub.guarantee.assumptions)
    assert "dp-sips" in text and "L2 norm 1" in text


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"threshold": 90}, r"^threshold \(90\) applies to keys='private' with selection"),
        ({"selection": "dp_sips"}, r"^selection \('dp_sips'\) must be one of .*'dp-sips'"),
        ({"max_groups": 0}, r"^max_groups \(0\) must be an integer >= 1$"),
    ],
)
def test_bad_input_is_one_line_and_spends_nothing(kw, match) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    args = {"by": ["dx"], "keys": "private", "delta": 1e-6, "selection": "dp-sips", **kw}
    with pytest.raises(ParameterError, match=match) as err:
        GroupByPublisher(1.0, SCHEMA, **args).fit(panel(), accountant=acct)
    assert "\n" not in str(err.value)
    assert acct.history() == []


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"shares": (0.5, 0.6)}, r"^shares \(\(0.5, 0.6\)\) must be positive floats summing"),
        ({"shares": ()}, r"^shares \(\(\)\) must be"),
        ({"threshold": 100.0}, r"^threshold \(100.0\) applies to selection 'laplace'"),
    ],
)
def test_bad_selection_parameters_are_one_line(kw, match) -> None:
    with pytest.raises(ParameterError, match=match):
        sips(**kw)
