"""Unit tests of the LAP and EXP baselines (ALGORITHMS-publishing.md A.5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import GuaranteeKind, Neighbouring, PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.publish.baselines import (
    ExponentialPublisher,
    LaplacePublisher,
    _truncated_laplace_unit,
    record_l1_sensitivity,
)
from ppdp.random import SeededRandom

PUBLISHERS = [LaplacePublisher, ExponentialPublisher]


@pytest.fixture(scope="module")
def schema() -> Schema:
    """p1 = 1, one 4-level categorical and a 3-class label: p = 8, p2 = 2, p1 + 2p2 = 5."""
    return Schema.from_dict(
        {
            "columns": [
                {"name": "x", "type": "numeric", "lower": 10, "upper": 20},
                {"name": "c", "type": "categorical", "categories": ["a", "b", "c", "d"]},
            ],
            "label": {"name": "y", "classes": [0, 1, 2]},
        }
    )


def make_df(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.uniform(10, 20, size=n),
            "c": rng.choice(list("abcd"), size=n),
            "y": rng.integers(0, 3, size=n),
        }
    )


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return make_df(500)


def test_record_sensitivity_is_one_hot_aware(schema: Schema) -> None:
    layout = schema.layout(include_label=True)
    assert layout.n_features == 8
    assert record_l1_sensitivity(layout) == 5.0  # p1 + 2p2, smaller than p = 8


def test_laplace_scale_and_ledger(schema: Schema, df: pd.DataFrame) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(1.0))
    pub = LaplacePublisher(0.5, schema, random_state=0).fit(df, a, allow_seeded=True)
    (rec,) = a.history()
    assert rec.budget == PrivacyBudget(0.5)
    mech = pub._mechanism()
    assert mech.sensitivity == 5.0 and mech.dimension == 8 and mech.epsilon == 0.5
    assert mech.scale == pytest.approx((5.0 + 8 * mech.granularity) / 0.5, rel=1e-15)
    assert rec.details["noise_scale"] == mech.scale
    assert "LAP" in rec.mechanism


def test_exponential_scale_and_ledger(schema: Schema, df: pd.DataFrame) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(1.0))
    pub = ExponentialPublisher(0.5, schema, random_state=0).fit(df, a, allow_seeded=True)
    (rec,) = a.history()
    assert rec.budget == PrivacyBudget(0.5)
    mech = pub._mechanism()
    # b = 2Δu/ε with Δu = p1 + 2p2 = 5 (plus the grid allowance).
    assert mech.scale == pytest.approx(2 * (5.0 + 8 * mech.granularity) / 0.5, rel=1e-15)
    assert mech.granularity < 20.0 * 2.0**-31
    g = pub.release_.guarantee
    assert "our reading" in " ".join(g.assumptions) and "per-record reading" in g.mechanism


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_release_is_one_valid_row_per_input_row(
    cls: type, schema: Schema, df: pd.DataFrame
) -> None:
    rel = cls(1.0, schema, random_state=1).fit(df).release_
    out = rel.data
    assert list(out.columns) == ["x", "c", "y"] and len(out) == len(df)
    assert out["x"].between(10, 20).all()
    assert out["c"].isin(list("abcd")).all() and out["y"].isin([0, 1, 2]).all()
    assert rel.encoded.shape == (len(df), 8)
    assert ((rel.encoded >= 0) & (rel.encoded <= 1)).all()
    assert (rel.encoded[:, 1:5].sum(axis=1) == 1).all() and (rel.encoded[:, 5:].sum(1) == 1).all()
    g = rel.guarantee
    assert g.kind is GuaranteeKind.PURE and g.epsilon == 1.0
    assert g.relation is Neighbouring.REPLACE_ONE
    assert "n (the number of rows) is public" in " ".join(g.assumptions)


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_release_keeps_the_row_order(cls: type, schema: Schema, df: pd.DataFrame) -> None:
    rel = cls(5000.0, schema, random_state=2, allow_large_epsilon=True).fit(df).release_
    out = rel.data
    assert (out["c"].to_numpy() == df["c"].to_numpy()).all()
    assert (out["y"].to_numpy() == df["y"].to_numpy()).all()
    assert np.abs(out["x"].to_numpy() - df["x"].to_numpy()).max() < 0.2


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_seeded_reproducibility(cls: type, schema: Schema, df: pd.DataFrame, seed: int) -> None:
    a = cls(1.0, schema, random_state=seed).fit(df).release_
    b = cls(1.0, schema, random_state=seed).fit(df).release_
    np.testing.assert_array_equal(a.encoded, b.encoded)
    assert a.seeded


@pytest.mark.parametrize("cls", PUBLISHERS)
@pytest.mark.parametrize("eps", [0.0, -2.0, float("nan"), float("inf"), 10.5])
def test_bad_epsilon(cls: type, schema: Schema, df: pd.DataFrame, eps: float) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(20.0))
    with pytest.raises(ParameterError, match=r"epsilon \("):
        cls(eps, schema).fit(df, a)
    assert a.spent.epsilon == 0


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_bad_types(cls: type, schema: Schema) -> None:
    with pytest.raises(ParameterTypeError, match="epsilon"):
        cls("1", schema).privacy_budget()
    with pytest.raises(ParameterTypeError, match="schema"):
        cls(1.0, None).privacy_budget()
    with pytest.raises(ParameterTypeError, match="allow_large_epsilon"):
        cls(1.0, schema, allow_large_epsilon="no").privacy_budget()


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_bad_data_costs_nothing(cls: type, schema: Schema, df: pd.DataFrame) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(2.0))
    bad = df.copy()
    bad.loc[4, "x"] = np.nan
    with pytest.raises(DataValidationError, match="'x'"):
        cls(1.0, schema).fit(bad, a)
    with pytest.raises(DataValidationError, match="0 rows"):
        cls(1.0, schema).fit(df.iloc[:0], a)
    with pytest.raises(DataValidationError, match="missing column"):
        cls(1.0, schema).fit(df.drop(columns="c"), a)
    assert a.spent == PrivacyBudget(0.0) and a.history() == []


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_budget_overrun_refused_before_reading(cls: type, schema: Schema, df: pd.DataFrame) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(0.5))
    bad = df.copy()
    bad.loc[0, "x"] = np.nan
    with pytest.raises(BudgetExceededError):
        cls(1.0, schema).fit(bad, a)
    assert a.spent.epsilon == 0


def test_truncated_laplace_stays_in_the_box_and_on_the_grid(seed: int) -> None:
    src = SeededRandom(seed)
    lam = 2.0**-30
    centre = np.array([[0.0, 1.0, 0.3, 0.999999]] * 5000)
    for scale in (0.05, 1.0, 50.0):
        r = _truncated_laplace_unit(centre, scale, lam, src)
        assert r.shape == centre.shape
        assert ((r >= 0) & (r <= 1)).all()
        np.testing.assert_array_equal(r, np.rint(r / lam) * lam)
    # Small scale: mass concentrates at the centre (the law is the centre's, not uniform).
    r = _truncated_laplace_unit(centre, 0.05, lam, src)
    assert np.abs(np.median(r, axis=0) - [0.0 + 0.035, 1 - 0.035, 0.3, 0.965]).max() < 0.02


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_low_utility_message_names_the_epsilon_that_clears_it(cls: type, schema: Schema) -> None:
    # p1 + 2p2 = 5: LAP's scale is about 5/ε, so √2·b < 2 needs ε above about 3.54 (EXP,
    # at ε/2, twice that). The named ε clears the criterion and 1 % below it does not.
    from ppdp.publish.pca import SWAMPED_NOISE_SD

    msg = cls(1.0, schema).low_utility_message()
    assert msg is not None and "mostly noise" in msg
    needed = float(msg.split("needs epsilon above ")[1].split()[0])
    assert needed == pytest.approx(3.54 if cls is LaplacePublisher else 7.08, rel=0.01)

    def sd(eps: float) -> float:
        return np.sqrt(2.0) * cls(eps, schema)._mechanism().scale

    assert sd(needed) < SWAMPED_NOISE_SD <= sd(needed * 0.99)
    assert cls(needed, schema).low_utility_message() is None
