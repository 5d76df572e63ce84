"""Goodness of fit of every ppdp.noise sampler on 10**5 seeded draws.

Each test rejects at p < 1e-6 (KS for continuous laws, chi-square with tail bins merged for
discrete ones), so a correct sampler fails a given test with probability 1e-6; the ~15
tests of this module together fail with probability below 2e-5 per seed. Each test also
runs its positive control (the Tumult pattern): the same draws tested against the law with
the scale multiplied by 0.7 and by 1.3 must be rejected, which shows the test has power.
Mean and variance are checked with z-tests at |z| <= 6 (false-positive rate 2e-9 each).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ppdp import noise
from ppdp.random import SeededRandom

pytestmark = pytest.mark.statistical

N = 100_000
P_REJECT = 1e-6
CONTROLS = (0.7, 1.3)


def assert_ks(x, cdf_for_scale, scale):
    """KS accepts the law at ``scale`` and rejects it at ``scale × 0.7`` and ``× 1.3``."""
    p = stats.kstest(x, cdf_for_scale(scale)).pvalue
    assert p >= P_REJECT, f"KS rejects the true law: p = {p:.3g}"
    for factor in CONTROLS:
        p_control = stats.kstest(x, cdf_for_scale(scale * factor)).pvalue
        assert p_control < P_REJECT, f"KS cannot tell scale x{factor}: p = {p_control:.3g}"


def chi_square_p(k, pmf, *, min_expected=20.0):
    """Chi-square p-value of integer draws ``k`` against ``pmf(values)``.

    Bins are the integers whose expected count is >= ``min_expected``; the tails beyond them
    are folded into the outermost bins ("<= first" and ">= last"), so every bin expects at
    least ``min_expected`` draws and the chi-square approximation holds.
    """
    lo, hi = int(k.min()) - 50, int(k.max()) + 50
    support = np.arange(lo, hi + 1)
    keep = np.flatnonzero(pmf(support) * k.size >= min_expected)
    if keep.size < 2:
        return 0.0  # the draws sit where the law has (almost) no mass
    first, last = int(support[keep[0]]), int(support[keep[-1]])
    inner = np.arange(first, last + 1)
    probs = pmf(inner).astype(np.float64)
    probs[0] += float(pmf(np.arange(first - 100_000, first)).sum())
    probs[-1] = max(0.0, 1.0 - float(probs[:-1].sum()))
    observed = np.bincount(np.clip(k, first, last) - first, minlength=inner.size)
    expected = probs * k.size
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


def assert_chi_square(k, pmf_for_scale, scale):
    p = chi_square_p(k, pmf_for_scale(scale))
    assert p >= P_REJECT, f"chi-square rejects the true law: p = {p:.3g}"
    for factor in CONTROLS:
        p_control = chi_square_p(k, pmf_for_scale(scale * factor))
        assert p_control < P_REJECT, f"chi-square cannot tell scale x{factor}: p = {p_control:.3g}"


def assert_moments(x, mean, var, central4):
    """z-tests of the sample mean and of the mean squared deviation from the true mean."""
    x = np.asarray(x, dtype=np.float64)
    z_mean = (x.mean() - mean) / math.sqrt(var / x.size)
    dev2 = (x - mean) ** 2
    z_var = (dev2.mean() - var) / math.sqrt((central4 - var**2) / x.size)
    assert abs(z_mean) <= 6, f"mean z = {z_mean:.2f}"
    assert abs(z_var) <= 6, f"variance z = {z_var:.2f}"


@pytest.fixture
def rs(seed):
    return SeededRandom(1000 + seed)


# --------------------------------------------------------------------------- continuous


def test_laplace(rs):
    b = 2.0
    x = noise.laplace(b, N, random_state=rs)
    assert_ks(x, lambda s: stats.laplace(scale=s).cdf, b)
    assert_moments(x, 0.0, 2 * b**2, 24 * b**4)


def test_gaussian(rs):
    sigma = 3.0
    x = noise.gaussian(sigma, N, random_state=rs)
    assert_ks(x, lambda s: stats.norm(scale=s).cdf, sigma)
    assert_moments(x, 0.0, sigma**2, 3 * sigma**4)


def test_gaussian_cos_and_sin_halves_are_independent(rs):
    """Box–Muller pairs: within one chunk the first half holds the cosines, the second the
    sines of the same angles; their correlation must be 0 (|z| <= 6)."""
    x = noise.gaussian(1.0, N, random_state=rs)
    c, s = x[: N // 2], x[N // 2 :]
    r = np.corrcoef(c, s)[0, 1]
    assert abs(r) * math.sqrt(N // 2) <= 6
    r2 = np.corrcoef(c**2, s**2)[0, 1]  # dependence through the shared radius
    assert abs(r2) * math.sqrt(N // 2) <= 6 * 2  # looser: heavier-tailed products


def test_exponential(rs):
    b = 1.5
    x = noise.exponential(b, N, random_state=rs)
    assert_ks(x, lambda s: stats.expon(scale=s).cdf, b)
    assert_moments(x, b, b**2, 9 * b**4)


def test_gumbel(rs):
    x = noise.gumbel(N, random_state=rs)
    assert_ks(x, lambda s: stats.gumbel_r(scale=s).cdf, 1.0)
    d = stats.gumbel_r()
    var = d.var()
    assert_moments(x, d.mean(), var, (d.stats(moments="k") + 3) * var**2)


def test_uniform(rs):
    u = noise.uniform(N, random_state=rs)
    assert_ks(u, lambda s: stats.uniform(scale=s).cdf, 1.0)


def test_bernoulli(rs):
    p = 0.3
    heads = int(noise.bernoulli(p, N, random_state=rs).sum())
    assert stats.binomtest(heads, N, p).pvalue >= P_REJECT
    for factor in CONTROLS:
        assert stats.binomtest(heads, N, p * factor).pvalue < P_REJECT


def test_exponential_construction_parts(rs):
    """floor(E/ln2) is Geometric(1/2) (including the slow path z >= 10, ~100 draws here) and
    E mod ln2 has density 2·e**-x on [0, ln2). Controls: Geometric(0.35) and (0.65), and
    the remainder law with its rate ×0.7 / ×1.3, must be rejected."""
    e = noise.exponential(1.0, N, random_state=rs)
    z = np.floor(e / math.log(2)).astype(np.int64)
    assert np.sum(z >= 10) > 50

    def geometric(p):
        return lambda k: np.where(k >= 0, p * (1 - p) ** np.maximum(k, 0), 0.0)

    assert chi_square_p(z, geometric(0.5)) >= P_REJECT
    for p in (0.35, 0.65):
        assert chi_square_p(z, geometric(p)) < P_REJECT

    ln2 = math.log(2)
    rem = e - z * ln2

    def remainder_cdf(rate):
        return lambda x: (1 - np.exp(-rate * x)) / (1 - np.exp(-rate * ln2))

    assert_ks(rem, lambda rate: remainder_cdf(rate), 1.0)


def test_gamma_norm_vector_norm(rs):
    dim, b = 4, 1.5
    v = noise.gamma_norm_vector(dim, b, N, random_state=rs)
    norms = np.linalg.norm(v, axis=1)
    assert_ks(norms, lambda s: stats.gamma(dim, scale=s).cdf, b)
    assert_moments(norms, dim * b, dim * b**2, (3 * dim**2 + 6 * dim) * b**4)


@pytest.mark.parametrize("dim", [2, 5])
def test_gamma_norm_vector_direction(rs, dim):
    """The first coordinate of the unit direction: (u + 1)/2 ~ Beta((d−1)/2, (d−1)/2).
    Controls: the law of 0.7·u and 1.3·u."""
    v = noise.gamma_norm_vector(dim, 1.0, N, random_state=rs)
    u = v[:, 0] / np.linalg.norm(v, axis=1)
    a = (dim - 1) / 2

    def cdf(c):
        return lambda x: stats.beta(a, a).cdf((np.asarray(x) / c + 1) / 2)

    assert_ks(u, cdf, 1.0)
    # and every coordinate is centred
    unit = v / np.linalg.norm(v, axis=1)[:, None]
    assert np.all(np.abs(unit.mean(axis=0)) * math.sqrt(N * dim) <= 6)


# --------------------------------------------------------------------------- discrete


def discrete_laplace_pmf(scale):
    q = math.exp(-1 / scale)
    return lambda k: (1 - q) / (1 + q) * q ** np.abs(np.asarray(k, dtype=np.float64))


def discrete_gaussian_pmf(sigma):
    support = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    norm = np.exp(-(support.astype(np.float64) ** 2) / (2 * sigma**2)).sum()
    return lambda k: np.exp(-(np.asarray(k, dtype=np.float64) ** 2) / (2 * sigma**2)) / norm


def pmf_moments(pmf, width):
    k = np.arange(-width, width + 1)
    p = pmf(k)
    var = float(np.sum(p * k**2))
    return var, float(np.sum(p * k.astype(np.float64) ** 4))


@pytest.mark.parametrize("scale", [0.8, 2.5, 40.0])
def test_discrete_laplace(rs, scale):
    k = noise.discrete_laplace(scale, N, random_state=rs)
    assert k.dtype == np.int64
    assert_chi_square(k, discrete_laplace_pmf, scale)
    var, m4 = pmf_moments(discrete_laplace_pmf(scale), int(200 * scale) + 50)
    assert_moments(k, 0.0, var, m4)


@pytest.mark.parametrize("sigma", [0.6, 3.0, 25.0])
def test_discrete_gaussian(rs, sigma):
    k = noise.discrete_gaussian(sigma, N, random_state=rs)
    assert k.dtype == np.int64
    assert_chi_square(k, discrete_gaussian_pmf, sigma)
    var, m4 = pmf_moments(discrete_gaussian_pmf(sigma), int(40 * sigma) + 50)
    assert_moments(k, 0.0, var, m4)


def test_secure_source_fits_too():
    """The default (OS entropy) path, unseeded: its false-positive rate is also 1e-6."""
    x = noise.laplace(1.0, N)
    assert stats.kstest(x, stats.laplace().cdf).pvalue >= P_REJECT
    y = noise.gaussian(1.0, N)
    assert stats.kstest(y, stats.norm().cdf).pvalue >= P_REJECT
