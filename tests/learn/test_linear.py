"""PrivateLogisticRegression and PrivateLinearSVM: API, spending order, bad input, model files."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.learn import PrivateLinearSVM, PrivateLogisticRegression
from ppdp.learn._base import clip_to_unit_ball
from ppdp.learn.linear import DEFAULT_REGULARIZATION

LEARNERS = [PrivateLogisticRegression, PrivateLinearSVM]


def _data(n: int = 400, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.ones(d) > 0, "yes", "no")
    return X, y


@pytest.fixture
def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(5.0))


@pytest.mark.parametrize("cls", LEARNERS)
@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_fit_spends_once_and_states_guarantee(cls, perturbation, acct) -> None:
    X, y = _data()
    clf = cls(epsilon=0.5, data_norm=4.0, perturbation=perturbation, random_state=0)
    assert clf.fit(X, y, accountant=acct, allow_seeded=True) is clf
    assert acct.spent.epsilon == pytest.approx(0.5)
    [record] = acct.history()
    assert perturbation in record.mechanism
    g = clf.guarantee_
    assert g.epsilon == 0.5 and g.relation is Neighbouring.REPLACE_ONE
    assert g.details["perturbation"] == perturbation
    assert clf.coef_.shape == (1, 3) and clf.n_features_in_ == 3
    assert list(clf.classes_) == ["no", "yes"]
    assert set(clf.predict(X)) <= {"no", "yes"}
    # the released model is a linear score in the original scale (rows within data_norm)
    inside = X[np.linalg.norm(X, axis=1) <= 4.0]
    np.testing.assert_allclose(
        clf.decision_function(inside), inside @ clf.coef_[0] + clf.intercept_[0], rtol=1e-12
    )


def test_predict_proba_is_logistic() -> None:
    X, y = _data()
    clf = PrivateLogisticRegression(epsilon=1.0, data_norm=4.0, random_state=1).fit(X, y)
    p = clf.predict_proba(X[:5])
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-clf.decision_function(X[:5]))))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X[:5])), p)
    assert not hasattr(PrivateLinearSVM(), "predict_proba")


def test_objective_perturbation_learns_at_reasonable_epsilon() -> None:
    X, y = _data(n=4000, d=3)
    clf = PrivateLogisticRegression(epsilon=1.0, data_norm=4.0, random_state=2).fit(X, y)
    assert (clf.predict(X) == y).mean() > 0.9


def test_budget_is_checked_before_the_data_are_read() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(0.1))
    X = np.array([[np.nan, 1.0]] * 10)  # invalid: but the budget refusal comes first
    with pytest.raises(BudgetExceededError):
        PrivateLogisticRegression(epsilon=1.0, data_norm=1.0).fit(X, [0, 1] * 5, accountant=acct)
    assert acct.spent.epsilon == 0.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"regularization": 0.0}, ParameterError, r"regularization \(0.0\)"),
        ({"regularization": -1.0}, ParameterError, "regularization"),
        ({"epsilon": 0.0}, ParameterError, "epsilon"),
        ({"epsilon": float("nan")}, ParameterError, "epsilon"),
        ({"epsilon": 11.0}, ParameterError, "epsilon"),
        ({"epsilon": True}, ParameterTypeError, "epsilon"),
        ({"data_norm": float("inf")}, ParameterError, "data_norm"),
        ({"data_norm": True}, ParameterTypeError, "data_norm"),
        ({"data_norm": None}, ParameterError, r"data_norm \(None\) must be declared"),
        ({"data_norm": -2.0}, ParameterError, "data_norm"),
        ({"perturbation": "input"}, ParameterError, "perturbation"),
        ({"tol": 0.0}, ParameterError, "tol"),
        ({"max_iter": 0}, ParameterError, "max_iter"),
        ({"fit_intercept": "yes"}, ParameterTypeError, "fit_intercept"),
        ({"tuning": [1e-3]}, ParameterError, "at least 2"),
        ({"tuning": [1e-3, -1.0]}, ParameterError, r"regularization_grid\[1\]"),
    ],
)
def test_bad_parameters_cost_nothing(kwargs, error, match, acct) -> None:
    X, y = _data()
    params = {"epsilon": 1.0, "data_norm": 4.0, **kwargs}
    with pytest.raises(error, match=match) as info:
        PrivateLogisticRegression(**params).fit(X, y, accountant=acct)
    assert "\n" not in str(info.value)
    assert acct.spent.epsilon == 0.0


def test_huber_h_must_be_positive(acct) -> None:
    X, y = _data()
    with pytest.raises(ParameterError, match="huber_h"):
        PrivateLinearSVM(data_norm=1.0, huber_h=0.0).fit(X, y, accountant=acct)
    assert acct.spent.epsilon == 0.0


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.ones((10, 2)), np.arange(10) % 3, "Only binary classification"),
        (np.ones((10, 2)), np.zeros(10), "1 class"),
        (np.array([[np.nan, 1.0]] * 10), np.arange(10) % 2, "NaN"),
        (np.array([[np.inf, 1.0]] * 10), np.arange(10) % 2, "infinity"),
        (np.ones((1, 2)), np.array([1]), "1 class|at least"),
        (np.ones((10, 2)), np.linspace(0, 1, 10), "continuous"),
        (np.ones(10), np.arange(10) % 2, "2D array"),
    ],
)
def test_bad_data_cost_nothing(X, y, match, acct) -> None:
    with pytest.raises(DataValidationError, match=match) as info:
        PrivateLinearSVM(data_norm=1.0).fit(X, y, accountant=acct)
    assert "\n" not in str(info.value)
    assert acct.spent.epsilon == 0.0


def test_too_few_rows_for_tuning(acct) -> None:
    X, y = np.eye(2).repeat(3, axis=0), np.array([0, 1] * 3)
    with pytest.raises(DataValidationError, match="at least 8"):
        PrivateLogisticRegression(data_norm=1.0, tuning=[0.1, 1.0, 10.0]).fit(X, y, accountant=acct)
    assert acct.spent.epsilon == 0.0


def test_wrong_relation_is_refused() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0), relation="add-remove")
    X, y = _data()
    with pytest.raises(ParameterError, match="replace-one"):
        PrivateLogisticRegression(data_norm=4.0).fit(X, y, accountant=acct)
    assert acct.spent.epsilon == 0.0


def test_declared_norm_violation_is_clipped_and_counted(caplog, acct) -> None:
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 10.0], [1.0, 0.0]] * 5)
    y = np.array([0, 1, 0, 1] * 5)
    with caplog.at_level(logging.INFO, logger="ppdp.custodian"):
        clf = PrivateLogisticRegression(data_norm=1.0, random_state=0).fit(
            X, y, accountant=acct, allow_seeded=True
        )
    msgs = [r.getMessage() for r in caplog.records if r.name == "ppdp.custodian"]
    assert any("10 of 20 rows" in m for m in msgs)
    # the count is a fact about the data: it is not part of the release
    assert (
        "10" not in json.dumps(clf.to_model_dict()["guarantee"]["details"]).split("n_train")[0][-5:]
    )
    Z, k = clip_to_unit_ball(X, 1.0)
    assert k == 10 and np.all(np.linalg.norm(Z, axis=1) <= 1.0)


def test_clipping_never_exceeds_one_after_rounding() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 7)) * rng.uniform(0.5, 1e6, size=(5000, 1))
    Z, _ = clip_to_unit_ball(X, 0.3)
    assert np.all(np.sqrt(np.einsum("ij,ij->i", Z, Z)) <= 1.0)


def test_intercept_is_a_constant_feature_inside_the_ball() -> None:
    X, y = _data(n=2000)
    y = np.where(X[:, 0] > 0.8, 1, 0)  # an unbalanced problem that needs a bias
    clf = PrivateLogisticRegression(
        epsilon=2.0, data_norm=5.0, fit_intercept=True, intercept_scaling=2.0, random_state=0
    )
    clf.fit(X, y)
    Z = clf._prepare(X)
    assert Z.shape[1] == 4 and np.all(np.linalg.norm(Z, axis=1) <= 1.0)
    np.testing.assert_allclose(Z[:, -1], 2.0 / math.sqrt(5.0))
    assert clf.intercept_[0] != 0.0
    inside = X[np.linalg.norm(X, axis=1) <= 5.0]
    np.testing.assert_allclose(
        clf.decision_function(inside), inside @ clf.coef_[0] + clf.intercept_[0], rtol=1e-10
    )
    assert any("intercept" in a for a in clf.guarantee_.assumptions)


def test_not_fitted() -> None:
    with pytest.raises(NotFittedError, match="not fitted"):
        PrivateLogisticRegression(data_norm=1.0).predict(np.ones((2, 2)))


def test_wrong_feature_count_at_predict() -> None:
    X, y = _data()
    clf = PrivateLinearSVM(data_norm=4.0, random_state=0).fit(X, y)
    with pytest.raises(DataValidationError, match="features"):
        clf.predict(np.ones((2, 5)))


def test_seeded_fits_are_reproducible_and_unseeded_differ() -> None:
    X, y = _data()
    a = PrivateLogisticRegression(data_norm=4.0, random_state=3).fit(X, y).coef_
    b = PrivateLogisticRegression(data_norm=4.0, random_state=3).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    c = PrivateLogisticRegression(data_norm=4.0).fit(X, y).coef_
    d = PrivateLogisticRegression(data_norm=4.0).fit(X, y).coef_
    assert not np.array_equal(c, d)


@pytest.mark.parametrize("cls", LEARNERS)
def test_model_dict_round_trip(cls) -> None:
    X, y = _data()
    clf = cls(epsilon=1.0, data_norm=4.0, fit_intercept=True, random_state=0).fit(X, y)
    d = json.loads(json.dumps(clf.to_model_dict()))
    assert d["class"] == cls.__name__ and d["classes"] == ["no", "yes"]
    assert "random_state" not in d["hyperparameters"]
    assert set(d["model"]) == {"coef", "intercept", "regularization"}
    # solver diagnostics depend on the data: never in the released file
    text = json.dumps(d)
    assert "n_iter" not in text and "converged" not in text
    back = cls.from_model_dict(d)
    np.testing.assert_allclose(back.decision_function(X), clf.decision_function(X))
    assert back.guarantee_ == clf.guarantee_
    assert list(back.predict(X[:3])) == list(clf.predict(X[:3]))
    with pytest.raises(ParameterError, match="class"):
        PrivateLogisticRegression.from_model_dict({**d, "class": "Other"})


def test_privacy_budget_from_parameters_alone() -> None:
    assert PrivateLinearSVM(epsilon=0.3, data_norm=1.0).privacy_budget() == PrivacyBudget(0.3)
    assert PrivateLinearSVM(
        epsilon=0.3, data_norm=1.0, tuning=[0.1, 1.0]
    ).privacy_budget() == PrivacyBudget(0.3)


def test_fallback_branch_is_stated() -> None:
    X, y = _data(n=100)
    clf = PrivateLogisticRegression(epsilon=0.1, regularization=1e-4, data_norm=4.0, random_state=0)
    clf.fit(X, y)
    assert clf.guarantee_.details["fallback"] is True
    # ε_obj = 0.99 ε after the certified residual step's 1 %
    assert clf.guarantee_.details["epsilon_prime"] == pytest.approx(0.099 / 2, rel=1e-14)
    assert clf.guarantee_.details["residual_epsilon"] == pytest.approx(0.001, rel=1e-14)
    assert clf.guarantee_.epsilon == 0.1
    assert any("Δ fallback" in a for a in clf.guarantee_.assumptions)


def test_auto_regularization_is_the_no_fallback_boundary() -> None:
    X, y = _data(n=1000)
    clf = PrivateLogisticRegression(
        epsilon=1.0, regularization="auto", data_norm=4.0, random_state=0
    ).fit(X, y)
    # ε_obj = 0.99 ε: the residual step takes 1 %
    assert clf.regularization_ == pytest.approx(0.25 / (1000 * math.expm1(0.99 / 4)), rel=1e-15)
    assert clf.guarantee_.details["epsilon_prime"] == pytest.approx(0.495, abs=1e-12)
    assert not clf.guarantee_.details["fallback"]
    svm = PrivateLinearSVM(epsilon=2.0, regularization="auto", data_norm=4.0, random_state=0)
    assert svm.fit(X, y).regularization_ == pytest.approx(1.0 / (1000 * math.expm1(1.98 / 4)))
    # output perturbation has no least Λ: "auto" is the public constant 1e-3 there
    out = PrivateLinearSVM(perturbation="output", data_norm=1.0, random_state=0).fit(X, y)
    assert out.regularization_ == DEFAULT_REGULARIZATION == 1e-3
    assert PrivateLogisticRegression().regularization == "auto"  # the default
    with pytest.raises(ParameterError, match="regularization"):
        PrivateLinearSVM(regularization="big", data_norm=1.0).fit(X, y)


def test_declared_classes(acct) -> None:
    X, y = _data(n=200)
    only_no = np.full(200, "no")
    clf = PrivateLinearSVM(data_norm=4.0, classes=["no", "yes"], random_state=0)
    # one class present: fine when both are declared
    clf.fit(X, only_no, accountant=acct, allow_seeded=True)
    assert list(clf.classes_) == ["no", "yes"]
    assert "the two class labels are declared" in clf.guarantee_.assumptions
    spent = acct.spent.epsilon
    with pytest.raises(DataValidationError, match="1 label"):
        PrivateLinearSVM(data_norm=4.0, classes=["no", "maybe"]).fit(
            X[:3], ["no", "yes", "maybe"], accountant=acct
        )
    with pytest.raises(ParameterError, match="two distinct"):
        PrivateLinearSVM(data_norm=4.0, classes=["no", "no"]).fit(X, y, accountant=acct)
    assert acct.spent.epsilon == spent
    back = PrivateLinearSVM.from_model_dict(json.loads(json.dumps(clf.to_model_dict())))
    assert list(back.classes_) == ["no", "yes"]


def test_clipping_invariance() -> None:
    """A row far outside the declared norm gives the same release as that row pre-clipped."""
    X, y = _data(n=300)
    X_far = X.copy()
    X_far[0] = X[0] / np.linalg.norm(X[0]) * 400.0
    X_clipped = X.copy()
    X_clipped[0] = X[0] / np.linalg.norm(X[0]) * 4.0
    for pert in ("objective", "output"):
        a = PrivateLogisticRegression(data_norm=4.0, perturbation=pert, random_state=9)
        b = PrivateLogisticRegression(data_norm=4.0, perturbation=pert, random_state=9)
        np.testing.assert_allclose(a.fit(X_far, y).coef_, b.fit(X_clipped, y).coef_, rtol=1e-12)


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_fit_is_private_erm_on_the_clipped_records(perturbation) -> None:
    """The estimator releases exactly private_erm's output (the audited path), rescaled."""
    from ppdp.learn._erm import LogisticLoss, private_erm
    from ppdp.random import SeededRandom

    X, y = _data(n=300)
    clf = PrivateLogisticRegression(
        epsilon=0.7,
        regularization=0.01,
        data_norm=4.0,
        perturbation=perturbation,
        fit_intercept=False,
        random_state=11,
    ).fit(X, y)
    Z, _ = clip_to_unit_ball(X, 4.0)
    res = private_erm(
        Z,
        np.where(y == "yes", 1.0, -1.0),
        loss=LogisticLoss(),
        epsilon=0.7,
        regularization=0.01,
        perturbation=perturbation,
        random_state=SeededRandom(11),
    )
    np.testing.assert_array_equal(clf.coef_[0] * 4.0, res.coef)


def test_model_dict_keeps_feature_names() -> None:
    import pandas as pd

    X, y = _data()
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    clf = PrivateLogisticRegression(data_norm=4.0, random_state=0).fit(df, y)
    d = json.loads(json.dumps(clf.to_model_dict()))
    assert d["feature_names"] == ["a", "b", "c"]
    back = PrivateLogisticRegression.from_model_dict(d)
    np.testing.assert_allclose(back.predict_proba(df), clf.predict_proba(df))


def test_failed_release_does_not_look_fitted(monkeypatch) -> None:
    X, y = _data()
    clf = PrivateLogisticRegression(data_norm=4.0, random_state=0)

    def boom(*args, **kwargs):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(clf, "_release", boom)
    with pytest.raises(RuntimeError):
        clf.fit(X, y)
    with pytest.raises(NotFittedError):
        clf.predict(X)


def test_clipping_survives_huge_values() -> None:
    X = np.array([[1e308, 1e308], [-1e300, 0.0], [0.1, 0.1]])
    Z, k = clip_to_unit_ball(X, 1e-3)
    assert k == 3 and np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z[0], [np.sqrt(0.5)] * 2)
    np.testing.assert_allclose(Z[1], [-1.0, 0.0])
    assert np.all(np.sqrt(np.einsum("ij,ij->i", Z, Z)) <= 1.0)


def test_low_utility_is_logged_from_public_quantities(caplog) -> None:
    X, y = _data(n=50)
    with caplog.at_level(logging.WARNING, logger="ppdp.learn.linear"):
        PrivateLogisticRegression(
            epsilon=0.1, perturbation="output", data_norm=4.0, random_state=0
        ).fit(X, y)
    assert any("noise dominates" in r.getMessage() for r in caplog.records)
    caplog.clear()
    X, y = _data(n=5000)
    with caplog.at_level(logging.WARNING, logger="ppdp.learn.linear"):
        PrivateLogisticRegression(
            epsilon=1.0, perturbation="output", regularization=0.1, data_norm=4.0, random_state=0
        ).fit(X, y)
        PrivateLogisticRegression(epsilon=0.1, data_norm=4.0, random_state=0).fit(X[:50], y[:50])
    assert not any("noise dominates" in r.getMessage() for r in caplog.records)


def test_nan_error_names_the_columns_never_a_value(acct) -> None:
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"age": [0.1] * 10, "hours": [np.nan] + [0.2] * 9})
    with pytest.raises(DataValidationError, match=r"column\(s\) \['hours'\]") as info:
        PrivateLogisticRegression(data_norm=1.0).fit(X, np.arange(10) % 2, accountant=acct)
    assert "0.2" not in str(info.value) and "\n" not in str(info.value)
    assert acct.spent.epsilon == 0.0
