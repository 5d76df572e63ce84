"""Reconstruction from additive-noise reports: known answers, consistency, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.exceptions import (
    ConvergenceWarning,
    DataValidationError,
    LowUtilityWarning,
    ParameterError,
    ParameterTypeError,
)
from ppdp.local import (
    AdditiveRandomizer,
    CharacteristicVectorRandomizer,
    Reconstruction,
    information_loss,
)
from ppdp.local.reconstruction import (
    ReportHistogram,
    bin_reports,
    reconstruct_bayes,
    reconstruct_em,
    reconstruct_fourier,
)


def bimodal(n: int, seed: int) -> np.ndarray:
    # Offset: a seeded randomise(random_state=seed) draws the same PCG64 bits as
    # default_rng(seed), which would correlate the noise with the data.
    rng = np.random.default_rng(seed + 10_000)
    x = np.where(rng.random(n) < 0.4, rng.normal(0.3, 0.06, n), rng.normal(0.7, 0.08, n))
    return np.clip(x, 0.0, 1.0)


def l1(p, q) -> float:
    return 0.5 * float(np.abs(np.asarray(p) - np.asarray(q)).sum())


@pytest.mark.parametrize("noise", ["uniform", "gaussian", "laplace"])
def test_kernel_columns_are_distributions(noise):
    r = AdditiveRandomizer(noise=noise, scale=0.23, domain=(-1.0, 2.0))
    from ppdp.local.reconstruction import _kernel, report_edges, value_edges

    x_edges = value_edges(r, [-1.0, -0.2, 0.5, 0.6, 2.0])
    m = _kernel(r, report_edges(r, x_edges, 0.05), x_edges)
    assert np.allclose(m.sum(axis=0), 1.0, atol=1e-9)
    assert np.all(m >= 0)


def test_em_recovers_theta_from_exact_expected_counts():
    """Known answer: counts = n·Mθ* (no sampling noise) ⇒ EM converges to θ*."""
    r = AdditiveRandomizer(noise="gaussian", scale=0.05, domain=(0.0, 1.0))
    from ppdp.local.reconstruction import _kernel, report_edges, value_edges

    x_edges = value_edges(r, 10)
    edges = report_edges(r, x_edges)
    theta = np.array([0.02, 0.05, 0.2, 0.2, 0.03, 0.01, 0.1, 0.24, 0.1, 0.05])
    counts = np.rint(1e12 * (_kernel(r, edges, x_edges) @ theta)).astype(np.int64)
    est = reconstruct_em(ReportHistogram(edges, counts), r, 10, tol=1e-9, max_iter=20_000)
    assert est.converged
    assert l1(est.probabilities, theta) < 1e-3


@pytest.mark.parametrize("noise", ["uniform", "gaussian", "laplace"])
def test_estimators_are_consistent_on_a_bimodal_density(noise, seed):
    """n = 200,000 reports, 20 bins, half-L1 distance to the empirical histogram. Measured
    (seeds 0, 1): EM 0.03–0.04, Bayes 0.02–0.10 (its midpoint kernel is crude for uniform
    noise), Fejér-tapered Fourier (6 harmonics) 0.13; the raw report histogram 0.16–0.31."""
    n, k = 200_000, 20
    x = bimodal(n, seed)
    scale = {"uniform": 0.37, "gaussian": 0.08, "laplace": 0.06}[noise]
    r = AdditiveRandomizer(noise=noise, scale=scale, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=seed)
    truth = np.histogram(x, bins=k, range=(0, 1))[0] / n
    naive = np.histogram(np.clip(w, 0, 1), bins=k, range=(0, 1))[0] / n
    em = reconstruct_em(w, r, k)
    bayes = reconstruct_bayes(w, r, k)
    four = reconstruct_fourier(w, r, 6, bins=k, taper="fejer")
    for est, bound in ((em, 0.06), (bayes, 0.13), (four, 0.16)):
        assert isinstance(est, Reconstruction)
        assert est.probabilities.sum() == pytest.approx(1.0)
        assert np.all(est.density >= 0)
        assert l1(est.probabilities, truth) < bound, est.method
    assert l1(em.probabilities, truth) < l1(naive, truth)
    assert em.converged and em.iterations > 1


def test_binned_em_matches_direct_em_with_fine_report_bins():
    n = 4000
    x = bimodal(n, 1)
    r = AdditiveRandomizer(noise="laplace", scale=0.1, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=2)
    direct = reconstruct_em(w, r, 10, binned=False, tol=0, max_iter=50)
    binned = reconstruct_em(w, r, 10, tol=0, max_iter=50, report_bin_width=0.002)
    assert direct.method == "em-direct" and binned.method == "em"
    assert l1(direct.probabilities, binned.probabilities) < 0.01
    assert direct.iterations == binned.iterations == 50


def test_fourier_coefficients_unbiased(seed):
    """X ~ U[0, 0.5] on domain [0, 1] (known φ_X), Laplace noise: each coefficient within 6
    standard errors (σ ≤ √(2/n)/|φ_Y|); false-positive rate < 1e-8 per coefficient."""
    n, m = 100_000, 5
    rng = np.random.default_rng(seed + 10_000)
    x = rng.random(n) * 0.5
    r = AdditiveRandomizer(noise="laplace", scale=0.05, domain=(0.0, 1.0))
    est = reconstruct_fourier(r.randomise(x, random_state=seed), r, m)
    i = np.arange(1, m + 1)
    phi_x = (np.exp(1j * np.pi * i) - 1.0) / (1j * np.pi * i)  # E e^{2πi·i·X}
    b_true, a_true = 2 * phi_x.real, 2 * phi_x.imag
    se = math.sqrt(2.0 / n) / np.abs(np.array(est.details["phi_noise"]))
    assert np.all(np.abs(np.array(est.details["b"]) - b_true) < 6 * se)
    assert np.all(np.abs(np.array(est.details["a"]) - a_true) < 6 * se)


def test_fourier_known_answer_without_noise_effect():
    # Noise so small that φ_Y ≈ 1: the estimate is the truncated series of the empirical
    # distribution; on two equal halves the raw bin masses are exactly known.
    r = AdditiveRandomizer(noise="gaussian", scale=1e-9, domain=(0.0, 1.0))
    x = np.concatenate([np.full(5000, 0.25), np.full(5000, 0.75)])
    w = r.randomise(x, random_state=0)
    est = reconstruct_fourier(w, r, 1, bins=2)
    # f = 1 + b₁cos(2πu) with b₁ = 2·E cos(2πX) = −2·... (cos(π/2)=cos(3π/2)=0) ⇒ f ≡ 1
    assert np.allclose(est.probabilities, [0.5, 0.5], atol=1e-6)
    est2 = reconstruct_fourier(w, r, 2, bins=4)
    # harmonic 2: b₂ = 2·E cos(4πX) = −2 ⇒ masses 1/4 + ∫ −2 cos(4πu) over quarters
    expect = np.array([0.25, 0.25, 0.25, 0.25]) + (-2.0) * np.array(
        [
            (np.sin(4 * np.pi * b) - np.sin(4 * np.pi * a)) / (4 * np.pi)
            for a, b in ((0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0))
        ]
    )
    assert np.allclose(est2.details["raw_bin_mass"], expect, atol=1e-6)


def test_fourier_init_reaches_the_rule_and_matches_quality():
    n = 100_000
    x = bimodal(n, 3)
    r = AdditiveRandomizer(noise="gaussian", scale=0.05, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=4)
    uni = reconstruct_em(w, r, 50)
    four = reconstruct_em(w, r, 50, init="fourier", harmonics=8, taper="fejer")
    assert four.details["init"] == "fourier" and uni.details["init"] == "uniform"
    assert four.converged and uni.converged


def test_degenerate_uniform_noise_is_refused():
    """Wu's example: X ⊆ [0, 1] with uniform noise of width 20: Z mod 1 is exactly uniform."""
    r = AdditiveRandomizer(noise="uniform", scale=20.0, domain=(0.0, 1.0))
    w = r.randomise(np.full(100, 0.5), random_state=0)
    with pytest.raises(ParameterError, match=r"\|φ_Y\(1\)\| = .*degenerate"):
        reconstruct_fourier(w, r, 12)
    # width 2.5: harmonics 2, 4, … vanish; harmonic 1 alone is kept fine
    r2 = AdditiveRandomizer(noise="uniform", scale=2.5, domain=(0.0, 1.0))
    w2 = r2.randomise(np.full(1_000_000, 0.5), random_state=0)
    with pytest.raises(ParameterError, match="harmonic 2"):
        reconstruct_fourier(w2, r2, 3)


def test_small_characteristic_warns():
    r = AdditiveRandomizer(noise="gaussian", scale=0.2, domain=(0.0, 1.0))
    w = r.randomise(np.full(1000, 0.5), random_state=0)
    with pytest.warns(LowUtilityWarning, match="standard error"):
        reconstruct_fourier(w, r, 3)


def test_stopping_rule_and_convergence_warning():
    x = bimodal(20_000, 5)
    r = AdditiveRandomizer(noise="laplace", scale=0.1, domain=(0.0, 1.0))
    w = r.randomise(x, random_state=6)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        est = reconstruct_em(w, r, 20, tol=1e-9, max_iter=3)
    assert not est.converged and est.iterations == 3
    fixed = reconstruct_em(w, r, 20, tol=0, max_iter=7)  # tol=0: exactly max_iter, silent
    assert fixed.iterations == 7 and not fixed.converged
    with pytest.warns(ConvergenceWarning):
        reconstruct_bayes(w, r, 20, tol=1e-12, max_iter=2)


def test_histogram_is_additive_over_batches():
    r = AdditiveRandomizer(noise="gaussian", scale=0.1, domain=(0.0, 1.0))
    w = r.randomise(bimodal(3000, 7), random_state=8)
    h = bin_reports(w, r, 10)
    h1, h2 = bin_reports(w[:1000], r, 10), bin_reports(w[1000:], r, 10)
    assert np.array_equal(h.counts, h1.counts + h2.counts)
    assert h.n == 3000
    a = reconstruct_em(w, r, 10)
    b = reconstruct_em(ReportHistogram(h.edges, h1.counts + h2.counts), r, 10)
    assert np.allclose(a.probabilities, b.probabilities)


def test_unequal_bins_density_normalised():
    r = AdditiveRandomizer(noise="laplace", scale=0.05, domain=(0.0, 1.0))
    x = np.random.default_rng(10_000).random(50_000)
    est = reconstruct_em(r.randomise(x, random_state=1), r, [0.0, 0.1, 0.5, 1.0])
    assert np.allclose(est.probabilities, [0.1, 0.4, 0.5], atol=0.02)
    assert np.allclose(est.density, [1.0, 1.0, 1.0], atol=0.06)


def test_bad_input():
    r = AdditiveRandomizer(noise="uniform", scale=0.7, domain=(0.0, 1.0))
    with pytest.raises(DataValidationError, match=r"1 reports lie outside \[-0.35, 1.35\]"):
        reconstruct_em([0.2, 1.7], r, 5)
    with pytest.raises(DataValidationError, match="NaN"):
        reconstruct_bayes([0.2, np.nan], r, 5)
    with pytest.raises(DataValidationError, match="empty"):
        reconstruct_fourier([], r, 2)
    with pytest.raises(ParameterError, match="span the declared domain"):
        reconstruct_em([0.2], r, [0.1, 0.5, 1.0])
    with pytest.raises(ParameterError, match=r"bins \(1\) must be an integer >= 2"):
        reconstruct_em([0.2], r, 1)
    with pytest.raises(ParameterError, match="harmonics"):
        reconstruct_fourier([0.2], r, 0)
    with pytest.raises(ParameterError, match="taper"):
        reconstruct_fourier([0.2], r, 1, taper="boxcar")
    with pytest.raises(ParameterError, match="init"):
        reconstruct_em([0.2], r, 5, init="zeros")
    with pytest.raises(ParameterError, match="init"):
        reconstruct_em([0.2], r, 5, init=[1, 2])
    with pytest.raises(ParameterError, match="tol"):
        reconstruct_em([0.2], r, 5, tol=-1)
    cv = CharacteristicVectorRandomizer(regions=3, sigma=1.0)
    with pytest.raises(ParameterTypeError, match="AdditiveRandomizer"):
        reconstruct_em([0.2], cv, 5)


def test_ragged_reports_one_error():
    r = AdditiveRandomizer(noise="laplace", scale=1.0, domain=(0.0, 1.0))
    with pytest.raises(DataValidationError, match="regular array"):
        reconstruct_em([[0.1, 0.2], [0.3]], r, 4)
    cv = CharacteristicVectorRandomizer(regions=3, sigma=1.0)
    with pytest.raises(DataValidationError, match="regular"):
        cv.check_report([[1, 2, 3], [1, 2]])
    with pytest.raises(ParameterTypeError, match="regular array"):
        cv.randomise([[0, 1], [2]])


def test_callback_traces_every_iteration():
    r = AdditiveRandomizer(noise="laplace", scale=0.1, domain=(0.0, 1.0))
    w = r.randomise(bimodal(5000, 9), random_state=10)
    for fn in (reconstruct_em, reconstruct_bayes):
        trace: list = []
        est = fn(w, r, 10, tol=0, max_iter=6, callback=lambda i, p, t=trace: t.append((i, p)))
        assert [i for i, _ in trace] == [1, 2, 3, 4, 5, 6]
        assert np.allclose(trace[-1][1], est.probabilities)
        assert all(p.sum() == pytest.approx(1.0) for _, p in trace)
    trace = []
    reconstruct_em(
        w[:500], r, 5, tol=0, max_iter=3, binned=False, callback=lambda i, p: trace.append(i)
    )
    assert trace == [1, 2, 3]


def test_em_is_consistent_when_the_model_is_right(seed):
    """X piecewise uniform on the 10 bins (so the discretised model holds): with the
    stopping rule scaled as 0.1/n, the AA information loss against the population falls
    from ≈ 0.05–0.07 at n = 10³ to ≈ 0.002 at n = 10⁶ (measured, seeds 0–2); the bound
    0.01 is 4× that, checked on seeds 0–99."""
    probs = np.array([0.05, 0.1, 0.2, 0.05, 0.0, 0.1, 0.3, 0.1, 0.05, 0.05])
    r = AdditiveRandomizer(noise="laplace", scale=0.05, domain=(0.0, 1.0))
    losses = []
    for n in (1_000, 1_000_000):
        rng = np.random.default_rng(seed + 20_000)
        x = (rng.choice(10, size=n, p=probs) + rng.random(n)) / 10
        est = reconstruct_em(r.randomise(x, random_state=seed), r, 10, tol=0.1 / n, max_iter=50_000)
        losses.append(information_loss(est, probs))
    assert losses[1] < 0.01
    assert losses[1] < losses[0]


def test_far_out_reports_land_in_the_outer_bins():
    r = AdditiveRandomizer(noise="gaussian", scale=0.1, domain=(0.0, 1.0))
    h = bin_reports([-1e300, -5.0, 0.5, 7.0, 1e300], r, 4)
    assert h.counts[0] == 2 and h.counts[-1] == 2 and h.n == 5


def test_fourier_from_running_moments_matches_reports():
    from ppdp.local import FourierMoments, fourier_moments

    r = AdditiveRandomizer(noise="laplace", scale=0.05, domain=(0.0, 1.0))
    w = r.randomise(bimodal(6000, 11), random_state=12)
    mom = fourier_moments(w[:2500], r, 8) + fourier_moments(w[2500:], r, 8)
    assert isinstance(mom, FourierMoments) and mom.n == 6000
    a = reconstruct_fourier(w, r, 6, bins=20)
    b = reconstruct_fourier(mom, r, 6, bins=20)
    assert np.allclose(a.probabilities, b.probabilities, atol=1e-12)
    with pytest.raises(DataValidationError, match="at least harmonics=9"):
        reconstruct_fourier(mom, r, 9)
