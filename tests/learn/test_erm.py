"""The ERM solver, the losses and the exact constants of objective and output perturbation."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from ppdp import noise
from ppdp.exceptions import ConvergenceError, ParameterError
from ppdp.learn._erm import (
    DEFAULT_MAX_ITER,
    DEFAULT_RESIDUAL_SHARE,
    HuberLoss,
    LogisticLoss,
    auto_regularization,
    certifiable_tol,
    certified_gradient_bound,
    finish_bounds,
    finish_steps,
    loss_from_dict,
    noise_norm_bound,
    objective_perturbation_constants,
    objective_perturbation_release,
    output_perturbation_constants,
    private_erm,
    regularization_from_svm_c,
    rounding_allowance,
    solve_erm,
    solve_erm_batch,
)
from ppdp.random import SeededRandom


def _data(n: int = 300, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ np.arange(1, d + 1) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _objective(w, X, y, loss, lam, t=None, extra=0.0):
    z = y * (X @ w)
    out = loss.value(z).mean() + 0.5 * (lam + extra) * w @ w
    return out + (0.0 if t is None else t @ w)


# --------------------------------------------------------------------------- losses


def test_logistic_loss_constants() -> None:
    loss = LogisticLoss()
    z = np.linspace(-30, 30, 2001)
    assert loss.smoothness == 0.25
    assert np.all(np.abs(loss.derivative(z)) <= 1.0)
    assert loss.second_derivative(np.array([0.0]))[0] == 0.25  # the max, attained at 0
    assert np.all(loss.second_derivative(z) <= 0.25)
    num = np.gradient(loss.value(z), z)
    np.testing.assert_allclose(num[1:-1], loss.derivative(z)[1:-1], atol=1e-3)


@pytest.mark.parametrize("h", [0.5, 0.25, 1.0])
def test_huber_loss_constants(h: float) -> None:
    loss = HuberLoss(h)
    assert loss.smoothness == 1.0 / (2.0 * h)
    z = np.linspace(-3, 4, 7001)
    assert np.all(np.abs(loss.derivative(z)) <= 1.0)
    assert set(np.unique(loss.second_derivative(z))) <= {0.0, 1.0 / (2.0 * h)}
    # continuous value and derivative at the kinks 1 ± h
    for k in (1 - h, 1 + h):
        lo, hi = np.array([k - 1e-9]), np.array([k + 1e-9])
        assert abs(loss.value(lo)[0] - loss.value(hi)[0]) < 1e-8
        assert abs(loss.derivative(lo)[0] - loss.derivative(hi)[0]) < 1e-8
    assert loss.value(np.array([1 - h]))[0] == pytest.approx(h)  # (2h)²/(4h)
    assert loss_from_dict(loss.to_dict()) == loss


def test_loss_rejects_bad_h() -> None:
    with pytest.raises(ParameterError, match="huber_h"):
        HuberLoss(0.0)


# --------------------------------------------------------------------------- solver


@pytest.mark.parametrize("lam", [1e-1, 1e-3, 1e-5])
def test_logistic_solver_matches_sklearn(lam: float) -> None:
    from sklearn.linear_model import LogisticRegression

    X, y = _data()
    n = X.shape[0]
    w, ok, info = solve_erm(X, y, loss=LogisticLoss(), regularization=lam)
    assert ok and info["gradient_norm"] <= 1e-10
    ref = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=1e-12, max_iter=10_000)
    ref.fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-5 / lam * 1e-3 + 1e-6)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5), HuberLoss(0.1)])
def test_solver_stationarity_with_perturbation(loss) -> None:
    """The solution is a zero of the independently computed gradient of the full objective."""
    X, y = _data(d=3)
    t = np.array([0.05, -0.2, 0.1])
    w, ok, _info = solve_erm(
        X, y, loss=loss, regularization=1e-2, extra_linear_term=t, extra_l2=0.03
    )
    assert ok
    grad = approx_fprime(w, _objective, 1e-7, X, y, loss, 1e-2, t, 0.03)
    assert np.linalg.norm(grad) < 1e-5
    # nothing nearby is lower
    f0 = _objective(w, X, y, loss, 1e-2, t, 0.03)
    rng = np.random.default_rng(1)
    for _ in range(20):
        assert _objective(w + 1e-3 * rng.normal(size=3), X, y, loss, 1e-2, t, 0.03) >= f0


def test_batch_solver_equals_single_solves() -> None:
    X, y = _data(n=40, d=2)
    T = np.array([[0.0, 0.0], [0.3, -0.1], [-1.0, 2.0]])
    W, conv, _ = solve_erm_batch(
        X, y, loss=HuberLoss(0.5), regularization=0.05, extra_linear_terms=T
    )
    assert conv.all()
    for t, w in zip(T, W, strict=True):
        ref, _ok, _ = solve_erm(X, y, loss=HuberLoss(0.5), regularization=0.05, extra_linear_term=t)
        np.testing.assert_allclose(w, ref, atol=1e-9)


def test_solver_reports_non_convergence() -> None:
    X, y = _data()
    _w, ok, info = solve_erm(X, y, loss=LogisticLoss(), regularization=1e-6, max_iter=1)
    assert not ok and info["gradient_norm"] > 1e-10


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_a_newton_solve_cut_short_is_finished_and_released(perturbation) -> None:
    """``max_iter=1`` no longer refuses: the certified finish completes the solve, and the
    result carries public numbers only (the certified τ and the public iteration bound)."""
    X, y = _data()
    kw = dict(loss=LogisticLoss(), epsilon=1.0, regularization=1e-2, perturbation=perturbation)
    cut = private_erm(X, y, random_state=SeededRandom(0), max_iter=1, **kw)
    full = private_erm(X, y, random_state=SeededRandom(0), **kw)
    mu, g0, tau = finish_bounds(cut.constants)
    assert cut.converged and cut.gradient_norm == tau == full.gradient_norm
    assert cut.n_iter == 1 + finish_steps(0.25, mu, g0, tau)
    assert full.n_iter == DEFAULT_MAX_ITER + finish_steps(0.25, mu, g0, tau)
    # both certified to τ: the same release up to the grid (w within 2τ/μ of each other)
    np.testing.assert_allclose(cut.coef, full.coef, rtol=0, atol=1e-6)


@pytest.mark.parametrize("perturbation", ["objective", "output"])
def test_a_broken_finish_refuses_and_shows_no_data_number(monkeypatch, perturbation) -> None:
    """A finish that fails (standing for a floating-point failure of its convergence bound):
    the one refusal after the spend, saying ε was charged, with public numbers only."""
    from ppdp.learn import _erm

    def broken(data, **kw):
        return np.zeros(data.dim), float("nan"), int(kw["steps"])

    monkeypatch.setattr(_erm, "accelerated_finish", broken)
    X, y = _data()
    with pytest.raises(ConvergenceError, match="nothing was released and ε was charged") as info:
        private_erm(
            X,
            y,
            loss=LogisticLoss(),
            epsilon=1.0,
            regularization=1e-2,
            perturbation=perturbation,
            random_state=SeededRandom(0),
            max_iter=1,
        )
    n, d = X.shape
    if perturbation == "objective":
        k = objective_perturbation_constants(1.0, n, 1e-2, 0.25, dim=d, tol=1e-10)
    else:
        k = output_perturbation_constants(
            1.0, n, 1e-2, d, tol=certifiable_tol(1e-10, n, d, 0.25, 1e-2, 0.0)
        )
    mu, g0, tau = finish_bounds(k)
    steps = f"{finish_steps(0.25, mu, g0, tau):,}".split(",")
    numbers = re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?", str(info.value))
    assert set(numbers) <= {f"{tau:g}", "1", "64", *steps}, numbers


def test_certified_gradient_bound_covers_the_exact_gradient() -> None:
    """Huber's ℓ' is piecewise linear, so the exact gradient is a rational number."""
    X, y = _data(n=200, d=3, seed=4)
    loss = HuberLoss(0.5)
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, 3))
    T = rng.normal(size=(5, 3)) / 200
    bound = certified_gradient_bound(X, y, W, loss=loss, regularization=0.01, extra_linear_terms=T)
    h = Fraction(1, 2)
    for k in range(5):
        g = [Fraction(0)] * 3
        w = [Fraction(v) for v in W[k]]
        for i in range(200):
            z = [Fraction(v) for v in X[i]]
            m = Fraction(y[i]) * sum(a * b for a, b in zip(z, w, strict=True))
            if m > 1 + h:
                d1 = Fraction(0)
            elif m < 1 - h:
                d1 = Fraction(-1)
            else:
                d1 = -(1 + h - m) / (2 * h)
            for j in range(3):
                g[j] += d1 * Fraction(y[i]) * z[j] / 200
        g = [g[j] + Fraction(0.01) * w[j] + Fraction(T[k, j]) for j in range(3)]
        exact = math.sqrt(float(sum(v * v for v in g)))
        assert exact <= bound[k]
        assert bound[k] - exact < 1e-12  # the float allowance is tiny


def test_certifiable_tol_raises_tol_only_where_float64_cannot_certify_it() -> None:
    # well-conditioned: the allowance is far below 1e-10, tol is kept
    assert certifiable_tol(1e-10, 30_000, 33, 0.25, 1e-3, 0.01) == 1e-10
    # Λ = 1e-6 allows ‖w‖ up to 10⁶: the margins' rounding alone exceeds tol
    tau = certifiable_tol(1e-10, 30_000, 105, 1.0, 1e-6, 0.01)
    w_bound = (1 + 0.01 + 1e-10) / 1e-6
    assert tau == 4 * rounding_allowance(30_000, 105, 1.0, 1e-6, w_bound, 0.01) > 1e-10
    assert noise_norm_bound(3, 2.0) > 2.0 * 3 * 10  # far in the Gamma(3, 2) tail


def test_certified_gradient_bound_pairwise_branch_matches_blas() -> None:
    X, y = _data(n=3000, d=4)
    W = np.array([[0.3, -0.2, 0.1, 0.5]])
    b_small = certified_gradient_bound(X[:100], y[:100], W, loss=LogisticLoss(), regularization=0.1)
    b_large = certified_gradient_bound(X, y, W, loss=LogisticLoss(), regularization=0.1)
    grad = ((LogisticLoss().derivative(y * (X @ W[0])) * y) @ X) / 3000 + 0.1 * W[0]
    assert np.linalg.norm(grad) <= b_large[0] < np.linalg.norm(grad) + 1e-13
    assert b_small[0] > 0


# --------------------------------------------------------------------------- constants


def test_objective_constants_regular_branch() -> None:
    k = objective_perturbation_constants(1.0, 1000, 0.01, 0.25)
    assert not k.fallback and k.ridge == 0.0
    assert k.epsilon_prime == pytest.approx(1.0 - 2.0 * math.log(1.0 + 0.25 / 10.0), abs=1e-15)
    # the JMLR printed form log(1 + 2c/(nΛ) + c²/(nΛ)²) is the same number
    assert k.epsilon_prime == pytest.approx(1.0 - math.log(1 + 2 * 0.025 + 0.025**2), abs=1e-14)
    assert k.noise_scale == pytest.approx(2.0 / k.epsilon_prime)  # β = ε'/2, not ε'


@pytest.mark.parametrize(("eps", "n", "lam", "c"), [(0.1, 100, 1e-3, 0.25), (0.5, 50, 1e-2, 1.0)])
def test_objective_constants_fallback_branch(eps, n, lam, c) -> None:
    k = objective_perturbation_constants(eps, n, lam, c)
    assert eps - 2 * math.log1p(c / (n * lam)) <= 0  # the branch condition
    assert k.fallback
    assert k.epsilon_prime == eps / 2
    assert k.ridge == pytest.approx(c / (n * (math.exp(eps / 4) - 1)) - lam, rel=1e-14)
    assert k.ridge > 0
    # Jacobian factor with Λ + Δ is exactly e^{ε/2}; noise factor e^{ε'} = e^{ε/2}
    assert (1 + c / (n * (lam + k.ridge))) ** 2 == pytest.approx(math.exp(eps / 2), rel=1e-12)
    assert k.noise_scale == 4.0 / eps


def test_objective_constants_huber_smoothness() -> None:
    k = objective_perturbation_constants(1.0, 100, 0.1, HuberLoss(0.5).smoothness)
    assert k.epsilon_prime == pytest.approx(1.0 - 2.0 * math.log(1.1))
    k2 = objective_perturbation_constants(1.0, 100, 0.1, HuberLoss(0.25).smoothness)
    assert k2.epsilon_prime == pytest.approx(1.0 - 2.0 * math.log(1.2))


def test_output_constants() -> None:
    k = output_perturbation_constants(0.5, 200, 0.01, 4)
    assert k.sensitivity == 2.0 / (200 * 0.01)
    assert k.granularity == noise.granularity(k.sensitivity / 0.5)
    assert k.noise_scale == (k.sensitivity + k.granularity * 2.0) / 0.5
    k_tol = output_perturbation_constants(0.5, 200, 0.01, 4, tol=1e-10)
    assert k_tol.sensitivity == pytest.approx(1.0 + 2e-10 / 0.01, rel=1e-15)


def test_output_sensitivity_is_attained_by_huber() -> None:
    """Huber, d = 1, zero background: w_D = 1/(nΛ), w_D' = −1/(nΛ), gap exactly 2/(nΛ)."""
    n, lam = 10, 0.5  # 1/(nΛ) = 0.2 < 1 − h: the record stays on the linear piece
    X = np.zeros((n, 1))
    X[-1, 0] = 1.0
    y = np.ones(n)
    y_prime = y.copy()
    y_prime[-1] = -1.0
    w, _, _ = solve_erm(X, y, loss=HuberLoss(0.5), regularization=lam)
    w2, _, _ = solve_erm(X, y_prime, loss=HuberLoss(0.5), regularization=lam)
    k = output_perturbation_constants(1.0, n, lam, 1)
    assert abs(w[0] - w2[0]) == pytest.approx(k.sensitivity, rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 30])
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)])
def test_output_sensitivity_bound_holds_on_random_neighbours(loss, n) -> None:
    """RELIABILITY B2: random replacements (inside the ball) never move w* beyond 2/(nΛ)."""
    rng = np.random.default_rng(3)
    d, lam = 3, 0.05
    X, y = _data(n=n, d=d, seed=4)
    w, _, _ = solve_erm(X, y, loss=loss, regularization=lam)
    bound = 2.0 / (n * lam)
    for _ in range(50):
        X2, y2 = X.copy(), y.copy()
        v = rng.normal(size=d)
        X2[0] = v / np.linalg.norm(v) * rng.uniform(0, 1)
        y2[0] = rng.choice([-1.0, 1.0])
        w2, _, _ = solve_erm(X2, y2, loss=loss, regularization=lam)
        assert np.linalg.norm(w - w2) <= bound * (1 + 1e-9)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)])
def test_output_sensitivity_bound_holds_at_corners(loss) -> None:
    """RELIABILITY B2: replaced records at the corners of the unit ball (d = 2), n ∈ {2, 5}."""
    corners = [np.array(v) for v in ([1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0])]
    corners += [c / np.sqrt(2) for c in (np.array([1.0, 1.0]), np.array([1.0, -1.0]))]
    corners.append(np.zeros(2))
    for n, lam in [(2, 0.3), (5, 0.02)]:
        X = np.tile([[0.6, 0.8]], (n, 1))
        y = np.ones(n)
        for x1 in corners:
            for x2 in corners:
                for y1 in (-1.0, 1.0):
                    for y2 in (-1.0, 1.0):
                        Xa, Xb, ya, yb = X.copy(), X.copy(), y.copy(), y.copy()
                        Xa[0], Xb[0], ya[0], yb[0] = x1, x2, y1, y2
                        wa, _, _ = solve_erm(Xa, ya, loss=loss, regularization=lam)
                        wb, _, _ = solve_erm(Xb, yb, loss=loss, regularization=lam)
                        assert np.linalg.norm(wa - wb) <= 2.0 / (n * lam) * (1 + 1e-9)


def test_c_versus_c_over_n() -> None:
    """CMS Λ vs the SVM's C: sensitivity 2L/(nΛ) is 2C (LIBSVM C) or 2C/n (C/n form)."""
    n, c = 1000, 0.5
    lam_libsvm = regularization_from_svm_c(c, n)
    lam_rub = regularization_from_svm_c(c, n, form="rubinstein")
    assert lam_libsvm == 1.0 / (n * c)
    assert lam_rub == 1.0 / c
    assert output_perturbation_constants(1.0, n, lam_libsvm, 1).sensitivity == pytest.approx(2 * c)
    assert output_perturbation_constants(1.0, n, lam_rub, 1).sensitivity == pytest.approx(2 * c / n)
    # The erratum: a LIBSVM C put into the C/n formula under-noises by exactly n.
    wrong = output_perturbation_constants(
        1.0, n, regularization_from_svm_c(c, n, form="rubinstein"), 1
    )
    right = output_perturbation_constants(1.0, n, lam_libsvm, 1)
    assert right.sensitivity / wrong.sensitivity == pytest.approx(n)
    # Rubinstein's L2 bound 2LCκ/n (C/n form, κ = 1) is CMS Cor. 8's 2/(nΛ) with Λ = 1/C.
    assert 2 * 1.0 * c * 1.0 / n == pytest.approx(2.0 / (n * lam_rub))
    with pytest.raises(ParameterError, match="form"):
        regularization_from_svm_c(1.0, 10, form="sklearn")


# --------------------------------------------------------------------------- the noise used


def test_objective_release_is_the_certified_solve_snapped_plus_residual_noise() -> None:
    """A fit's output is snap(w̃(b), Λ_g) + v for the draws b (continuous), v (on the grid),
    and w̃ satisfies the first-order condition b = −n(∇J + Δw̃) up to n·tol."""
    X, y = _data(n=200, d=3)
    n = X.shape[0]
    loss = LogisticLoss()
    for eps, lam in [(1.0, 0.01), (0.1, 1e-4)]:
        res = private_erm(
            X,
            y,
            loss=loss,
            epsilon=eps,
            regularization=lam,
            perturbation="objective",
            random_state=SeededRandom(7),
        )
        k = res.constants
        assert k.residual is not None and k.residual.epsilon == pytest.approx(0.01 * eps)
        src = SeededRandom(7)
        b = noise.gamma_norm_vector(3, k.noise_scale, size=1, random_state=src, rounded=False)
        v = noise.gamma_norm_vector(
            3, k.residual.noise_scale, size=1, random_state=src, granularity=k.residual.granularity
        )
        released, certified, _ = objective_perturbation_release(
            X, y, loss=loss, constants=k, noise=b, residual_noise=v
        )
        assert certified.all()
        np.testing.assert_array_equal(res.coef, released[0])
        # the centre before the residual noise solves the perturbed problem
        w = res.coef - v[0]
        grad = ((loss.derivative(y * (X @ w)) * y) @ X) / n + (lam + k.ridge) * w
        np.testing.assert_allclose(-n * grad, b[0], rtol=1e-6, atol=1e-6 * n)
        # b is not on a grid (its float pattern is the continuous law's)
        frac = b[0] / noise.granularity(k.noise_scale)
        assert np.any(np.abs(frac - np.rint(frac)) > 1e-3)


def test_residual_step_constants_and_auto_regularization() -> None:
    eps, n, c, d, tol = 1.0, 1000, 0.25, 4, 1e-10
    lam = auto_regularization(eps, n, c, residual_share=DEFAULT_RESIDUAL_SHARE)
    k = objective_perturbation_constants(eps, n, lam, c, dim=d, tol=tol)
    assert k.epsilon == eps and not k.fallback
    assert k.epsilon_objective + k.residual.epsilon == pytest.approx(eps, rel=1e-15)
    assert k.epsilon_prime == pytest.approx(k.epsilon_objective / 2, rel=1e-12)
    assert k.residual.sensitivity == 2 * tol / (lam + k.ridge)
    assert k.residual.granularity == noise.granularity(k.residual.sensitivity / 0.01)
    assert k.residual.noise_scale == (
        (k.residual.sensitivity + k.residual.granularity * 2.0) / k.residual.epsilon
    )
    # the fallback's strong convexity is Λ + Δ
    kf = objective_perturbation_constants(0.1, 100, 1e-3, c, dim=d, tol=tol)
    assert kf.fallback and kf.residual.strong_convexity == 1e-3 + kf.ridge
    with pytest.raises(ParameterError, match="residual_share"):
        objective_perturbation_constants(eps, n, lam, c, dim=d, tol=tol, residual_share=1.0)
    with pytest.raises(ParameterError, match="together"):
        objective_perturbation_constants(eps, n, lam, c, dim=d)


def test_output_noise_is_the_gamma_norm_draw() -> None:
    X, y = _data(n=200, d=3)
    res = private_erm(
        X,
        y,
        loss=HuberLoss(0.5),
        epsilon=0.5,
        regularization=0.01,
        perturbation="output",
        random_state=SeededRandom(5),
    )
    k = res.constants
    w_star, _, _ = solve_erm(X, y, loss=HuberLoss(0.5), regularization=0.01)
    b = noise.gamma_norm_vector(
        3, k.noise_scale, random_state=SeededRandom(5), granularity=k.granularity
    )
    np.testing.assert_array_equal(res.coef, noise.snap(w_star, k.granularity) + b)
    sens = 2.0 / (200 * 0.01) + 2.0 * 1e-10 / 0.01  # CMS Cor. 8 + the solver's allowance
    assert k.noise_scale == (sens + k.granularity * math.sqrt(3)) / 0.5


def test_auto_regularization_keeps_the_certified_residual_within_thirty_tol() -> None:
    """At large ε the formula's Λ is tiny and float64 could certify only a large residual;
    "auto" with the vector's length stops at the floor where τ ≤ 30·tol (public inputs)."""
    from ppdp.learn._erm import AUTO_TOL_FACTOR, float_regularization_floor

    n, d, c = 30_162, 33, 0.25
    formula = auto_regularization(10.0, n, c, residual_share=DEFAULT_RESIDUAL_SHARE)
    lam = auto_regularization(10.0, n, c, residual_share=DEFAULT_RESIDUAL_SHARE, dim=d)
    assert lam > formula  # the floor binds at ε = 10 ...
    k = objective_perturbation_constants(10.0, n, lam, c, dim=d, tol=1e-10)
    assert k.residual.tol <= AUTO_TOL_FACTOR * 1e-10 * (1 + 1e-9)
    k_formula = objective_perturbation_constants(10.0, n, formula, c, dim=d, tol=1e-10)
    assert k_formula.residual.noise_scale > 10 * k.residual.noise_scale
    # ... and not at ε = 1, where the formula's Λ is well above it
    assert auto_regularization(1.0, n, c, residual_share=0.01, dim=d) == auto_regularization(
        1.0, n, c, residual_share=0.01
    )
    assert float_regularization_floor(n, d, c, 100.0, tol=1e-30) == 0.0  # unreachable tol
    assert auto_regularization(1e6, n, c) > 0  # no overflow at absurd ε
