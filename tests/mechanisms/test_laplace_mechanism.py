"""Laplace mechanism: exact calibration, the grid, variance, vectors."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp import noise
from ppdp.exceptions import ParameterError
from ppdp.mechanisms import LaplaceMechanism


def test_known_scale_and_grid() -> None:
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    assert mech.granularity == 2.0**-32
    assert mech.scale == 1.0 + 2.0**-32  # (Δ + Λ)/ε, exact
    assert mech.effective_sensitivity == 1.0 + 2.0**-32
    assert mech.variance() == 2.0 * mech.scale**2
    assert mech.bias() == 0.0
    assert mech.ledger_details() == {
        "sensitivity": 1.0,
        "norm": "l1",
        "noise_scale": mech.scale,
        "granularity": 2.0**-32,
        "dimension": 1,
        "relation": "replace-one",
    }


@settings(max_examples=300, deadline=None)
@given(
    epsilon=st.floats(1e-3, 50.0),
    sensitivity=st.floats(1e-6, 1e6),
)
def test_scale_never_exceeds_epsilon(epsilon: float, sensitivity: float) -> None:
    """(Δ + Λ)/b ≤ ε in exact rational arithmetic, and b is tight to ~1 ulp."""
    mech = LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity, allow_large_epsilon=True)
    lam = noise.granularity(sensitivity / epsilon)
    assert mech.granularity == lam
    exact_eff = Fraction(sensitivity) + Fraction(lam)
    assert Fraction(mech.effective_sensitivity) >= exact_eff
    assert exact_eff / Fraction(mech.scale) <= Fraction(epsilon)
    assert mech.scale <= (sensitivity + lam) / epsilon * (1 + 4e-16)


@pytest.mark.parametrize(
    ("epsilon", "sensitivity"),
    [(1.0, 1e-300), (1e-3, 1e300), (10.0, 2.0**-960)],
)
def test_scale_underflow_or_overflow_rejected(epsilon: float, sensitivity: float) -> None:
    with pytest.raises(ParameterError, match="noise scale"):
        LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)


def test_scalar_output_on_grid(seed: int) -> None:
    mech = LaplaceMechanism(epsilon=0.7, sensitivity=3.0)
    out = mech.randomise(0.123456789, random_state=seed)
    assert isinstance(out, float)
    k = out / mech.granularity
    assert k == math.floor(k)


def test_vector_needs_declared_dimension(seed: int) -> None:
    """A d-vector's grid rounding adds up to d·Λ in L1: calibrated for Δ + d·Λ, declared."""
    with pytest.raises(ParameterError, match="dimension"):
        LaplaceMechanism(epsilon=1.0, sensitivity=1.0).randomise([0.0, 1.0], random_state=seed)
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=6)
    assert mech.scale == 1.0 + 6 * 2.0**-32
    assert mech.ledger_details()["dimension"] == 6
    value = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    out = mech.randomise(value, random_state=seed)
    assert out.shape == (2, 3) and out.dtype == np.float64
    assert np.array_equal(out / mech.granularity, np.rint(out / mech.granularity))
    assert isinstance(mech.randomise(0.5, random_state=seed), float)  # fewer is fine


@pytest.mark.parametrize("dimension", [0, -1, 1.5, True])
def test_bad_dimension_rejected(dimension: object) -> None:
    with pytest.raises((ParameterError, TypeError), match="dimension"):
        LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=dimension)


def test_batch_sample_on_scalar_grid(seed: int) -> None:
    from ppdp.random import SeededRandom

    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    out = mech._sample(0.3, 1000, SeededRandom(seed))
    assert np.array_equal(out / mech.granularity, np.rint(out / mech.granularity))


def test_variance_matches_empirical(seed: int) -> None:
    """z-test of the sample variance against ``variance()``, |z| ≤ 6.

    The sample variance of n Laplace draws has standard error σ²·sqrt((κ − 1)/n) with
    kurtosis κ = 6. False-positive rate ≈ 2e-9 (normal approximation, n = 200,000). The
    broken variant (a variance formula of b² instead of 2b²) must be rejected.
    """
    n = 200_000
    mech = LaplaceMechanism(epsilon=0.5, sensitivity=1.0, dimension=n)
    out = mech.randomise(np.full(n, 5.0), random_state=seed)
    s2 = float(np.var(out - 5.0, ddof=1))

    def z(claimed: float) -> float:
        return (s2 - claimed) / (claimed * math.sqrt(5.0 / n))

    assert abs(z(mech.variance())) <= 6.0
    assert abs(float(np.mean(out)) - 5.0) <= 6.0 * math.sqrt(mech.variance() / n)
    assert abs(z(mech.scale**2)) > 6.0  # the broken formula is caught


def test_independent_coordinates() -> None:
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=100_000)
    out = mech.randomise(np.zeros((2, 50_000)), random_state=3)
    assert abs(np.corrcoef(out)[0, 1]) < 6.0 / math.sqrt(50_000)
