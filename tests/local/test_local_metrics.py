"""Legacy privacy and information metrics: known answers and brute-force checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import rel_entr
from scipy.stats import norm, poisson

from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer, Reconstruction
from ppdp.local.metrics import (
    aa_privacy_loss,
    information_loss,
    map_success_probability,
    mutual_information,
    wu_information_loss,
)


def dn_pmf(x, sigma=1.0):
    return norm.cdf((x + 0.5) / sigma) - norm.cdf((x - 0.5) / sigma)


@pytest.mark.parametrize("prior", [None, [0.8, 0.2]])
def test_map_success_matches_brute_force_k2(prior):
    r = CharacteristicVectorRandomizer(regions=2, noise="discrete-normal", sigma=1.0)
    z = np.arange(-15, 17)
    a, b = np.meshgrid(z, z, indexing="ij")
    pi = [0.5, 0.5] if prior is None else prior
    exact = np.sum(np.maximum(pi[0] * dn_pmf(a - 1) * dn_pmf(b), pi[1] * dn_pmf(a) * dn_pmf(b - 1)))
    assert map_success_probability(r, prior) == pytest.approx(exact, rel=1e-9)


def test_map_success_matches_brute_force_k3_poisson_with_prior():
    r = CharacteristicVectorRandomizer(regions=3, noise="poisson", rate=1.5)
    pi = np.array([0.5, 0.3, 0.2])
    z = np.arange(0, 25)
    g = np.meshgrid(z, z, z, indexing="ij")
    p = [poisson.pmf(gi, 1.5) for gi in g]
    q = [poisson.pmf(gi - 1, 1.5) for gi in g]
    lik = [q[0] * p[1] * p[2], p[0] * q[1] * p[2], p[0] * p[1] * q[2]]
    exact = np.sum(np.max([pi[j] * lik[j] for j in range(3)], axis=0))
    assert map_success_probability(r, pi) == pytest.approx(exact, rel=1e-8)


def test_map_success_limits_and_guarantee_details():
    # heavy noise: no better than guessing the most likely region
    r = CharacteristicVectorRandomizer(regions=4, noise="discrete-normal", sigma=200.0)
    assert map_success_probability(r) == pytest.approx(0.25, abs=0.01)
    g = CharacteristicVectorRandomizer(regions=30, noise="discrete-normal", sigma=1.0, gamma=0.5)
    d = g.guarantee(1e-6).details
    assert 1 / 30 < d["map_success_uniform_prior"] < 1 and d["map_success_no_report"] == 1 / 30
    tiny = AdditiveRandomizer(noise="gaussian", scale=1e-4, domain=(0.0, 1.0))
    assert map_success_probability(tiny, bins=5) == pytest.approx(1.0, abs=1e-3)
    huge = AdditiveRandomizer(noise="laplace", scale=100.0, domain=(0.0, 1.0))
    assert map_success_probability(huge, [0.1, 0.6, 0.3]) == pytest.approx(0.6, abs=0.01)


def test_mutual_information_known_answers():
    # X ~ U[0, 1], Y ~ U[-1/2, 1/2]: Z triangular on [-1/2, 3/2], h(Z) = 1/2 nat, h(Y) = 0.
    r = AdditiveRandomizer(noise="uniform", scale=1.0, domain=(0.0, 1.0))
    assert mutual_information(r, bins=4) == pytest.approx(0.5 / math.log(2), abs=1e-4)
    tiny = AdditiveRandomizer(noise="uniform", scale=1e-3, domain=(0.0, 1.0))
    assert mutual_information(tiny) == pytest.approx(math.log2(1000), abs=1e-2)
    assert aa_privacy_loss(1.0) == pytest.approx(0.5)
    assert aa_privacy_loss(0.0) == 0.0


def test_cv_mutual_information_monte_carlo_matches_enumeration():
    r = CharacteristicVectorRandomizer(regions=2, noise="discrete-normal", sigma=1.0)
    z = np.arange(-15, 17)
    a, b = np.meshgrid(z, z, indexing="ij")
    p0, p1 = dn_pmf(a - 1) * dn_pmf(b), dn_pmf(a) * dn_pmf(b - 1)
    mix = 0.5 * (p0 + p1)
    ok = mix > 0
    p0, p1, mix = p0[ok], p1[ok], mix[ok]
    exact = 0.5 * (rel_entr(p0, mix).sum() + rel_entr(p1, mix).sum()) / math.log(2)
    mc = mutual_information(r, n_samples=200_000, random_state=3)
    assert mc == pytest.approx(exact, abs=0.01)  # MC sd ≈ 0.6/√2e5 ≈ 0.0013


def _est(p, edges=None, cats=None):
    p = np.asarray(p, dtype=float)
    dens = p if edges is None else p / np.diff(edges)
    return Reconstruction(density=dens, edges=edges, categories=cats)


def test_information_losses():
    e = np.array([0.0, 0.5, 1.0])
    est = _est([0.7, 0.3], edges=e)
    assert information_loss(est, [0.5, 0.5]) == pytest.approx(0.2)
    assert information_loss(est, lambda x: np.ones_like(x)) == pytest.approx(0.2)
    assert information_loss(est, _est([0.5, 0.5], edges=e)) == pytest.approx(0.2)
    # f(x) = 2x against the flat estimate: ½∫|2x − 1| = 1/4
    assert information_loss(_est([0.5, 0.5], edges=e), lambda x: 2 * x) == pytest.approx(0.25)
    assert wu_information_loss(est, [0.1, 0.2, 0.6, 0.9]) == pytest.approx(0.2)
    cat = _est([0.5, 0.25, 0.25], cats=("a", "b", "c"))
    assert wu_information_loss(cat, ["a", "a", "b", "c"]) == 0.0
    assert wu_information_loss(cat, ["c", "c", "c", "c"]) == pytest.approx(0.75)


def test_bad_input():
    r = CharacteristicVectorRandomizer(regions=3, sigma=1.0)
    with pytest.raises(ParameterError, match="prior must be 3"):
        map_success_probability(r, [0.5, 0.5])
    with pytest.raises(ParameterError, match="prior"):
        map_success_probability(r, [1.0, -1.0, 1.0])
    with pytest.raises(ParameterTypeError, match="randomizer"):
        map_success_probability("laplace")
    est = _est([0.5, 0.5], edges=np.array([0.0, 0.5, 1.0]))
    with pytest.raises(DataValidationError, match="inside the bins"):
        wu_information_loss(est, [0.2, 1.5])
    with pytest.raises(DataValidationError, match="2 finite"):
        information_loss(est, [0.2, 0.3, 0.5])
    with pytest.raises(DataValidationError, match="categories"):
        wu_information_loss(_est([0.5, 0.5], cats=("a", "b")), ["z"])
    with pytest.raises(ParameterError, match="mutual_information_bits"):
        aa_privacy_loss(-1.0)
