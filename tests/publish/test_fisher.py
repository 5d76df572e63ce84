"""Exact values of the noisy Fisher-LDA building blocks (ppdp.publish.fisher)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.linalg

from ppdp.data.stats import float_sum_error_bound
from ppdp.exceptions import CalibrationError, ParameterError, ParameterTypeError
from ppdp.mechanisms import GaussianMechanism
from ppdp.publish.fisher import (
    CLASS_SUM_SENSITIVITY,
    SECOND_MOMENT_SENSITIVITY,
    class_sum_mechanism,
    default_ridge,
    fisher_directions,
    from_upper,
    lda_noise_plan,
    noisy_scatter,
    paper_mean_sigma,
    paper_scatter_sigma,
    second_moment_mechanism,
    split_budget,
    symmetric_noise,
    upper,
)


def test_sensitivities_are_the_replace_one_values() -> None:
    assert CLASS_SUM_SENSITIVITY == 2.0
    assert math.sqrt(2.0) == SECOND_MOMENT_SENSITIVITY
    # The second-moment bound is attained at x = e1, y = e2 ...
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    diff = upper(np.outer(e1, e1) - np.outer(e2, e2))
    assert np.linalg.norm(diff) == pytest.approx(math.sqrt(2.0), abs=1e-15)
    # ... and the class-sum bound at x = -y.
    assert np.linalg.norm(e1 - (-e1)) == 2.0
    # ... and never exceeded by random unit vectors.
    rng = np.random.default_rng(0)
    for _ in range(2000):
        x, y = rng.normal(size=(2, 4))
        x /= np.linalg.norm(x)
        y /= np.linalg.norm(y)
        assert np.linalg.norm(upper(np.outer(x, x) - np.outer(y, y))) <= math.sqrt(2) + 1e-12


def test_gaussian_plan_equals_the_gaussian_mechanism_on_sums() -> None:
    counts = [700, 300]
    d, n = 6, 1000
    plan = lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=d, class_counts=counts)
    pad_sum = 2.0 * float_sum_error_bound(n) * math.sqrt(2 * d)
    pad_mom = 2.0 * float_sum_error_bound(n) * math.sqrt(d * (d + 1) // 2)
    sums = GaussianMechanism(epsilon=0.5, delta=5e-6, sensitivity=2.0 + pad_sum, dimension=2 * d)
    mom = GaussianMechanism(
        epsilon=0.5, delta=5e-6, sensitivity=math.sqrt(2.0) + pad_mom, dimension=d * (d + 1) // 2
    )
    assert plan.mean_sigmas == (sums.sigma / 700, sums.sigma / 300)
    assert plan.scatter_sigma == mom.sigma
    assert class_sum_mechanism(plan).sigma == sums.sigma
    assert second_moment_mechanism(plan).sigma == mom.sigma
    assert plan.mean_budget.epsilon == 0.5 and plan.scatter_budget.epsilon == 0.5
    assert plan.mean_budget.delta == 5e-6 and plan.scatter_budget.delta == 5e-6
    assert plan.budget.epsilon == 1.0
    assert plan.details["class_sum_sensitivity"] == 2.0
    assert plan.details["second_moment_sensitivity"] == math.sqrt(2.0)
    # The classic calibration for Δ = 2 at (0.5, 5e-6) is larger: analytic is tighter.
    classic = 2.0 * math.sqrt(2.0 * math.log(1.25 / 5e-6)) / 0.5
    assert 0.5 * classic < plan.mean_sigmas[0] * 700 < classic
    import json

    json.dumps(plan.details)  # JSON-safe for the ledger


def test_paper_template_closed_forms() -> None:
    eps, delta, d, n_c = 0.5, 1e-6, 12, 800
    beta1 = 2 * math.sqrt(d) / (n_c * eps) * math.sqrt(
        2 * math.log(d / (math.sqrt(2 * math.pi) * delta))
    ) + math.sqrt(2) / (n_c * math.sqrt(eps))
    beta2 = (d + 1) / eps * math.sqrt(
        2 * math.log((d * d + d) / (2 * math.sqrt(2 * math.pi) * delta))
    ) + 1 / math.sqrt(eps)
    assert paper_mean_sigma(eps, delta, d, n_c) == pytest.approx(beta1, rel=1e-14)
    assert paper_scatter_sigma(eps, delta, d) == pytest.approx(beta2, rel=1e-14)
    plan = lda_noise_plan(
        epsilon=1.0, delta=2e-6, n_features=d, class_counts=[n_c, 200], calibration="paper"
    )
    assert plan.mean_sigmas[0] == pytest.approx(beta1, rel=1e-14)
    assert plan.mean_sigmas[1] == pytest.approx(paper_mean_sigma(eps, delta, d, 200), rel=1e-14)
    assert plan.scatter_sigma == pytest.approx(beta2, rel=1e-14)
    # The template is 2-30 times the classic Gaussian level (ALGORITHMS B.3, d = 5..35,
    # n = 1000); the analytic calibration is a little smaller still.
    for d in (5, 35):
        g = lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=d, class_counts=[500, 500])
        p = lda_noise_plan(
            epsilon=1.0, delta=1e-5, n_features=d, class_counts=[500, 500], calibration="paper"
        )
        assert 1.5 < p.mean_sigmas[0] / g.mean_sigmas[0] < 30
        assert 2 < p.scatter_sigma / g.scatter_sigma < 45


def test_paper_template_refuses_outside_its_range() -> None:
    with pytest.raises(CalibrationError, match="ln"):
        paper_mean_sigma(1.0, 0.3, 1, 10)
    with pytest.raises(CalibrationError):
        lda_noise_plan(
            epsilon=1.0, delta=0.6, n_features=1, class_counts=[5, 5], calibration="paper"
        )


def test_sensitivity_factor_scales_the_noise() -> None:
    kw = dict(epsilon=1.0, delta=1e-5, n_features=5, class_counts=[100, 100])
    base = lda_noise_plan(calibration="paper", **kw)
    up = lda_noise_plan(calibration="paper", sensitivity_factor=math.sqrt(2), **kw)
    assert up.scatter_sigma == pytest.approx(math.sqrt(2) * base.scatter_sigma, rel=1e-15)
    assert up.mean_sigmas[0] == pytest.approx(math.sqrt(2) * base.mean_sigmas[0], rel=1e-15)
    g1 = lda_noise_plan(**kw)
    g2 = lda_noise_plan(sensitivity_factor=1.5, **kw)
    assert g2.details["class_sum_sensitivity"] == 3.0
    assert g2.scatter_sigma == pytest.approx(1.5 * g1.scatter_sigma, rel=1e-6)
    with pytest.raises(ParameterError, match="sensitivity_factor"):
        lda_noise_plan(sensitivity_factor=0.5, **kw)


@pytest.mark.parametrize(
    ("kw", "exc", "word"),
    [
        ({"epsilon": -1.0}, ParameterError, "epsilon"),
        ({"epsilon": 11.0}, ParameterError, "epsilon"),
        ({"delta": 0.0}, ParameterError, "delta"),
        ({"n_features": 0}, ParameterError, "n_features"),
        ({"class_counts": [10]}, ParameterError, "class_counts"),
        ({"class_counts": [10, 0]}, ParameterError, "class_counts"),
        ({"class_counts": "ab"}, ParameterTypeError, "class_counts"),
        ({"calibration": "laplace"}, ParameterError, "calibration"),
        ({"mean_share": 1.0}, ParameterError, "share"),
        ({"allow_large_epsilon": 1}, ParameterTypeError, "allow_large_epsilon"),
    ],
)
def test_plan_rejects_bad_parameters(kw: dict, exc: type, word: str) -> None:
    args = dict(epsilon=1.0, delta=1e-5, n_features=3, class_counts=[10, 10])
    args.update(kw)
    with pytest.raises(exc, match=word):
        lda_noise_plan(**args)


def test_split_budget_never_exceeds_the_total() -> None:
    from decimal import Decimal

    for eps, share in itertools.product([0.1, 0.3, 0.7, 1.0, 2.9], [0.1, 0.3, 0.5, 0.7]):
        a, b = split_budget(eps, 1e-5, share)
        assert Decimal(repr(a.epsilon)) + Decimal(repr(b.epsilon)) <= Decimal(repr(eps))
        assert Decimal(repr(a.delta)) + Decimal(repr(b.delta)) <= Decimal(repr(1e-5))
        assert a.epsilon + b.epsilon == pytest.approx(eps, rel=1e-15)


def test_default_ridge_formula() -> None:
    plan = lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=4, class_counts=[50, 30])
    assert default_ridge(plan) == 2 * 2 * plan.scatter_sigma


def test_noisy_scatter_without_noise_is_the_within_class_scatter() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    y = np.repeat([0, 1, 2], [10, 14, 16])
    means = np.stack([X[y == c].mean(axis=0) for c in range(3)])
    Sw = sum(((X[y == c] - means[c]).T @ (X[y == c] - means[c])) for c in range(3))
    got = noisy_scatter(X.T @ X, means, [10, 14, 16])
    np.testing.assert_allclose(got, Sw, atol=1e-10)
    np.testing.assert_array_equal(got, got.T)
    with pytest.raises(ParameterError, match="noisy_means"):
        noisy_scatter(X.T @ X, means[:2], [10, 14, 16])


def test_two_class_direction_is_sw_inverse_mean_difference() -> None:
    rng = np.random.default_rng(2)
    A = rng.normal(size=(6, 6))
    S = A @ A.T + np.eye(6)
    mu = rng.normal(size=(2, 6))
    w = fisher_directions(mu, [5, 7], S, ridge=0.5)
    expect = np.linalg.solve(S + 0.5 * np.eye(6), mu[0] - mu[1])
    expect /= np.linalg.norm(expect)
    assert w.shape == (6, 1)
    np.testing.assert_allclose(w[:, 0], expect, atol=1e-12)


def test_multiclass_directions_are_generalised_eigenvectors() -> None:
    rng = np.random.default_rng(3)
    d, K = 7, 4
    A = rng.normal(size=(d, d))
    S = A @ A.T + np.eye(d)
    mu = rng.normal(size=(K, d))
    counts = [10, 20, 30, 40]
    W = fisher_directions(mu, counts, S, ridge=0.0)
    assert W.shape == (d, K - 1)
    np.testing.assert_allclose(np.linalg.norm(W, axis=0), 1.0, atol=1e-12)
    grand = np.average(mu, axis=0, weights=counts)
    Sb = sum(c * np.outer(m - grand, m - grand) for c, m in zip(counts, mu, strict=True))
    _, vecs = scipy.linalg.eigh(Sb, S)
    for j in range(K - 1):
        v = vecs[:, -1 - j] / np.linalg.norm(vecs[:, -1 - j])
        assert abs(abs(float(v @ W[:, j])) - 1.0) < 1e-9
    assert fisher_directions(mu, counts, S, ridge=0.0, n_components=2).shape == (d, 2)


def test_indefinite_scatter_still_gives_finite_unit_directions() -> None:
    S = np.diag([1.0, -5.0, 0.0])
    w = fisher_directions([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]], [3, 3], S, ridge=0.0)
    assert np.all(np.isfinite(w)) and np.linalg.norm(w) == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="ridge"):
        fisher_directions([[1.0], [0.0]], [3, 3], [[1.0]], ridge=-1.0)
    with pytest.raises(ParameterError, match="finite"):
        fisher_directions([[np.nan], [0.0]], [3, 3], [[1.0]], ridge=1.0)


def test_constant_directions_are_projected_out() -> None:
    rng = np.random.default_rng(5)
    d = 5
    A = rng.normal(size=(d, d))
    S = A @ A.T
    mu = rng.normal(size=(3, d))
    C = np.zeros((d, 1))
    C[2:, 0] = 1.0
    for K in (2, 3):
        W = fisher_directions(mu[:K], [4, 5, 6][:K], S, ridge=0.1, constant=C)
        np.testing.assert_allclose(C.T @ W, 0.0, atol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(W, axis=0), 1.0)
    # K = 2: the direction is the reduced problem's solution, mapped back.
    B = np.linalg.svd(C, full_matrices=True)[0][:, 1:]
    w = np.linalg.solve(B.T @ S @ B + 0.1 * np.eye(d - 1), B.T @ (mu[0] - mu[1]))
    expect = B @ w / np.linalg.norm(w)
    W = fisher_directions(mu[:2], [4, 5], S, ridge=0.1, constant=C)
    np.testing.assert_allclose(W[:, 0], expect, atol=1e-10)
    with pytest.raises(ParameterError, match="every direction"):
        fisher_directions(mu[:2, :1], [4, 5], S[:1, :1], ridge=0.1, constant=[[1.0]])


def test_symmetric_noise() -> None:
    E = symmetric_noise(60, 2.0, random_state=4)
    np.testing.assert_array_equal(E, E.T)
    u = upper(E)
    assert u.size == 60 * 61 // 2
    assert np.std(u) == pytest.approx(2.0, rel=0.05)
    assert abs(np.mean(u)) < 0.1
    assert not np.any(symmetric_noise(3, 0.0, random_state=None))
    np.testing.assert_array_equal(from_upper(upper(E), 60), E)
