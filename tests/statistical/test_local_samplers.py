"""Goodness of fit of the integer noise samplers of the characteristic-vector scheme.

Pearson χ² against pmfs written independently from the definitions (tails pooled so every
expected count is ≥ 20). Each test of a correct sampler fails with probability 1e-4 (the
p-value threshold), so the module's false-positive rate is below 1e-3 per seed (nine
tests). The broken variants (a wrong rate, the ζ(2) law offered as ζ(3)) must be rejected.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chisquare, norm, poisson

from ppdp.local import CharacteristicVectorRandomizer, _samplers
from ppdp.random import resolve_random_state

pytestmark = pytest.mark.statistical

N = 200_000
ZETA3 = 1.2020569031595942
C_INV_SQ = 6.0 / (2.0 * math.pi**2 - 6.0)


def _pvalue(sample: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """χ² p-value with the outer tails pooled into the end cells (expected ≥ 20)."""
    exp = pmf * sample.size
    keep = np.flatnonzero(exp >= 20)
    lo, hi = support[keep[0]], support[keep[-1]]
    inner = support[(support >= lo) & (support <= hi)]
    obs = np.array([np.sum(sample == v) for v in inner], dtype=float)
    e_in = exp[(support >= lo) & (support <= hi)]
    obs = np.concatenate([[np.sum(sample < lo)], obs, [np.sum(sample > hi)]])
    total_in = e_in.sum()
    e_lo = exp[support < lo].sum()
    e_hi = sample.size - total_in - e_lo
    e = np.concatenate([[e_lo], e_in, [e_hi]])
    mask = e > 0
    obs, e = obs[mask], e[mask]
    e *= obs.sum() / e.sum()
    return float(chisquare(obs, e).pvalue)


SUPPORT = np.arange(-3000, 3001)


def pmf_dn(s):
    return norm.cdf((SUPPORT + 0.5) / s) - norm.cdf((SUPPORT - 0.5) / s)


def pmf_pois(lam):
    return poisson.pmf(SUPPORT, lam)


def pmf_geo(a):
    x = np.maximum(SUPPORT, 0).astype(float)
    return np.where(SUPPORT >= 0, (a - 1) * np.exp(-(x + 1) * math.log(a)), 0.0)


def pmf_z3():
    x = np.maximum(SUPPORT, 1).astype(float)
    return np.where(SUPPORT >= 1, 1 / (ZETA3 * x**3), 0.0)


def pmf_isq():
    return C_INV_SQ / (np.abs(SUPPORT) + 1.0) ** 2


CASES = {
    "discrete-normal(1.3)": (lambda n, s: _samplers.discrete_normal(1.3, n, s), pmf_dn(1.3)),
    "discrete-gaussian(1.3)": (
        lambda n, s: CharacteristicVectorRandomizer(
            regions=2, noise="discrete-gaussian", sigma=1.3
        ).law.sample(n, s),
        np.exp(-(SUPPORT.astype(float) ** 2) / (2 * 1.3**2))
        / np.sum(np.exp(-(SUPPORT.astype(float) ** 2) / (2 * 1.3**2))),
    ),
    "poisson(4.5)": (lambda n, s: _samplers.poisson(4.5, n, s), pmf_pois(4.5)),
    "poisson(200), cdf inversion": (lambda n, s: _samplers.poisson(200.0, n, s), pmf_pois(200.0)),
    "geometric(1.7)": (lambda n, s: _samplers.geometric(1.7, n, s), pmf_geo(1.7)),
    "zeta3": (lambda n, s: _samplers.zeta(3.0, n, s), pmf_z3()),
    "inverse-square": (lambda n, s: _samplers.inverse_square(n, s), pmf_isq()),
    # the integer part of the uniform additive randomizer's noise (K + m, K in −m…m)
    "uniform-integers(7)": (
        lambda n, s: _samplers.uniform_integers(7, n, s),
        np.where((SUPPORT >= 0) & (SUPPORT < 7), 1 / 7, 0.0),
    ),
    "uniform-integers(1001)": (
        lambda n, s: _samplers.uniform_integers(1001, n, s),
        np.where((SUPPORT >= 0) & (SUPPORT < 1001), 1 / 1001, 0.0),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_sampler_fits_its_pmf(name: str, seed: int) -> None:
    draw, pmf = CASES[name]
    sample = draw(N, resolve_random_state(seed))
    assert sample.dtype == np.int64
    assert _pvalue(sample, SUPPORT, pmf) > 1e-4


def test_broken_variants_are_rejected(seed: int) -> None:
    src = resolve_random_state(seed)
    assert _pvalue(_samplers.poisson(4.5 * 1.05, N, src), SUPPORT, pmf_pois(4.5)) < 1e-4
    assert _pvalue(_samplers.zeta(2.0, N, src), SUPPORT, pmf_z3()) < 1e-4
    assert _pvalue(_samplers.geometric(1.8, N, src), SUPPORT, pmf_geo(1.7)) < 1e-4
