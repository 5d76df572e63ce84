"""RELIABILITY.md (c), the bad-input catalogue: one test per row that applies to the foundation.

Each test runs the public path a user would run (schema → accountant → mechanism) and
checks both halves of the contract: the error is one clear message naming the parameter
(never a private value), and nothing was charged for a release that did not happen.
Rows that belong to later layers (covariance PSD, LDA, ERM, RFF, Markov chains, local
randomisers) are tested with those layers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant
from ppdp.data import Schema
from ppdp.data.stats import SufficientStats
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    ParameterError,
    PPDPError,
    PrivacyLeakWarning,
    SchemaError,
)
from ppdp.mechanisms import ExponentialMechanism, GaussianMechanism, LaplaceMechanism

SECRET = 123456.789  # a private value that must never appear in a message

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "income", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "region", "type": "categorical", "categories": ["n", "s"]},
        ],
        "label": {"name": "sick", "classes": ["no", "yes"]},
    }
)


def _release(acct: Accountant, df: pd.DataFrame) -> float:
    """The release order every ppdp pipeline follows: check, validate, spend, release."""
    mech = LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
    acct.check(mech.budget)
    X, _ = SCHEMA.encode(df)
    acct.spend(mech.budget, mechanism=mech.name, **mech.ledger_details())
    return float(mech.randomise(float(X[:, 0].sum()), random_state=0))


def _frame(income: list[object], region: list[str], sick: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"income": income, "region": region, "sick": sick})


@pytest.fixture
def acct() -> Accountant:
    with Accountant.in_memory(total=PrivacyBudget(1.0)) as a:
        yield a


def test_value_outside_bounds_is_clipped_and_counted_never_printed(caplog):
    df = _frame([SECRET, -5.0, 50.0], ["n", "s", "n"], ["no", "yes", "no"])
    with caplog.at_level("DEBUG", logger="ppdp.custodian"):
        X, _, report = SCHEMA.encode(df, return_report=True)
    assert X[:, 0].tolist() == [1.0, 0.0, 0.5]  # clipped to the declared bounds
    assert report.clipped["income"] == 2
    assert "123456" not in caplog.text and "123456" not in repr(report)


@pytest.mark.parametrize(
    "column",
    [
        {"name": "x", "type": "numeric", "lower": 5, "upper": 5},
        {"name": "x", "type": "numeric", "lower": 5, "upper": 1},
        {"name": "x", "type": "numeric", "lower": -math.inf, "upper": 1},
        {"name": "x", "type": "numeric", "lower": 0, "upper": math.nan},
        {"name": "x", "type": "numeric", "upper": 1},
    ],
)
def test_missing_or_bad_bounds_fail_at_construction(column):
    with pytest.raises(SchemaError, match="column 'x'"):
        Schema.from_dict({"columns": [column]})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, None])
def test_nan_or_inf_names_the_column_and_charges_nothing(acct, bad):
    df = _frame([SECRET, bad], ["n", "s"], ["no", "yes"])
    with pytest.raises(DataValidationError, match="column 'income'") as info:
        _release(acct, df)
    assert "123456" not in str(info.value)
    assert acct.spent.is_zero and acct.history() == []


def test_empty_declared_class_keeps_its_slot():
    df = _frame([1.0, 2.0], ["n", "s"], ["no", "no"])  # class "yes" absent
    X, y = SCHEMA.encode(df)
    stats = SufficientStats.compute(X, y, n_classes=SCHEMA.n_classes)
    assert stats.class_counts.tolist() == [2, 0]
    assert stats.class_sum_x.shape == (2, X.shape[1])
    assert not stats.class_sum_x[1].any()


def test_undeclared_category_is_an_error_without_other_bucket(acct):
    df = _frame([1.0, 2.0], ["n", "mars"], ["no", "yes"])
    with pytest.raises(DataValidationError, match="column 'region'") as info:
        _release(acct, df)
    assert "mars" not in str(info.value)  # never reveal (or create) an undeclared key
    assert acct.spent.is_zero


def test_undeclared_category_maps_to_a_declared_other_bucket():
    schema = Schema.from_dict(
        {"columns": [{"name": "r", "type": "categorical", "categories": ["n"], "other": "rest"}]}
    )
    X, _ = schema.encode(pd.DataFrame({"r": ["n", "mars"]}))
    assert schema.feature_names == ("r=n", "r=rest")
    assert X.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_undeclared_label_is_an_error(acct):
    df = _frame([1.0, 2.0], ["n", "s"], ["no", "maybe"])
    with pytest.raises(DataValidationError, match="sick"):
        _release(acct, df)
    assert acct.spent.is_zero


MECHANISMS = [
    lambda eps: LaplaceMechanism(epsilon=eps, sensitivity=1.0),
    lambda eps: GaussianMechanism(epsilon=eps, delta=1e-6, sensitivity=1.0),
    lambda eps: ExponentialMechanism(epsilon=eps, sensitivity=1.0),
]


@pytest.mark.parametrize("make", MECHANISMS)
@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf, True, "1", None])
def test_bad_epsilon_fails_at_construction(make, eps):
    with pytest.raises(PPDPError, match=r"epsilon \(") as info:
        make(eps)
    assert isinstance(info.value, ValueError | TypeError)


@pytest.mark.parametrize("make", MECHANISMS)
def test_large_epsilon_needs_explicit_consent(make):
    with pytest.raises(ParameterError, match="allow_large_epsilon"):
        make(11.0)


def test_noise_scale_underflow_or_overflow_is_refused():
    with pytest.raises(ParameterError, match="noise scale"):
        LaplaceMechanism(epsilon=1.0, sensitivity=1e-320)
    with pytest.raises(ParameterError, match="noise scale"):
        LaplaceMechanism(epsilon=1e-300, sensitivity=1e300)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, math.nan, 0.0])
def test_bad_delta_for_gaussian(delta):
    with pytest.raises(ParameterError, match=r"delta \("):
        GaussianMechanism(epsilon=1.0, delta=delta, sensitivity=1.0)


def test_delta_at_least_one_over_n_warns_or_fails_in_strict_mode():
    with pytest.warns(PrivacyLeakWarning, match="1/n"):
        GaussianMechanism(epsilon=1.0, delta=1e-3, sensitivity=1.0, n=1000)
    with pytest.raises(ParameterError, match="1/n"):
        GaussianMechanism(epsilon=1.0, delta=1e-3, sensitivity=1.0, n=1000, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GaussianMechanism(epsilon=1.0, delta=1e-9, sensitivity=1.0, n=1000)


@pytest.mark.parametrize(
    "X, y",
    [
        (np.ones(5), None),  # 1-D
        (np.array([[0.1, 0.2], [0.3]], dtype=object), None),  # ragged / object
        (np.ones((4, 2)), np.zeros(3, dtype=int)),  # len(y) != len(X)
        (np.array([["a", "b"]]), None),  # strings
    ],
)
def test_wrong_shapes_and_dtypes_are_rejected(X, y):
    with pytest.raises((PPDPError, ValueError, TypeError)):
        SufficientStats.compute(X, y, n_classes=2 if y is not None else None)


@pytest.mark.parametrize(
    "value", [[[SECRET, 2.0], [3.0]], str(SECRET), [SECRET, math.nan], [math.inf, SECRET]]
)
def test_mechanism_rejects_malformed_values_without_printing_them(value):
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=2)
    with pytest.raises((DataValidationError, ParameterError)) as info:
        mech.randomise(value, random_state=0)
    assert "123456" not in str(info.value)


def test_request_larger_than_remaining_is_refused_before_the_data_is_read(acct):
    acct.spend(PrivacyBudget(0.75), mechanism="earlier release")

    class Untouchable(pd.DataFrame):
        def __getattribute__(self, name: str) -> object:
            raise AssertionError("the data were read")

    with pytest.raises(BudgetExceededError, match=r"remaining ε=0\.25"):
        _release(acct, Untouchable())
    assert acct.spent == PrivacyBudget(0.75)
