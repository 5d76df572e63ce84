"""Random Fourier features: unit norm, kernel convergence, the ρ fit and its gradient."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad
from sklearn.utils.estimator_checks import parametrize_with_checks

from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.learn.rff import (
    RandomFourierFeatures,
    draw_frequencies,
    feature_map,
    fit_frequencies,
    kernel_fit_loss,
    rbf_kernel,
)


def test_every_row_has_norm_one_to_1e12(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # wild inputs and wild frequencies: the norm must not depend on either
    X = np.vstack([rng.normal(scale=s, size=(50, 7)) for s in (1e-8, 1.0, 1e3, 1e8)])
    for gamma in (1e-6, 0.5, 1e4):
        Z = RandomFourierFeatures(n_components=37, gamma=gamma, random_state=seed).fit_transform(X)
        norms = np.linalg.norm(Z, axis=1)
        assert Z.shape == (200, 74)
        assert np.max(np.abs(norms - 1.0)) <= 1e-12


def test_norm_one_for_any_rho_including_fitted_and_extreme() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((30, 4))
    for rho in (np.zeros((5, 4)), rng.normal(scale=1e6, size=(5, 4)), rng.random((1, 4))):
        assert np.allclose(np.linalg.norm(feature_map(X, rho), axis=1), 1.0, rtol=0, atol=1e-15)


def test_layout_is_cos_sin_pairs_over_sqrt_d() -> None:
    X = np.array([[0.3, -0.2]])
    rho = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    proj = X @ rho.T
    expect = np.column_stack([np.cos(proj[0]), np.sin(proj[0])]).reshape(1, -1) / np.sqrt(3)
    assert np.allclose(feature_map(X, rho), expect, rtol=0, atol=1e-15)


def test_inner_product_is_mean_of_cosines_of_differences() -> None:
    rng = np.random.default_rng(2)
    X = rng.random((6, 3))
    rho = rng.normal(size=(9, 3))
    Z = feature_map(X, rho)
    diff = X[:, None, :] - X[None, :, :]
    expect = np.cos(np.einsum("abk,jk->abj", diff, rho)).mean(axis=2)
    assert np.allclose(Z @ Z.T, expect, rtol=0, atol=1e-13)


def test_kernel_approximation_converges_to_rbf() -> None:
    """Error ~ D^{-1/2}: max error over pairs shrinks as D grows, and is small at D = 20,000."""
    rng = np.random.default_rng(3)
    X = rng.random((25, 5))
    gamma = 0.7
    K = rbf_kernel(X, X, gamma)
    errors = []
    for D in (50, 500, 20_000):
        rff = RandomFourierFeatures(n_components=D, gamma=gamma, random_state=4).fit(X)
        errors.append(np.max(np.abs(rff.kernel(X) - K)))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03  # ≈ 4.5/√(2·20000) with a max over 300 pairs
    # and the frequency law is N(0, 2γ I)
    rho = draw_frequencies(200_000, 1, gamma, 5)
    assert abs(rho.var() - 2 * gamma) < 0.02


def test_rbf_kernel_matches_sklearn() -> None:
    from sklearn.metrics.pairwise import rbf_kernel as sk_rbf

    rng = np.random.default_rng(6)
    X, Y = rng.random((7, 3)), rng.random((5, 3))
    assert np.allclose(rbf_kernel(X, Y, 1.3), sk_rbf(X, Y, gamma=1.3), rtol=0, atol=1e-14)


def test_rho_is_reproducible_and_independent_of_values() -> None:
    X1, X2 = np.zeros((4, 3)), np.ones((9, 3))
    a = RandomFourierFeatures(n_components=5, gamma=1.0, random_state=8).fit(X1).rho_
    b = RandomFourierFeatures(n_components=5, gamma=1.0, random_state=8).fit(X2).rho_
    assert np.array_equal(a, b)
    names = RandomFourierFeatures(n_components=2, random_state=0).fit(X1).get_feature_names_out()
    assert names.tolist() == ["cos0", "sin0", "cos1", "sin1"]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n_components": 0}, ParameterError, r"n_components \(0\)"),
        ({"gamma": 0.0}, ParameterError, r"gamma \(0.0\) must be a finite number > 0"),
        ({"gamma": -1.0}, ParameterError, r"gamma \(-1.0\)"),
        ({"gamma": float("nan")}, ParameterError, r"gamma"),
        ({"n_components": 2.5}, ParameterTypeError, r"n_components"),
    ],
)
def test_bad_parameters(kwargs, exc, match) -> None:
    with pytest.raises(exc, match=match):
        RandomFourierFeatures(**kwargs).fit(np.zeros((3, 2)))


# --------------------------------------------------------------------------- ρ fitting


def test_analytic_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(9)
    X = rng.random((20, 4))
    K = rbf_kernel(X, X, 0.8)
    rho = draw_frequencies(6, 4, 0.8, 10).reshape(-1)

    def f(v):
        return kernel_fit_loss(v, X, K, 6, with_gradient=False)

    def g(v):
        return kernel_fit_loss(v, X, K, 6)[1]

    assert check_grad(f, g, rho) < 1e-7 * max(1.0, np.linalg.norm(g(rho)))


def test_loss_is_the_pairwise_definition() -> None:
    rng = np.random.default_rng(11)
    X = rng.random((8, 3))
    rho = rng.normal(size=(4, 3))
    K = rbf_kernel(X, X, 0.5)
    diff = X[:, None, :] - X[None, :, :]
    M = np.cos(np.einsum("abk,jk->abj", diff, rho)).mean(axis=2)
    expect = np.mean((M - K) ** 2)
    assert kernel_fit_loss(rho.reshape(-1), X, K, 4, with_gradient=False) == pytest.approx(
        expect, rel=1e-12
    )


def _kernel_fit_loss_pairwise(rho, X, gamma):
    """Reference, straight from the definition: pairwise feature maps and kernel values.

    Loss: mean over all pairs (a, b) of (z(x_a)ᵀz(x_b) - k(x_a, x_b))². Gradient: the
    derivative of each pair's cos(ρ_jᵀ(x_a - x_b)) is -sin(ρ_jᵀ(x_a - x_b)) (x_a - x_b).
    """
    D = rho.shape[0]
    diff = X[:, None, :] - X[None, :, :]  # (n, n, d)
    phase = np.einsum("abk,jk->abj", diff, rho)  # (n, n, D)
    M = np.cos(phase).mean(axis=2)
    K = np.exp(-gamma * np.einsum("abk,abk->ab", diff, diff))
    R = M - K
    loss = np.mean(R**2)
    grad = np.einsum("ab,abj,abk->jk", R, -np.sin(phase), diff) * (2.0 / (D * R.size))
    return loss, grad.reshape(-1)


@pytest.fixture
def gram_from_5d(monkeypatch):
    """The Gram route from 5D rows on, without its 1,000-row floor (small test problems)."""
    import ppdp.learn.rff as rff

    monkeypatch.setattr(rff, "_GRAM_MIN_ROWS", 0)


@pytest.mark.parametrize(
    ("n", "D"),
    [(40, 5), (30, 6), (29, 6), (12, 6)],  # n ≥ 5D: Gram route; n < 5D: residual route
)
def test_loss_and_gradient_equal_the_pairwise_definition(n: int, D: int, gram_from_5d) -> None:
    rng = np.random.default_rng(100 + n + D)
    X = rng.normal(size=(n, 3))
    gamma = 0.6
    K = rbf_kernel(X, X, gamma)
    for rho in (draw_frequencies(D, 3, gamma, n), rng.normal(scale=2.0, size=(D, 3))):
        expect_loss, expect_grad = _kernel_fit_loss_pairwise(rho, X, gamma)
        loss, grad = kernel_fit_loss(rho.reshape(-1), X, K, D)
        assert loss == pytest.approx(expect_loss, rel=1e-11)
        assert np.allclose(grad, expect_grad, rtol=0, atol=1e-12 * np.abs(expect_grad).max())
        # ‖K‖² passed in (as a fit does) changes nothing
        passed = kernel_fit_loss(rho.reshape(-1), X, K, D, k_sq=float(np.sum(K * K)))
        assert passed[0] == pytest.approx(loss, rel=1e-13)
        assert np.array_equal(passed[1], grad)
        assert kernel_fit_loss(rho.reshape(-1), X, K, D, with_gradient=False) == loss


@pytest.mark.parametrize(("n", "D"), [(60, 4), (15, 4)])
def test_gradient_matches_finite_differences_on_both_routes(n: int, D: int, gram_from_5d) -> None:
    rng = np.random.default_rng(13)
    X = rng.random((n, 5))
    K = rbf_kernel(X, X, 0.9)
    rho = draw_frequencies(D, 5, 0.9, 14).reshape(-1)

    def f(v):
        return kernel_fit_loss(v, X, K, D, with_gradient=False)

    g = kernel_fit_loss(rho, X, K, D)[1]
    # central differences, step 1e-6: truncation O(h²) ≈ 1e-12 relative
    h = 1e-6
    fd = np.array([(f(rho + h * e) - f(rho - h * e)) / (2 * h) for e in np.eye(rho.size)])
    assert np.allclose(g, fd, rtol=0, atol=1e-6 * np.abs(g).max())


def test_loss_near_a_fitted_optimum_keeps_its_digits(gram_from_5d) -> None:
    """Near a good fit the Gram route's loss is a difference of large terms: check it there."""
    rng = np.random.default_rng(15)
    X = rng.random((120, 4))
    gamma = 1.5
    fit = fit_frequencies(X, n_components=10, gamma=gamma, random_state=16, max_iter=300)
    assert fit.loss < 0.05 * fit.initial_loss
    expect_loss, expect_grad = _kernel_fit_loss_pairwise(fit.rho, X, gamma)
    loss, grad = kernel_fit_loss(fit.rho.reshape(-1), X, rbf_kernel(X, X, gamma), 10)
    assert loss == pytest.approx(expect_loss, rel=1e-10)
    assert fit.loss == pytest.approx(expect_loss, rel=1e-10)
    scale = np.abs(_kernel_fit_loss_pairwise(draw_frequencies(10, 4, gamma, 16), X, gamma)[1])
    assert np.allclose(grad, expect_grad, rtol=0, atol=1e-10 * scale.max())


def test_rbf_kernel_is_the_textbook_formula_bit_for_bit() -> None:
    rng = np.random.default_rng(17)
    X, Y = rng.normal(size=(600, 4)), rng.normal(size=(7, 4))  # more rows than one block
    for A, B in ((X, Y), (X, X)):
        aa, bb = np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)
        sq = aa[:, None] + bb[None, :] - 2.0 * (A @ B.T)
        expect = np.exp(-0.3 * np.maximum(sq, 0.0))
        assert np.array_equal(rbf_kernel(A, B, 0.3), expect)


def test_fit_reduces_the_kernel_error_on_public_rows() -> None:
    rng = np.random.default_rng(12)
    X = rng.random((80, 6))
    fit = fit_frequencies(X, n_components=15, gamma=0.4, random_state=0, max_iter=200)
    assert fit.rho.shape == (15, 6)
    assert fit.loss < 0.5 * fit.initial_loss
    assert fit.n_iter >= 1 and fit.seconds >= 0


def test_fit_bad_input() -> None:
    with pytest.raises(DataValidationError, match="at least 2 public rows"):
        fit_frequencies(np.zeros((1, 3)), n_components=2, gamma=1.0)
    with pytest.raises(DataValidationError, match="NaN"):
        fit_frequencies(np.array([[0.0, np.nan], [1.0, 1.0]]), n_components=2, gamma=1.0)
    with pytest.raises(ParameterError, match="gradient"):
        fit_frequencies(np.zeros((3, 2)), n_components=2, gamma=1.0, gradient="bogus")
    with pytest.raises(ParameterError, match="rho0 has shape"):
        fit_frequencies(np.zeros((3, 2)), n_components=2, gamma=1.0, rho0=np.zeros((3, 2)))


@parametrize_with_checks([RandomFourierFeatures(n_components=10, random_state=0)])
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)


def _kernel_fit_loss_previous(rho_flat, X, K, D):
    """The residual route's arithmetic as every release before the Gram route computed it."""
    proj = X @ rho_flat.reshape(D, X.shape[1]).T
    c, s = np.cos(proj), np.sin(proj)
    resid = (c @ c.T + s @ s.T) * (1.0 / D) - K
    norm = 1.0 / (X.shape[0] ** 2)
    loss = float(np.einsum("ij,ij->", resid, resid)) * norm
    dproj = (c * (resid @ s) - s * (resid @ c)) * (4.0 * (1.0 / D) * norm)
    return loss, (dproj.T @ X).reshape(-1)


@pytest.mark.parametrize(("n", "D"), [(200, 50), (500, 20), (999, 100)])
def test_below_a_thousand_rows_the_fit_rounds_as_before(n: int, D: int) -> None:
    """Fewer than 1,000 public rows (every published li2014 result: at most 500) keep the
    previous arithmetic bit for bit, so a seeded HybridRBFSVM fits the same frequencies;
    the Gram route (5D rows and more) would change their last bits, which 300 unconverged
    L-BFGS steps carry to the third decimal of an AUC."""
    rng = np.random.default_rng(n)
    X = rng.random((n, 6))
    K = rbf_kernel(X, X, 0.5)
    rho = draw_frequencies(D, 6, 0.5, 3).reshape(-1)
    loss, grad = kernel_fit_loss(rho, X, K, D)
    expect_loss, expect_grad = _kernel_fit_loss_previous(rho, X, K, D)
    assert loss == expect_loss and np.array_equal(grad, expect_grad)
