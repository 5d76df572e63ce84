"""``shrinkage=`` of the Fourier estimator (and of EM's Fourier start): exact factors on
hand-made running totals, backwards compatibility, the pass-through to EM, bad input, and
seeded checks that the rules remove noise harmonics and lower the start's loss."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.exceptions import ParameterError
from ppdp.local import (
    AdditiveRandomizer,
    FourierMoments,
    fourier_moments,
    reconstruct_em,
    reconstruct_fourier,
)

RULES = ("wiener", "hard", "soft", "garrote")


def _gauss(scale: float = 0.03) -> AdditiveRandomizer:
    return AdditiveRandomizer(noise="gaussian", scale=scale, domain=(0.0, 1.0))


def _moments_with(r: AdditiveRandomizer, coef: np.ndarray, n: int) -> FourierMoments:
    """Running totals whose one-step coefficients ``b + i·a`` are exactly ``coef``."""
    i = np.arange(1, coef.size + 1)
    phi = r.noise_characteristic(2.0 * np.pi * i)
    return FourierMoments(n * phi * coef / 2.0, n, coef.size)


def test_factors_are_exact_on_known_coefficients():
    r = _gauss()
    n, m = 10_000, 4
    phi = r.noise_characteristic(2.0 * np.pi * np.arange(1, m + 1))
    v = 4.0 / (n * phi**2)
    lam2 = v * math.log(2 * m)
    # harmonic 1: far above the noise; 2: between √v and λ; 3: below √v; 4: exactly 0
    mod = np.array([100.0 * math.sqrt(lam2[0]), 0.5 * (math.sqrt(v[1]) + math.sqrt(lam2[1])),
                    0.5 * math.sqrt(v[2]), 0.0])  # fmt: skip
    coef = mod * np.exp(1j * np.array([0.3, -1.0, 2.0, 0.0]))
    tot = _moments_with(r, coef, n)
    expected = {
        "wiener": np.maximum(0.0, 1.0 - v / np.where(mod > 0, mod, 1) ** 2) * (mod > 0),
        "hard": (mod**2 > lam2).astype(float),
        "soft": np.maximum(0.0, 1.0 - np.sqrt(lam2) / np.where(mod > 0, mod, 1)) * (mod > 0),
        "garrote": np.maximum(0.0, 1.0 - lam2 / np.where(mod > 0, mod, 1) ** 2) * (mod > 0),
    }
    for rule, fac in expected.items():
        est = reconstruct_fourier(tot, r, m, bins=10, shrinkage=rule)
        got = np.array(est.details["shrinkage_factors"])
        np.testing.assert_allclose(got, fac, rtol=1e-9, atol=1e-12)
        assert est.details["shrinkage"] == rule
        np.testing.assert_allclose(est.details["noise_variance"], v, rtol=1e-12)
        # the coefficients are the raw ones times the factors (no taper)
        b = np.array(est.details["b"])
        a = np.array(est.details["a"])
        np.testing.assert_allclose(b + 1j * a, coef * fac, atol=1e-9)
    # the orderings the definitions imply: harmonic 1 is nearly kept by all, hard keeps it
    f = {
        rule: reconstruct_fourier(tot, r, m, bins=10, shrinkage=rule).details["shrinkage_factors"]
        for rule in RULES
    }
    assert f["hard"] == [1.0, 0.0, 0.0, 0.0]
    assert f["wiener"][1] > 0 and f["garrote"][1] == 0.0 and f["soft"][1] == 0.0
    assert all(f[rule][2] == 0.0 and f[rule][3] == 0.0 for rule in RULES)
    assert 0.97 < f["soft"][0] < f["garrote"][0] < f["wiener"][0] < 1.0


def test_shrinkage_then_taper_and_none_is_backwards_compatible():
    r = _gauss()
    w = r.randomise(np.linspace(0.1, 0.9, 3000), random_state=3)
    plain = reconstruct_fourier(w, r, 8, bins=20)
    none = reconstruct_fourier(w, r, 8, bins=20, shrinkage=None)
    assert plain.probabilities.tolist() == none.probabilities.tolist()
    assert plain.details["shrinkage_factors"] == [1.0] * 8
    both = reconstruct_fourier(w, r, 8, bins=20, taper="fejer", shrinkage="soft")
    shr = reconstruct_fourier(w, r, 8, bins=20, shrinkage="soft")
    fejer = 1.0 - np.arange(1, 9) / 9.0
    np.testing.assert_allclose(both.details["b"], np.array(shr.details["b"]) * fejer, atol=1e-15)
    # the running totals give the same answer as the reports
    tot = fourier_moments(w[:1000], r, 8) + fourier_moments(w[1000:], r, 8)
    again = reconstruct_fourier(tot, r, 8, bins=20, shrinkage="soft")
    np.testing.assert_allclose(again.probabilities, shr.probabilities, atol=1e-12)


def test_em_passes_shrinkage_to_its_fourier_start():
    r = _gauss()
    x = np.random.default_rng(5).beta(2, 5, 20_000)
    w = r.randomise(x, random_state=6)
    four = reconstruct_fourier(w, r, 12, bins=30, shrinkage="garrote")
    theta0 = 0.99 * four.probabilities + 0.01 / 30
    via_init = reconstruct_em(w, r, 30, init="fourier", harmonics=12, shrinkage="garrote")
    given = reconstruct_em(w, r, 30, init=theta0)
    assert via_init.iterations == given.iterations
    np.testing.assert_allclose(via_init.probabilities, given.probabilities, atol=1e-12)
    assert via_init.details["init"] == "fourier"
    # without shrinkage the start (and so the run) differs
    raw = reconstruct_em(w, r, 30, init="fourier", harmonics=12)
    assert not np.allclose(raw.probabilities, via_init.probabilities, atol=1e-6)


def test_bad_shrinkage_is_refused_before_any_work():
    r = _gauss()
    for bad in ("james-stein", "", "Soft"):
        with pytest.raises(ParameterError, match="shrinkage"):
            reconstruct_fourier([0.2, 0.4], r, 2, shrinkage=bad)
        with pytest.raises(ParameterError, match="shrinkage"):
            reconstruct_em([0.2, 0.4], r, 2, init="fourier", harmonics=2, shrinkage=bad)
    with pytest.raises(ParameterError, match="shrinkage"):
        reconstruct_em([0.2, 0.4], r, 2, shrinkage="boxcar")


def test_thresholds_remove_noise_harmonics():
    """x ~ U[0, 1]: every true coefficient is 0 and E|ĉ_i|² = v_i exactly; |ĉ_i|²/v_i is
    about Exp(1), so a rule with the universal threshold keeps a harmonic with probability
    ≈ 1/(2m) = 1/24 (measured: 25 kept; the Wiener rule 174 ≈ 480/e).
    Seeded (40 replications × 12 harmonics = 480 coefficients; kept count ~ Binomial(480,
    1/24), mean 20, sd 4.4): the bound 40 is 4.5 sd away (false-positive rate < 1e-4 for an
    exact implementation); a rule with the threshold at √v instead of λ (Exp tail e^−1:
    ~177 kept) fails it."""
    r = _gauss(0.02)
    m, n = 12, 4000
    kept_hard = 0
    kept_wiener = 0
    data = np.random.default_rng(11)  # the private values (data, not privacy noise)
    for rep in range(40):
        w = r.randomise(data.random(n), random_state=1000 + rep)
        hard = reconstruct_fourier(w, r, m, bins=10, shrinkage="hard")
        wien = reconstruct_fourier(w, r, m, bins=10, shrinkage="wiener")
        kept_hard += int(np.count_nonzero(hard.details["shrinkage_factors"]))
        kept_wiener += int(np.count_nonzero(wien.details["shrinkage_factors"]))
    assert kept_hard < 40
    # the empirical Wiener rule zeroes only |ĉ|² < v: it keeps about e^−1 of them
    assert kept_wiener > 100


def test_shrunk_start_is_closer_on_the_wu_fig2_setting():
    """The wu-fig2 setting (bimodal x, n = 100,000, 12 harmonics, 50 bins), one seeded
    sample per noise law: every rule's start has a lower loss than the raw 12-harmonic
    start (measured: raw 0.029–0.037, soft 0.014–0.016, garrote 0.010–0.011)."""
    from ppdp.experiments._framework import seed_sequence
    from ppdp.experiments._wu import bimodal_sample, empirical_probabilities, half_l1

    edges = np.linspace(0.0, 1.0, 51)
    for ni, (noise, scale) in enumerate((("uniform", 2.0 / 15.0), ("gaussian", 0.03))):
        r = AdditiveRandomizer(noise=noise, scale=scale, domain=(0.0, 1.0))  # type: ignore[arg-type]
        x = bimodal_sample(100_000, seed_sequence(7, ni, 0, 0))
        w = r.randomise(x, random_state=seed_sequence(7, ni, 0, 1))
        truth = empirical_probabilities(x, edges)
        tot = fourier_moments(w, r, 12)
        raw = half_l1(reconstruct_fourier(tot, r, 12, bins=50).probabilities, truth)
        for rule in RULES:
            shrunk = reconstruct_fourier(tot, r, 12, bins=50, shrinkage=rule)
            assert half_l1(shrunk.probabilities, truth) < 0.8 * raw, (noise, rule)
