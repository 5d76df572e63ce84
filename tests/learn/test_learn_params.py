"""The learners' parameters: one constraint table each, checked once per fit (issue 18)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

import ppdp._params
from ppdp._params import check_table, table_fields
from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import InsecureRandomnessWarning, ParameterError, ParameterTypeError
from ppdp.learn import (
    HybridRBFSVM,
    PrivateLinearSVM,
    PrivateLogisticRegression,
    PrivateRBFSVM,
)
from ppdp.learn.linear import LinearParams
from ppdp.learn.rbf_svm import HYBRID_CONSTRAINTS, RBF_CONSTRAINTS, HybridParams, RBFParams
from ppdp.registry import LEARNERS

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)


def _data(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    return X, np.where(X[:, 0] + 0.1 * rng.normal(size=n) > 0.5, "yes", "no")


_PUBLIC = _data(40, seed=9)[0]

#: (learner factory, its parameter type, a field and its validated value)
CASES = [
    pytest.param(
        lambda: PrivateLogisticRegression(epsilon=2, data_norm=2.0, random_state=1),
        LinearParams,
        "epsilon",
        2.0,
        id="logreg",
    ),
    pytest.param(
        lambda: PrivateLinearSVM(data_norm=2.0, huber_h=0.25, random_state=1),
        LinearParams,
        "data_norm",
        2.0,
        id="svm",
    ),
    pytest.param(
        lambda: PrivateRBFSVM(n_components=np.int64(8), random_state=1, feature_random_state=0),
        RBFParams,
        "n_components",
        8,
        id="rbf-svm",
    ),
    pytest.param(
        lambda: HybridRBFSVM(
            _PUBLIC, n_components=6, rho_max_iter=5, random_state=1, feature_random_state=0
        ),
        HybridParams,
        "rho_max_iter",
        5,
        id="hybrid-svm",
    ),
]


def _fit(est, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return est.fit(X, y, **kw)


@pytest.mark.parametrize(("build", "params_type", "field", "value"), CASES)
def test_the_table_builds_a_frozen_typed_object(build, params_type, field, value) -> None:
    est = build()
    assert est._params_type is params_type
    table, declared = table_fields(est._constraints, est._params_type)
    assert table == declared  # every field filled by exactly one rule, in declaration order
    params = est._params()
    assert type(params) is params_type
    assert getattr(params, field) == value and type(getattr(params, field)) is type(value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(params, field, value)


def test_every_learner_declares_its_table_and_no_checked_dict() -> None:
    for name in LEARNERS.names():
        cls = LEARNERS.load(name)
        assert dataclasses.is_dataclass(cls._params_type), name
        assert cls._params_type.__dataclass_params__.frozen, name
        table, declared = table_fields(cls._constraints, cls._params_type)
        assert table == declared, name
        assert not hasattr(cls, "_checked"), name


def test_the_hybrid_table_extends_the_rbf_table() -> None:
    rbf = [r.field for r in RBF_CONSTRAINTS]
    hybrid = [r.field for r in HYBRID_CONSTRAINTS]
    assert hybrid[: len(rbf)] == rbf and len(hybrid) > len(rbf)
    assert issubclass(HybridParams, RBFParams)
    # the hybrid also accepts public tuning, the RBF SVM does not
    hybrid_params = HybridRBFSVM(
        _PUBLIC, tuning="public", public_y=[0, 1] * 20, param_grid={"C": [1.0]}
    )._params()
    assert hybrid_params.tuning == "public" and len(hybrid_params.grid) == 1
    with pytest.raises(ParameterError, match=r"^tuning \('public'\) must be one of"):
        PrivateRBFSVM(tuning="public")._params()


@pytest.mark.parametrize(("build", "params_type", "field", "value"), CASES)
def test_fit_checks_the_table_once(build, params_type, field, value, monkeypatch) -> None:
    calls = []

    def counting(obj, table, ptype):
        calls.append(type(obj).__name__)
        return check_table(obj, table, ptype)

    monkeypatch.setattr(ppdp._params, "check_table", counting)
    est = build()
    X, y = _data()
    _fit(est, X, y)
    assert len(calls) == 1  # _plan twice, data checks, release: one table run
    assert "_fit_params" not in vars(est)  # nothing cached after fit
    est.privacy_budget()
    est.privacy_events()
    assert len(calls) == 3  # outside fit the current attributes are checked, once per call


def test_a_distributed_fit_checks_the_table_once(tmp_path, monkeypatch) -> None:
    pytest.importorskip("dask.dataframe")
    calls = []

    def counting(obj, table, ptype):
        calls.append(1)
        return check_table(obj, table, ptype)

    X, y = _data()
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y}).to_parquet(tmp_path / "t.parquet")
    monkeypatch.setattr(ppdp._params, "check_table", counting)
    est = PrivateLogisticRegression(schema=SCHEMA, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        est.fit(str(tmp_path / "t.parquet"), scheduler="sync")
    assert len(calls) == 1 and "_fit_params" not in vars(est)
    assert est.coef_.shape == (1, 2)


def test_set_params_between_fits_is_seen() -> None:
    X, y = _data()
    clf = PrivateLogisticRegression(epsilon=1.0, data_norm=2.0, random_state=1)
    _fit(clf, X, y)
    assert clf.guarantee_.epsilon == 1.0
    clf.set_params(epsilon=0.5, perturbation="output")
    assert (clf._params().epsilon, clf._params().perturbation) == (0.5, "output")
    _fit(clf, X, y)
    assert clf.guarantee_.epsilon == 0.5 and clf.guarantee_.details["perturbation"] == "output"
    clf.set_params(max_iter=0)
    with pytest.raises(ParameterError, match=r"^max_iter \(0\) must be an integer >= 1$"):
        _fit(clf, X, y)
    assert "_fit_params" not in vars(clf)  # a failed fit leaves nothing cached


#: (learner, bad parameters, error type, the exact one-line message)
BAD = [
    (
        PrivateLogisticRegression,
        {"data_norm": 1.0, "perturbation": "x", "fit_intercept": 1},
        ParameterError,
        "perturbation ('x') must be one of 'objective', 'output'",
    ),
    (
        PrivateLogisticRegression,
        {"data_norm": 1.0, "fit_intercept": 1, "tol": -1},
        ParameterTypeError,
        "fit_intercept (1) must be True or False",
    ),
    (
        PrivateLogisticRegression,
        {},
        ParameterError,
        "data_norm (None) must be declared: a public bound on the Euclidean norm of a record "
        "(it is never read from the data), or give schema= to take the schema's declared "
        "max_row_l2_norm",
    ),
    (
        PrivateLogisticRegression,
        {"data_norm": -2, "classes": ["a", "a"]},
        ParameterError,
        "classes (shape (2,)) must be two distinct declared labels",
    ),
    (
        PrivateLinearSVM,
        {"data_norm": 1.0, "huber_h": 0.0, "max_iter": 0},
        ParameterError,
        "max_iter (0) must be an integer >= 1",
    ),
    (
        PrivateLinearSVM,
        {"data_norm": 1.0, "huber_h": -1},
        ParameterError,
        "huber_h (-1.0) must be a finite number > 0",
    ),
    (
        PrivateRBFSVM,
        {"C_form": "x", "tuning": "public"},
        ParameterError,
        "C_form ('x') must be one of 'rubinstein', 'libsvm'",
    ),
    (
        PrivateRBFSVM,
        {"tuning": "private", "param_grid": {"C": [1.0, -1.0]}},
        ParameterError,
        "C (-1.0) must be a finite number > 0",
    ),
    (
        HybridRBFSVM,
        {"rho_max_iter": 0, "public_X": None},
        ParameterError,
        "rho_max_iter (0) must be an integer >= 1",
    ),
    (
        HybridRBFSVM,
        {"check_overlap": 1, "public_X": _PUBLIC},
        ParameterTypeError,
        "check_overlap (1) must be True or False",
    ),
    (
        HybridRBFSVM,
        {"public_X": _PUBLIC[:1]},
        ParameterError,
        "public_X has 1 row(s); fitting ρ needs at least 2 public rows",
    ),
    (
        HybridRBFSVM,
        {"public_X": _PUBLIC, "tuning": "public", "param_grid": {"C": [1.0, 2.0]}},
        ParameterError,
        "tuning ('public') needs public_y, the public rows' labels",
    ),
]


@pytest.mark.parametrize(("cls", "kw", "error", "message"), BAD)
def test_a_bad_value_gives_the_same_one_line_message(cls, kw, error, message) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    X, y = _data()
    for call in (
        lambda est: est.privacy_budget(),
        lambda est: est.fit(X, y, accountant=acct, allow_seeded=True),
        lambda est: est._params(),
    ):
        est = cls(**kw, random_state=0)
        with pytest.raises(error) as info:
            call(est)
        assert str(info.value) == message and "\n" not in message
        assert "_fit_params" not in vars(est)
    assert acct.spent.epsilon == 0.0 and acct.history() == []
