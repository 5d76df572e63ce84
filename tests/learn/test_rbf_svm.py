"""PrivateRBFSVM and HybridRBFSVM: exact noise constants, the C versus C/n erratum, the
solver, the flow check → validate → spend → release, bad input, model dicts, tuning."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from ppdp.accounting import Accountant
from ppdp.budget import Neighbouring, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    ConvergenceError,
    DataValidationError,
    ParameterError,
    ParameterTypeError,
    PrivacyLeakWarning,
)
from ppdp.learn import HybridRBFSVM, PrivateRBFSVM, rbf_svm
from ppdp.learn.rbf_svm import (
    SOLVER_RTOL,
    libsvm_to_rubinstein_c,
    output_mechanism,
    overlap_count,
    rubinstein_noise_scale,
    rubinstein_sensitivity,
    solve_svm,
)
from ppdp.learn.rff import feature_map


def _data(n: int = 300, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.where(np.linalg.norm(X - 0.5, axis=1) < 0.45, "in", "out")  # not linear
    return X, y


@pytest.fixture
def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(5.0))


# --------------------------------------------------------------------------- constants


def test_lambda_exact_value() -> None:
    # λ = 2^{2.5} C √D / (n ε): C = 3, D = 50, n = 1000, ε = 0.5
    lam = rubinstein_noise_scale(3.0, 50, 1000, 0.5)
    assert lam == 2.0**2.5 * 3.0 * math.sqrt(50) / (1000 * 0.5)
    assert lam == pytest.approx(0.24, rel=1e-15)  # 2^2.5·√50 = √1600 = 40; 40·3/500
    # = 4 C √(2D) / (n ε): the L1 sensitivity over ε
    assert rubinstein_sensitivity(3.0, 50, 1000) / 0.5 == pytest.approx(lam, rel=1e-15)
    assert rubinstein_sensitivity(1.0, 2, 8) == 1.0


def test_mechanism_calibration_is_lambda_plus_tiny_allowances() -> None:
    mech = output_mechanism(epsilon=0.5, C=3.0, n_components=50, n=1000)
    lam = rubinstein_noise_scale(3.0, 50, 1000, 0.5)
    assert mech.sensitivity == rubinstein_sensitivity(3.0, 50, 1000) * (1 + 2 * SOLVER_RTOL)
    assert mech.dimension == 100 and mech.relation is Neighbouring.REPLACE_ONE
    assert lam < mech.scale <= lam * (1 + 2 * SOLVER_RTOL + 1e-7)


def test_c_versus_c_over_n_conversion() -> None:
    """LIBSVM's C_s is n·C_s in the C/n form; plugging C_s in would under-noise by n."""
    n, Cs, D, eps = 400, 0.25, 20, 1.0
    assert libsvm_to_rubinstein_c(Cs, n) == 100.0
    X, y = _data(n)
    common = dict(epsilon=eps, gamma=1.0, n_components=D, feature_random_state=0, random_state=0)
    a = PrivateRBFSVM(C=Cs, C_form="libsvm", **common).fit(X, y)
    b = PrivateRBFSVM(C=n * Cs, **common).fit(X, y)
    correct = 2.0**2.5 * Cs * math.sqrt(D) / eps  # no n left: λ = 2^{2.5} C_s √D / ε
    assert a.noise_scale_ == b.noise_scale_
    assert correct < a.noise_scale_ <= correct * (1 + 3e-6)
    assert a.guarantee_.details["C"] == n * Cs
    # the erratum: C_s used as if it were the C/n-form C
    wrong = rubinstein_noise_scale(Cs, D, n, eps)
    assert correct / wrong == pytest.approx(n, rel=1e-12)
    np.testing.assert_array_equal(a.coef_, b.coef_)  # same objective, same noise stream


def test_libsvm_form_minimises_the_libsvm_objective() -> None:
    """C_form='libsvm' solves ½‖w‖² + C_s Σ ℓ (the erratum's objective, properly scaled)."""
    X, y = _data(120, 3, seed=1)
    ypm = np.where(y == "out", 1.0, -1.0)
    rho = np.random.default_rng(2).normal(size=(6, 3))
    Z = feature_map(X, rho)
    Cs = 0.05
    w, ok, _ = solve_svm(Z, ypm, C=libsvm_to_rubinstein_c(Cs, len(X)), huber_h=0.5)
    assert ok

    def huber(z):
        h = 0.5
        return np.where(z > 1 + h, 0.0, np.where(z < 1 - h, 1 - z, (1 + h - z) ** 2 / (4 * h)))

    def J(v):
        return 0.5 * v @ v + Cs * huber(ypm * (Z @ v)).sum()

    ref = minimize(J, np.zeros(Z.shape[1]), method="BFGS", options={"gtol": 1e-10})
    assert J(w) <= ref.fun + 1e-12
    np.testing.assert_allclose(w, ref.x, atol=1e-5)


def test_solver_meets_the_distance_the_sensitivity_pays_for() -> None:
    X, y = _data(500, 5, seed=3)
    ypm = np.where(y == "out", 1.0, -1.0)
    Z = feature_map(X, np.random.default_rng(4).normal(size=(30, 5)))
    for C in (0.1, 10.0, 1e4):
        _, ok, info = solve_svm(Z, ypm, C=C, huber_h=0.5)
        assert ok
        # J_E = (1/n)Σℓ + ‖w‖²/(2C) is (1/C)-strongly convex: ‖w − w*‖ ≤ C‖∇J_E‖, and
        # ‖∇J_E‖ ≤ SOLVER_RTOL·4/n gives ‖w − w*‖ ≤ SOLVER_RTOL·4C/n
        assert info["gradient_norm"] <= SOLVER_RTOL * 4 / len(X)


def _unconverged_setup(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[np.ndarray, np.ndarray, dict[str, object]]:
    """Data that need 4 Newton steps at C = 10, and a solver allowed only 1: the certified
    finish (accelerated gradient steps, a public number of them) completes the solve."""
    X, y = _data(300, 4, seed=0)
    params = dict(epsilon=1.0, C=10.0, n_components=20, feature_random_state=0)
    rho = PrivateRBFSVM(**params)._frequencies({"n_components": 20, "gamma": 1.0}, 4, 0)
    ypm = np.where(y == "out", 1.0, -1.0)
    _, ok, info = solve_svm(feature_map(X, rho), ypm, C=10.0, huber_h=0.5)
    assert ok and info["finish_steps"] == 0  # Newton alone certifies at the shipped limit
    monkeypatch.setattr(rbf_svm, "SOLVER_MAX_ITER", 1)
    _, ok, info = solve_svm(feature_map(X, rho), ypm, C=10.0, huber_h=0.5)
    assert ok and info["n_iter"] == 1 and info["finish_steps"] > 0
    assert info["gradient_bound"] <= SOLVER_RTOL * 4 / len(X)
    return X, y, params


@pytest.mark.parametrize("cls", ["private", "hybrid"])
def test_a_newton_solve_cut_short_still_releases(
    monkeypatch: pytest.MonkeyPatch, acct, cls: str
) -> None:
    """The refusal after the spend is gone: whatever Newton reaches, the finish certifies."""
    X, y, params = _unconverged_setup(monkeypatch)
    if cls == "hybrid":
        public = np.random.default_rng(9).random((10, 4))
        clf = HybridRBFSVM(public, rho_max_iter=5, random_state=0, **params)
    else:
        clf = PrivateRBFSVM(random_state=0, **params)
    clf.fit(X, y, accountant=acct, allow_seeded=True)
    assert np.all(np.isfinite(clf.coef_))
    assert acct.spent.epsilon == pytest.approx(1.0) and len(acct.history()) == 1


def test_a_broken_finish_refuses_saying_epsilon_was_charged(
    monkeypatch: pytest.MonkeyPatch, acct
) -> None:
    """A finish that fails (standing for a floating-point failure of its bound): the one
    refusal after the spend, with public numbers only and ε said to be charged."""
    X, y, params = _unconverged_setup(monkeypatch)

    def broken(data, **kw):
        return np.zeros(data.dim), float("inf"), int(kw["steps"])

    monkeypatch.setattr(rbf_svm, "accelerated_finish", broken)
    clf = PrivateRBFSVM(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a refusal, not a warning
        with pytest.raises(ConvergenceError) as info:
            clf.fit(X, y, accountant=acct)
    message = str(info.value)
    assert "nothing was released and ε was charged" in message
    assert f"{SOLVER_RTOL * 4 / len(X):.3g}" in message  # the public tolerance
    assert "\n" not in message
    assert acct.spent.epsilon == pytest.approx(1.0)
    assert len(acct.history()) == 1
    assert not hasattr(clf, "coef_") and not hasattr(clf, "classes_")


def test_a_candidate_cut_short_still_releases_under_private_tuning(
    monkeypatch: pytest.MonkeyPatch, acct
) -> None:
    X, y, params = _unconverged_setup(monkeypatch)
    clf = PrivateRBFSVM(**params, tuning="private", param_grid={"C": [10.0, 100.0]}, random_state=0)
    clf.fit(X, y, accountant=acct, allow_seeded=True)
    assert acct.spent.epsilon == pytest.approx(1.0) and np.all(np.isfinite(clf.coef_))


# --------------------------------------------------------------------------- fit / predict


def test_fit_spends_once_and_releases_a_linear_model_without_intercept(acct) -> None:
    X, y = _data()
    clf = PrivateRBFSVM(
        epsilon=0.5, C=5.0, gamma=2.0, n_components=25, feature_random_state=1, random_state=0
    )
    assert clf.fit(X, y, accountant=acct, allow_seeded=True) is clf
    [record] = acct.history()
    assert record.budget == PrivacyBudget(0.5) and record.mechanism == "PrivateRBFSVM"
    assert record.details["noise_scale"] == clf.noise_scale_
    g = clf.guarantee_
    assert g.epsilon == 0.5 and g.relation is Neighbouring.REPLACE_ONE
    assert clf.coef_.shape == (50,) and clf.rho_.shape == (25, 4)
    assert list(clf.classes_) == ["in", "out"]
    # no intercept: the score is exactly ŵᵀz(x)
    np.testing.assert_array_equal(clf.decision_function(X), feature_map(X, clf.rho_) @ clf.coef_)
    assert set(clf.predict(X)) <= {"in", "out"}
    assert not hasattr(clf, "intercept_")


def test_large_epsilon_learns_a_nonlinear_boundary() -> None:
    X, y = _data(600)
    clf = PrivateRBFSVM(
        epsilon=1e6,
        allow_large_epsilon=True,
        C=2000.0,
        gamma=5.0,
        n_components=100,
        feature_random_state=0,
        random_state=0,
    ).fit(X, y)
    assert np.mean(clf.predict(X) == y) > 0.9  # a disc: no linear classifier does this well


def test_seeded_runs_repeat_and_noise_is_laplace_around_the_solution() -> None:
    X, y = _data(200)
    kw = dict(epsilon=1.0, C=1.0, gamma=1.0, n_components=10, feature_random_state=3)
    a = PrivateRBFSVM(random_state=5, **kw).fit(X, y)
    b = PrivateRBFSVM(random_state=5, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.rho_, b.rho_)
    # the noise: many seeds, coordinates minus the exact solution are Lap(λ)
    ypm = np.where(y == "out", 1.0, -1.0)
    w, _, _ = solve_svm(feature_map(X, a.rho_), ypm, C=1.0, huber_h=0.5)
    noise = np.concatenate(
        [PrivateRBFSVM(random_state=s, **kw).fit(X, y).coef_ - w for s in range(60)]
    )
    lam = a.noise_scale_
    # mean |Lap(λ)| = λ; 1,200 draws: sd of the mean ≈ λ/35
    assert abs(np.mean(np.abs(noise)) / lam - 1.0) < 0.15


def test_privacy_budget_from_parameters_alone() -> None:
    assert PrivateRBFSVM(epsilon=0.3).privacy_budget() == PrivacyBudget(0.3)
    assert HybridRBFSVM(np.zeros((3, 2)), epsilon=0.7).privacy_budget() == PrivacyBudget(0.7)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("params", "exc", "match"),
    [
        ({"C": 0.0}, ParameterError, r"C \(0.0\) must be a finite number > 0"),
        ({"C": -1.0}, ParameterError, r"C \(-1.0\)"),
        ({"epsilon": 0.0}, ParameterError, r"epsilon \(0.0\)"),
        ({"epsilon": 50.0}, ParameterError, r"allow_large_epsilon"),
        ({"gamma": -2.0}, ParameterError, r"gamma \(-2.0\)"),
        ({"n_components": 0}, ParameterError, r"n_components \(0\)"),
        ({"huber_h": 0.0}, ParameterError, r"huber_h \(0.0\)"),
        ({"C_form": "svc"}, ParameterError, r"C_form \('svc'\)"),
        ({"tuning": "private"}, ParameterError, r"param_grid \(None\)"),
        ({"tuning": "private", "param_grid": {"C": [1.0]}}, ParameterError, "at least 2"),
        ({"tuning": "private", "param_grid": {"Lambda": [1, 2]}}, ParameterError, "param_grid key"),
        ({"tuning": "public", "param_grid": {"C": [1, 2]}}, ParameterError, r"tuning \('public'\)"),
        ({"epsilon": "1"}, ParameterTypeError, r"epsilon \('1'\)"),
    ],
)
def test_bad_parameters_spend_nothing(params, exc, match, acct) -> None:
    X, y = _data(50)
    with pytest.raises(exc, match=match):
        PrivateRBFSVM(**params).fit(X, y, accountant=acct)
    assert acct.history() == []


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.zeros((10, 2)), np.zeros(10), "1 class"),
        (np.zeros((9, 2)), np.arange(9) % 3, "3 classes"),
        (np.array([[0.0, np.nan], [1.0, 1.0], [0.0, 0.0]]), [0, 1, 0], "NaN"),
        (np.array([[0.0, 1.0]]), [1], "class|rows"),
        (np.zeros((3, 2)), [0, 1], "inconsistent|samples"),
    ],
)
def test_bad_data_spend_nothing(X, y, match, acct) -> None:
    with pytest.raises(DataValidationError, match=match):
        PrivateRBFSVM().fit(X, y, accountant=acct)
    assert acct.history() == []


def test_too_few_rows_for_private_tuning(acct) -> None:
    X, y = _data(5)
    y = np.array(["in", "out", "in", "out", "in"])
    with pytest.raises(DataValidationError, match="needs at least 6"):
        PrivateRBFSVM(tuning="private", param_grid={"C": [1.0, 2.0]}).fit(X, y, accountant=acct)
    assert acct.history() == []


def test_budget_exceeded_touches_nothing() -> None:
    small = Accountant.in_memory(total=PrivacyBudget(0.1))
    with pytest.raises(BudgetExceededError):
        # the data are invalid too: the budget check comes first
        PrivateRBFSVM(epsilon=1.0).fit(np.full((3, 2), np.nan), [0, 1, 0], accountant=small)
    assert small.history() == []


def test_hybrid_warns_when_public_rows_equal_private_rows(acct) -> None:
    X, y = _data(100)
    clf = HybridRBFSVM(X[:20], epsilon=0.5, n_components=5, feature_random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="20 of 20 public rows are identical"):
        clf.fit(X, y, accountant=acct)
    assert overlap_count(X[:20], X[10:]) == 10
    assert overlap_count(-0.0 * X[:3], 0.0 * X[:3]) == 3  # signed zeros hash alike
    # disjoint public rows: no warning
    rng = np.random.default_rng(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        HybridRBFSVM(rng.random((20, 4)), n_components=5, feature_random_state=0).fit(X, y)
    # and the switch for data with natural duplicates
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        HybridRBFSVM(X[:20], n_components=5, check_overlap=False).fit(X, y)


@pytest.mark.parametrize(
    ("public", "exc", "match"),
    [
        (None, ParameterError, r"public_X \(None\) is required"),
        (np.zeros((1, 4)), ParameterError, "at least 2 public rows"),
        (np.full((3, 4), np.nan), DataValidationError, "public_X contains NaN"),
        (np.zeros((3, 2)), DataValidationError, "public_X has 2 columns but X has 4"),
    ],
)
def test_hybrid_bad_public_sample_spends_nothing(public, exc, match, acct) -> None:
    X, y = _data(40)
    with pytest.raises(exc, match=match):
        HybridRBFSVM(public, n_components=3).fit(X, y, accountant=acct)
    assert acct.history() == []


# --------------------------------------------------------------------------- hybrid


def test_hybrid_fits_rho_on_public_rows_and_uses_the_same_noise(acct) -> None:
    X, y = _data(400)
    rng = np.random.default_rng(7)
    public = rng.random((60, 4))
    kw = dict(epsilon=1.0, C=50.0, gamma=2.0, n_components=12, feature_random_state=2)
    hyb = HybridRBFSVM(public, random_state=0, **kw).fit(X, y, accountant=acct, allow_seeded=True)
    priv = PrivateRBFSVM(random_state=0, **kw).fit(X, y)
    assert hyb.noise_scale_ == priv.noise_scale_
    assert hyb.rho_fit_.loss < hyb.rho_fit_.initial_loss
    assert not np.array_equal(hyb.rho_, priv.rho_)  # started from the same draw, then fitted
    # ρ depends on the public rows only: other private rows, same ρ
    other = HybridRBFSVM(public, random_state=1, **kw).fit(*_data(400, seed=5))
    np.testing.assert_array_equal(other.rho_, hyb.rho_)
    assert "public" in " ".join(hyb.guarantee_.assumptions)
    assert acct.spent.epsilon == pytest.approx(1.0)


def test_hybrid_fits_rho_on_at_most_rho_fit_rows_public_rows() -> None:
    """A public sample above ``rho_fit_rows`` is subsampled for the fit (its cost is
    quadratic in the rows): ρ is the fit on the seeded uniform subsample, exactly; at or
    under the cap, and with ``None``, the fit reads every row (the default keeps every
    published result, fitted on at most 500 rows, as it was)."""
    from ppdp.learn.rff import fit_frequencies

    X, y = _data(200)
    public = np.random.default_rng(8).random((90, 4))
    kw = dict(epsilon=1.0, C=5.0, gamma=2.0, n_components=6, feature_random_state=3)
    kw |= dict(rho_max_iter=20, random_state=0)
    capped = HybridRBFSVM(public, rho_fit_rows=40, **kw).fit(X, y)
    keep = np.sort(np.random.default_rng(3).choice(90, 40, replace=False))
    alone = fit_frequencies(public[keep], n_components=6, gamma=2.0, random_state=3, max_iter=20)
    np.testing.assert_array_equal(capped.rho_, alone.rho)
    every = fit_frequencies(public, n_components=6, gamma=2.0, random_state=3, max_iter=20)
    for cap in (None, 90, 5000):
        whole = HybridRBFSVM(public, rho_fit_rows=cap, **kw).fit(X, y)
        np.testing.assert_array_equal(whole.rho_, every.rho)
    assert not np.array_equal(capped.rho_, every.rho)
    with pytest.raises(ParameterError, match=r"rho_fit_rows \(1\) must be an integer >= 2"):
        HybridRBFSVM(public, rho_fit_rows=1, **kw).fit(X, y)


def test_hybrid_public_tuning_is_free_and_picks_from_the_grid(acct) -> None:
    X, y = _data(300)
    pub_X, pub_y = _data(60, seed=11)
    grid = {"C": [1.0, 100.0], "gamma": [0.5, 4.0]}
    clf = HybridRBFSVM(
        pub_X,
        public_y=pub_y,
        tuning="public",
        param_grid=grid,
        n_components=8,
        rho_max_iter=50,
        feature_random_state=0,
        random_state=0,
    ).fit(X, y, accountant=acct, allow_seeded=True)
    assert clf.best_params_["C"] in grid["C"] and clf.best_params_["gamma"] in grid["gamma"]
    assert acct.spent.epsilon == pytest.approx(1.0)  # only the private fit is charged


def test_private_tuning_costs_epsilon_once_and_uses_disjoint_parts(acct) -> None:
    X, y = _data(600)
    grid = {"C": [1.0, 30.0, 1000.0]}
    clf = PrivateRBFSVM(
        epsilon=0.8,
        tuning="private",
        param_grid=grid,
        n_components=10,
        feature_random_state=0,
        random_state=0,
    ).fit(X, y, accountant=acct, allow_seeded=True)
    [record] = acct.history()
    assert record.budget == PrivacyBudget(0.8) and record.details["candidates"] == 3
    assert clf.best_params_["C"] in grid["C"]
    # each candidate trained on a quarter of the rows: λ uses that n
    assert clf.n_train_rows_ == 150
    assert clf.noise_scale_ == pytest.approx(
        rubinstein_noise_scale(clf.best_params_["C"], 10, 150, 0.8), rel=3e-6
    )
    assert "private tuning" in " ".join(clf.guarantee_.assumptions)


# --------------------------------------------------------------------------- model dicts


@pytest.mark.parametrize("cls", [PrivateRBFSVM, HybridRBFSVM])
def test_model_dict_round_trip_holds_nothing_private(cls) -> None:
    X, y = _data(150)
    kw = dict(epsilon=1.0, C=10.0, gamma=1.0, n_components=6, feature_random_state=0)
    public = np.random.default_rng(1).random((10, 4))
    clf = (cls(public, **kw) if cls is HybridRBFSVM else cls(**kw)).fit(X, y)
    data = clf.to_model_dict()
    text = json.dumps(data, allow_nan=False)
    hyper = data["hyperparameters"]
    assert "public_X" not in hyper and "public_y" not in hyper and "random_state" not in hyper
    assert set(data["model"]) == {"rho", "coef", "noise_scale", "n_train_rows", "chosen"}
    back = cls.from_model_dict(json.loads(text))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    assert back.guarantee_.to_dict() == clf.guarantee_.to_dict()


def test_model_dict_refuses_a_wrong_shape() -> None:
    X, y = _data(60)
    data = PrivateRBFSVM(n_components=3, feature_random_state=0).fit(X, y).to_model_dict()
    data["model"]["coef"] = data["model"]["coef"][:-1]
    with pytest.raises(ParameterError, match="2·D entries"):
        PrivateRBFSVM.from_model_dict(data)


def test_hybrid_private_tuning_keeps_the_chosen_candidates_rho_fit(acct) -> None:
    X, y = _data(400)
    public = np.random.default_rng(3).random((30, 4))
    clf = HybridRBFSVM(
        public,
        tuning="private",
        param_grid={"n_components": [3, 7]},
        rho_max_iter=20,
        feature_random_state=0,
        random_state=0,
    ).fit(X, y, accountant=acct, allow_seeded=True)
    D = clf.best_params_["n_components"]
    assert clf.rho_.shape == (D, 4) and clf.coef_.shape == (2 * D,)
    np.testing.assert_array_equal(clf.rho_fit_.rho, clf.rho_)
    assert acct.spent.epsilon == pytest.approx(1.0)


def test_hybrid_public_tuning_simulates_the_release_noise() -> None:
    X, y = _data(300)
    pub_X, pub_y = _data(60, seed=11)
    common = dict(
        public_y=pub_y,
        tuning="public",
        param_grid={"C": [50.0]},
        n_components=8,
        rho_max_iter=30,
        feature_random_state=0,
        random_state=0,
        allow_large_epsilon=True,
    )
    quiet = HybridRBFSVM(pub_X, epsilon=1e6, **common).fit(X, y)
    noisy = HybridRBFSVM(pub_X, epsilon=0.01, **common).fit(X, y)
    # the same candidate, scored with the noise its release will have: far more mistakes
    assert noisy.public_tuning_mistakes_ > quiet.public_tuning_mistakes_ + 5
