"""Exponential mechanism: exact probabilities and sampling frequencies (both methods)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from ppdp.exceptions import DataValidationError
from ppdp.mechanisms import ExponentialMechanism
from ppdp.random import SeededRandom

UTILITIES = np.array([0.0, 1.0, 3.0, 2.5, -4.0, 2.0])


def test_softmax_exact() -> None:
    """With ε = 2 ln 2 and Δ = 1 the weights exp(εu/2) of u = (0, 1, 2) are 1, 2, 4."""
    mech = ExponentialMechanism(epsilon=2 * math.log(2), sensitivity=1.0)
    assert mech.coefficient == pytest.approx(math.log(2))
    assert mech.probabilities([0.0, 1.0, 2.0]) == pytest.approx([1 / 7, 2 / 7, 4 / 7], rel=1e-14)
    mono = ExponentialMechanism(epsilon=math.log(2), sensitivity=1.0, monotonic=True)
    assert mono.probabilities([0.0, 1.0, 2.0]) == pytest.approx([1 / 7, 2 / 7, 4 / 7], rel=1e-14)
    assert "monotone" in str(mono.guarantee)


def test_softmax_invariant_to_shift_and_huge_utilities() -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    p = mech.probabilities(UTILITIES)
    assert p == pytest.approx(mech.probabilities(UTILITIES + 1e6), rel=1e-9)
    assert np.isfinite(mech.probabilities(UTILITIES * 1e4)).all()


def test_permute_and_flip_exact_two_candidates() -> None:
    """u = (0, 1): the best has p = 1 and the other p = e^{-c}; P(0) = e^{-c}/2 exactly."""
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, method="permute-and-flip")
    c = mech.coefficient
    p0 = math.exp(-c) / 2
    assert mech.probabilities([0.0, 1.0]) == pytest.approx([p0, 1 - p0], rel=1e-14)


def test_permute_and_flip_matches_enumeration() -> None:
    """The quadrature formula agrees with enumerating all 4! candidate orders."""
    from itertools import permutations

    u = np.array([0.0, 1.0, 3.0, 2.5])
    mech = ExponentialMechanism(epsilon=1.3, sensitivity=1.0, method="permute-and-flip")
    p = np.exp(mech.coefficient * (u - u.max()))
    exact = np.zeros(4)
    orders = list(permutations(range(4)))
    for order in orders:
        fail = 1.0
        for r in order:
            exact[r] += fail * p[r] / len(orders)
            fail *= 1.0 - p[r]
    assert mech.probabilities(u) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("method", ["gumbel", "permute-and-flip"])
def test_sampling_frequencies_match_probabilities(method: str, seed: int) -> None:
    """Chi-square of 100,000 seeded selections against ``probabilities``, reject at p < 1e-6.

    False-positive rate 1e-6 per method. Broken variant: frequencies tested against the
    distribution of a mechanism with 1.3 ε (too little noise) must be rejected.
    """
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, method=method)
    draws = mech._sample(UTILITIES, 100_000, SeededRandom(seed))
    counts = np.bincount(draws, minlength=UTILITIES.size)
    n = counts.sum()
    assert chisquare(counts, n * mech.probabilities(UTILITIES)).pvalue > 1e-6
    broken = ExponentialMechanism(epsilon=1.3, sensitivity=1.0, method=method)
    assert chisquare(counts, n * broken.probabilities(UTILITIES)).pvalue < 1e-6


def test_randomise_returns_index(seed: int) -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    out = mech.randomise(UTILITIES, random_state=seed)
    assert isinstance(out, int) and 0 <= out < UTILITIES.size
    assert mech.randomise([5.0], random_state=seed) == 0
    pf = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, method="permute-and-flip")
    assert pf.randomise([5.0], random_state=seed) == 0
    assert pf.name == "Exponential (permute-and-flip)"


def test_large_epsilon_picks_the_best(seed: int) -> None:
    mech = ExponentialMechanism(epsilon=500.0, sensitivity=1.0, allow_large_epsilon=True)
    assert mech.randomise(UTILITIES, random_state=seed) == 2


@pytest.mark.parametrize("utilities", [[], [[1.0, 2.0]], [1.0, math.inf], ["a", "b"], 3.0])
def test_bad_utilities_rejected(utilities: object) -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    with pytest.raises(DataValidationError, match="utilities"):
        mech.randomise(utilities, random_state=0)
    with pytest.raises(DataValidationError, match="utilities"):
        mech.probabilities(utilities)


def test_overflowing_scores_rejected() -> None:
    mech = ExponentialMechanism(epsilon=8.0, sensitivity=1.0)
    with pytest.raises(DataValidationError, match="overflow"):
        mech.randomise([1e308, -1e308], random_state=0)
    with pytest.raises(DataValidationError, match="overflow"):
        mech.probabilities([1e308, 0.0])
