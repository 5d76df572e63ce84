"""Gaussian mechanism: classic and analytic calibration against independent computations."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp import noise
from ppdp.exceptions import ParameterError, PrivacyLeakWarning
from ppdp.mechanisms import GaussianMechanism, analytic_gaussian_sigma, gaussian_delta


def _phi(x: float) -> float:
    """Standard normal CDF through math.erfc (accurate in both tails)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def reference_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Balle & Wang 2018 Theorem 8, written directly (an independent code path)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return _phi(a - b) - math.exp(epsilon) * _phi(-a - b)


def reference_sigma(epsilon: float, delta: float) -> float:
    """Plain bisection on the reference δ(σ) for unit sensitivity, 200 halvings."""
    lo, hi = 1e-3, 1e6
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if reference_delta(mid, epsilon, 1.0) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def test_analytic_known_answer() -> None:
    """(ε=1, δ=1e-5, Δ=1): σ ≈ 3.7306 (Balle & Wang report ≈ 3.73); an independent solve."""
    ref = reference_sigma(1.0, 1e-5)
    assert ref == pytest.approx(3.7306317, rel=1e-7)
    sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert sigma >= ref * (1 - 1e-12)
    assert sigma == pytest.approx(ref, rel=1e-8)
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    assert mech.granularity == noise.granularity(sigma)
    assert mech.sigma == pytest.approx(sigma * (1.0 + mech.granularity), rel=1e-14)
    assert mech.variance() == mech.sigma**2
    assert mech.bias() == 0.0


def test_classic_known_answer() -> None:
    eps, delta, sens = 0.5, 1e-5, 2.0
    mech = GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens, calibration="classic")
    ideal = sens * math.sqrt(2.0 * math.log(1.25 / delta)) / eps
    lam = noise.granularity(ideal)
    assert mech.granularity == lam
    expected = (sens + lam) * math.sqrt(2.0 * math.log(1.25 / delta)) / eps
    assert mech.sigma == pytest.approx(expected, rel=1e-15)
    assert mech.sigma >= expected
    assert mech.ledger_details()["calibration"] == "classic"


@settings(max_examples=60, deadline=None)
@given(epsilon=st.floats(0.01, 0.99), delta=st.floats(1e-12, 0.1))
def test_analytic_beats_classic_below_one(epsilon: float, delta: float) -> None:
    analytic = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=1.0)
    classic = GaussianMechanism(
        epsilon=epsilon, delta=delta, sensitivity=1.0, calibration="classic"
    )
    assert analytic.sigma < classic.sigma
    # The classic σ is valid too: its exact δ is below the target.
    assert reference_delta(classic.sigma, epsilon, classic.effective_sensitivity) <= delta


@settings(max_examples=300, deadline=None)
@given(
    epsilon=st.floats(1e-3, 50.0),
    delta=st.floats(1e-12, 0.1),
    sensitivity=st.floats(1e-3, 1e3),
)
def test_analytic_never_overshoots(epsilon: float, delta: float, sensitivity: float) -> None:
    """The returned σ never gives δ(σ) > δ (for Δ + Λ), yet is within 1e-6 of the minimum."""
    mech = GaussianMechanism(
        epsilon=epsilon, delta=delta, sensitivity=sensitivity, allow_large_epsilon=True
    )
    eff = mech.effective_sensitivity
    assert reference_delta(mech.sigma, epsilon, eff) <= delta
    assert gaussian_delta(mech.sigma, epsilon, eff) <= delta
    # Tight: 1e-6 less noise would overshoot.
    assert reference_delta(mech.sigma * (1 - 1e-6), epsilon, eff) > delta


def test_gaussian_delta_matches_reference() -> None:
    for sigma, eps in [(3.0, 1.0), (0.5, 5.0), (40.0, 0.1), (0.2, 40.0)]:
        assert gaussian_delta(sigma, eps, 1.0) == pytest.approx(
            reference_delta(sigma, eps, 1.0), rel=1e-9
        )


def test_delta_at_least_one_over_n_warns() -> None:
    with pytest.warns(PrivacyLeakWarning, match="1/n"):
        GaussianMechanism(epsilon=1.0, delta=0.01, sensitivity=1.0, n=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0, n=100)


def test_delta_at_least_one_over_n_is_an_error_in_strict_mode() -> None:
    with pytest.raises(ParameterError, match=r"delta \(0.01\) >= 1/n \(n=100\)"):
        GaussianMechanism(epsilon=1.0, delta=0.01, sensitivity=1.0, n=100, strict=True)
    GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0, n=100, strict=True)


def test_scalar_and_vector_grids(seed: int) -> None:
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    out = mech.randomise(0.1, random_state=seed)
    assert isinstance(out, float)
    assert out / mech.granularity == math.floor(out / mech.granularity)
    with pytest.raises(ParameterError, match="dimension"):
        mech.randomise(np.zeros(5), random_state=seed)
    vec_mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0, dimension=5)
    # Calibrated for Δ + √5·Λ in L2.
    assert vec_mech.effective_sensitivity >= 1.0 + math.sqrt(5) * vec_mech.granularity
    assert vec_mech.sigma > mech.sigma
    vec = vec_mech.randomise(np.zeros(5), random_state=seed)
    grid = vec_mech.granularity
    assert np.array_equal(vec / grid, np.rint(vec / grid))


def test_variance_matches_empirical(seed: int) -> None:
    """z-test of the sample variance (standard error σ²·sqrt(2/n)), |z| ≤ 6.

    False-positive rate ≈ 2e-9 (normal approximation, n = 200,000). The broken variant (the
    "scale squared" bug of smartnoise-core #316, a variance of σ⁴) must be rejected.
    """
    n = 200_000
    mech = GaussianMechanism(epsilon=2.0, delta=1e-6, sensitivity=1.0, dimension=n)
    out = mech.randomise(np.zeros(n), random_state=seed)
    s2 = float(np.var(out, ddof=1))

    def z(claimed: float) -> float:
        return (s2 - claimed) / (claimed * math.sqrt(2.0 / n))

    assert abs(z(mech.variance())) <= 6.0
    assert abs(z(mech.sigma**4)) > 6.0
